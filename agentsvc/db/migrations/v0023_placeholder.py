"""Version 23: a placeholder on branch `usage-budgets` only, so that version 24 loads
(versions must run 1..N). The real version 23 is being written on another branch of issue
36; this file goes when that one is merged before version 24. It changes nothing.
"""

SQLITE = ""
POSTGRES = "SELECT 1;"
UNDO_POSTGRES = "SELECT 1;"
