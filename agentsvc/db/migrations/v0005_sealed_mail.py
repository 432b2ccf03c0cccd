"""Version 5: outbox bodies are sealed from now on. Bodies kept in clear before carry magic-link
and invitation tokens (SQL cannot seal them): they are removed, and secure_delete
overwrites the freed bytes instead of leaving them in the file's free space. The
links also went to the log; an invitation can be sent again.
"""

SQLITE = """
    PRAGMA secure_delete = ON;
    ALTER TABLE mail_outbox RENAME COLUMN body TO sealed_body;
    UPDATE mail_outbox SET sealed_body = '';
    """

POSTGRES = None  # older than PostgreSQL's first schema (version 6)
