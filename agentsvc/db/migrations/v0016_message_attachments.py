"""Version 16 (issue 32, `mailfiles`): the files an e-mail came with, kept on disk under
`<data_dir>/files/mail/<folder>/` and listed here on the user message that brought them
(deleted with it and its conversation; the folders left behind go with the hourly sweep).
"""

_TABLE = """
    CREATE TABLE message_attachments (
        id              TEXT PRIMARY KEY,
        conversation_id TEXT NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
        message_id      TEXT NOT NULL REFERENCES messages(id) ON DELETE CASCADE,
        folder          TEXT NOT NULL,
        file            TEXT NOT NULL,
        name            TEXT NOT NULL,
        content_type    TEXT NOT NULL,
        size            {integer} NOT NULL,
    position        {integer} NOT NULL,
        created_at      TEXT NOT NULL
    );
    CREATE INDEX message_attachments_conversation ON message_attachments(conversation_id);
    CREATE INDEX message_attachments_message ON message_attachments(message_id);
    CREATE INDEX message_attachments_folder ON message_attachments(folder);
"""

# Constant text only (no value is ever formatted into these scripts).
SQLITE = _TABLE.replace("{integer}", "INTEGER")
POSTGRES = _TABLE.replace("{integer}", "BIGINT")

# Taken away again, for the tests that build a PostgreSQL database of an earlier version.
UNDO_POSTGRES = """
DROP TABLE message_attachments;
"""
