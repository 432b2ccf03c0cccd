"""Tool calls a person approves before they run (issue 36): the turn pauses, the team
decides in the inbox, and the turn goes on in the visitor's stream or, when nobody waits
for it, in any process."""
