"""Exports: an agent's conversations (one row per message) and form submissions, read in
batches and written as CSV or JSON Lines while the download streams."""
