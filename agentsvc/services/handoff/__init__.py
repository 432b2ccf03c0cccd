"""Handoff: a person from the team taking a conversation over from the agent, and back."""
