"""Teams and who calls: the service objects (service.py), accounts, sessions, sign-in,
membership, API keys, trust."""
