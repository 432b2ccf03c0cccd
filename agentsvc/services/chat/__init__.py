"""Chat: starting a turn, running it (model and tools), and stored conversations."""
