"""Privacy: an end user's data exported or erased, and retention of old conversations."""
