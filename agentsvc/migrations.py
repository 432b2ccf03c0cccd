"""Numbered schema migrations applied after `schema.sql`.

`schema.sql` is version 1 and always holds the current schema for new databases; each
change after a release is appended here as SQL (migration N+2 is MIGRATIONS[N]) and also
folded into `schema.sql`. Each runs in one transaction and bumps `PRAGMA user_version`.
"""

MIGRATIONS: list[str] = [
    # 2: how a conversation's end user was vouched for (signed identity). Existing users
    # were recorded before the distinction: NULL, shown as unverified.
    """
    ALTER TABLE conversations ADD COLUMN user_verified_by TEXT
        CHECK (user_verified_by IN ('userToken', 'userHash', 'apiKey'));
    """,
    # 3: outbox bodies are sealed from now on. Bodies kept in clear before carry magic-link
    # and invitation tokens (SQL cannot seal them): they are removed, and secure_delete
    # overwrites the freed bytes instead of leaving them in the file's free space. The
    # links also went to the log; an invitation can be sent again.
    """
    PRAGMA secure_delete = ON;
    ALTER TABLE mail_outbox RENAME COLUMN body TO sealed_body;
    UPDATE mail_outbox SET sealed_body = '';
    """,
]
