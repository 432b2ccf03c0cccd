"""Version 24: a placeholder on branch `shared-storage` only, so that version 25 loads
(versions must run 1..N). The real version 24 is being written on another branch of issue
36/37; this file goes when that one is merged before version 25. It changes nothing.
"""

SQLITE = ""
POSTGRES = "SELECT 1;"
UNDO_POSTGRES = "SELECT 1;"
