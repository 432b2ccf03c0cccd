"""Tools: definitions and their rules, running a call, request URLs, team secrets."""
