"""Version 22: a placeholder on branch `guardrails` only, so that version 23 loads
(versions must run 1..N). The real version 22 is being written on another branch of issue
36; this file goes when that one is merged before version 23. It changes nothing.
"""

SQLITE = ""
POSTGRES = "SELECT 1;"
UNDO_POSTGRES = "SELECT 1;"
