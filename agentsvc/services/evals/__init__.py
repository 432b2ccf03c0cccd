"""Evaluation sets and their runs: questions with what a good answer holds, answered by a
version of the agent and scored (issue 33)."""
