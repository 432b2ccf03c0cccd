"""The support desk: private notes, canned responses, the inbox list and the visitor panel."""
