"""Numbered schema migrations applied after `schema.sql`.

`schema.sql` is version 1 and always holds the current schema for new databases; each
change after a release is appended here as SQL (migration N+2 is MIGRATIONS[N]) and also
folded into `schema.sql`. Each runs in one transaction and bumps `PRAGMA user_version`.
"""

MIGRATIONS: list[str] = [
    # 2: an agent's language, for the word forms of its builtin answers and retrieval.
    "ALTER TABLE agents ADD COLUMN language TEXT NOT NULL DEFAULT 'english';",
    # 3: form submissions keep the widget session that made them (client results must come
    # from it) and the size of their files (the per-agent file quota), counted for the
    # submissions already stored from their formData descriptors.
    """
    ALTER TABLE form_submissions ADD COLUMN session_id TEXT;
    ALTER TABLE form_submissions ADD COLUMN files_bytes INTEGER NOT NULL DEFAULT 0;
    UPDATE form_submissions SET files_bytes = (
        SELECT COALESCE(SUM(json_extract(d.value, '$.size')), 0)
        FROM json_each(form_submissions.files) AS f
        JOIN json_each(form_submissions.form_data) AS d ON d.key = f.key
    ) WHERE files IS NOT NULL;
    CREATE INDEX form_submissions_agent_files ON form_submissions(agent_id, files_bytes)
        WHERE files_bytes > 0;
    """,
    # 4: how a conversation's end user was vouched for (signed identity). Existing users
    # were recorded before the distinction: NULL, shown as unverified.
    """
    ALTER TABLE conversations ADD COLUMN user_verified_by TEXT
        CHECK (user_verified_by IN ('userToken', 'userHash', 'apiKey'));
    """,
    # 5: outbox bodies are sealed from now on. Bodies kept in clear before carry magic-link
    # and invitation tokens (SQL cannot seal them): they are removed, and secure_delete
    # overwrites the freed bytes instead of leaving them in the file's free space. The
    # links also went to the log; an invitation can be sent again.
    """
    PRAGMA secure_delete = ON;
    ALTER TABLE mail_outbox RENAME COLUMN body TO sealed_body;
    UPDATE mail_outbox SET sealed_body = '';
    """,
]
