"""Curated answers: the team's answers to the questions visitors ask, and their matching."""
