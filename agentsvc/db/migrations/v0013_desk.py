"""Version 13 (issue 31, `desk`): the support desk. Members' private notes on a conversation
(and their event in the conversation's log, so a member's live stream carries them),
canned responses per team, when each member last read each conversation, members'
avatars, members' browser and sound notification choices, what the widget tells of the
visitor (the page, where they came from, their language, the attributes given to
`identify`), and the indexes of the inbox list and the visitor panel.

On SQLite the event log's `kind` check gains 'note', which means rebuilding the table (the
documented way: a new table, the rows copied with their ids, the old one dropped, the new
one renamed); the AUTOINCREMENT counter is carried over, so an id once handed out is never
handed out again.
"""

_SHARED = """
    CREATE TABLE conversation_notes (
        id              TEXT PRIMARY KEY,
        conversation_id TEXT NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
        team_id         TEXT NOT NULL,
        author_id       TEXT REFERENCES users(id) ON DELETE SET NULL,
        author_name     TEXT NOT NULL,
        content         TEXT NOT NULL,
        created_at      TEXT NOT NULL
    );
    CREATE INDEX conversation_notes_conversation ON conversation_notes(conversation_id, created_at);
    CREATE TABLE canned_responses (
        id         TEXT PRIMARY KEY,
        team_id    TEXT NOT NULL REFERENCES teams(id) ON DELETE CASCADE,
        shortcut   TEXT NOT NULL,
        title      TEXT NOT NULL,
        content    TEXT NOT NULL,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        UNIQUE (team_id, shortcut)
    );
    CREATE TABLE conversation_reads (
        conversation_id TEXT NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
        user_id         TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
        read_at         TEXT NOT NULL,
        PRIMARY KEY (conversation_id, user_id)
    );
    ALTER TABLE memberships ADD COLUMN notify_browser INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE memberships ADD COLUMN notify_sound INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE conversations ADD COLUMN page_url TEXT;
    ALTER TABLE conversations ADD COLUMN referrer TEXT;
    ALTER TABLE conversations ADD COLUMN visitor_language TEXT;
    ALTER TABLE conversations ADD COLUMN user_attributes TEXT;
    CREATE INDEX conversations_team_waiting ON conversations(team_id, handoff_at, id)
        WHERE status = 'waiting';
    CREATE INDEX conversations_team_human ON conversations(team_id, updated_at, id)
        WHERE status = 'human';
    CREATE INDEX conversations_assignee ON conversations(assignee_id, updated_at, id)
        WHERE assignee_id IS NOT NULL;
    CREATE INDEX conversations_team_user ON conversations(team_id, user_ref, created_at)
        WHERE user_ref IS NOT NULL;
    CREATE INDEX conversations_team_session ON conversations(team_id, session_id, created_at)
        WHERE session_id IS NOT NULL;
    CREATE INDEX form_submissions_conversation ON form_submissions(conversation_id)
        WHERE conversation_id IS NOT NULL;
    CREATE INDEX form_submissions_team_session ON form_submissions(team_id, session_id)
        WHERE session_id IS NOT NULL;
    """

# Constant text only (no value is ever formatted into these scripts).
SQLITE = (
    _SHARED  # noqa: S608
    + """
    CREATE TABLE avatars (
        id           TEXT PRIMARY KEY,
        user_id      TEXT NOT NULL UNIQUE REFERENCES users(id) ON DELETE CASCADE,
        content_type TEXT NOT NULL,
        image        BLOB NOT NULL,
        created_at   TEXT NOT NULL
    );
    CREATE TABLE conversation_events_new (
        id              INTEGER PRIMARY KEY AUTOINCREMENT,
        conversation_id TEXT NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
        team_id         TEXT NOT NULL,
        agent_id        TEXT NOT NULL,
        kind            TEXT NOT NULL CHECK (kind IN ('message', 'status', 'note')),
        message_id      TEXT,
        status          TEXT,
        assignee_id     TEXT,
        assignee_name   TEXT,
        inbox           INTEGER NOT NULL,
        created_at      TEXT NOT NULL,
        note_id         TEXT
    );
    INSERT INTO conversation_events_new (id, conversation_id, team_id, agent_id, kind,
        message_id, status, assignee_id, assignee_name, inbox, created_at)
    SELECT id, conversation_id, team_id, agent_id, kind, message_id, status, assignee_id,
        assignee_name, inbox, created_at FROM conversation_events;
    DELETE FROM sqlite_sequence WHERE name = 'conversation_events_new';
    INSERT INTO sqlite_sequence (name, seq)
        SELECT 'conversation_events_new', seq FROM sqlite_sequence
        WHERE name = 'conversation_events';
    DROP TABLE conversation_events;
    ALTER TABLE conversation_events_new RENAME TO conversation_events;
    CREATE INDEX conversation_events_conversation ON conversation_events(conversation_id, id);
    CREATE INDEX conversation_events_team ON conversation_events(team_id, id) WHERE inbox = 1;
    """
)

POSTGRES = (
    _SHARED  # noqa: S608
    + """
    CREATE TABLE avatars (
        id           TEXT PRIMARY KEY,
        user_id      TEXT NOT NULL UNIQUE REFERENCES users(id) ON DELETE CASCADE,
        content_type TEXT NOT NULL,
        image        BYTEA NOT NULL,
        created_at   TEXT NOT NULL
    );
    ALTER TABLE conversation_events ADD COLUMN note_id TEXT;
    ALTER TABLE conversation_events DROP CONSTRAINT conversation_events_kind_check;
    ALTER TABLE conversation_events ADD CONSTRAINT conversation_events_kind_check
        CHECK (kind IN ('message', 'status', 'note'));
    """
)

# Taken away again, for the tests that build a PostgreSQL database of an earlier version.
UNDO_POSTGRES = """
DELETE FROM conversation_events WHERE kind = 'note';
ALTER TABLE conversation_events DROP CONSTRAINT conversation_events_kind_check;
ALTER TABLE conversation_events ADD CONSTRAINT conversation_events_kind_check
    CHECK (kind IN ('message', 'status'));
ALTER TABLE conversation_events DROP COLUMN note_id;
DROP TABLE avatars;
DROP INDEX form_submissions_team_session;
DROP INDEX form_submissions_conversation;
DROP INDEX conversations_team_session;
DROP INDEX conversations_team_user;
DROP INDEX conversations_assignee;
DROP INDEX conversations_team_human;
DROP INDEX conversations_team_waiting;
ALTER TABLE conversations DROP COLUMN page_url, DROP COLUMN referrer,
    DROP COLUMN visitor_language, DROP COLUMN user_attributes;
ALTER TABLE memberships DROP COLUMN notify_browser, DROP COLUMN notify_sound;
DROP TABLE conversation_reads;
DROP TABLE canned_responses;
DROP TABLE conversation_notes;
"""
