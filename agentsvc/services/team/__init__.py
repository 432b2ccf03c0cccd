"""Teams and who calls: accounts, sessions, sign-in, membership, API keys, trust."""
