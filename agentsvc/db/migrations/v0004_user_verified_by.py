"""Version 4: how a conversation's end user was vouched for (signed identity). Existing users
were recorded before the distinction: NULL, shown as unverified.
"""

SQLITE = """
    ALTER TABLE conversations ADD COLUMN user_verified_by TEXT
        CHECK (user_verified_by IN ('userToken', 'userHash', 'apiKey'));
    """

POSTGRES = None  # older than PostgreSQL's first schema (version 6)
