"""Version 20: a placeholder on branch `pg-speed` only, so that version 21 loads (versions
must run 1..N). The real version 20 (`v0020_sources.py`) is being written on branch
`sources`; this file goes when that one is merged before version 21. It changes nothing.
"""

SQLITE = ""
POSTGRES = "SELECT 1;"
UNDO_POSTGRES = "SELECT 1;"
