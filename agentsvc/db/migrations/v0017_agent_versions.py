"""Version 17 (issue 33): an agent's versions. Each change of what the agent does (its
prompt, model, temperature, language, handoff settings) is kept as a numbered snapshot;
`agents.version` is the live one's number, and every AI answer records the version that
made it. Agents that exist when this runs get version 1: themselves as they are. With
`versioning = 'draft'`, changes go to the agent's one draft (JSON) until it is published.
`tools_snapshot` keeps the agent's tools as its versions hold them (NULL until the first
change of a tool of an agent older than versions).
"""

_TABLE = """
    CREATE TABLE agent_versions (
        agent_id       TEXT NOT NULL REFERENCES agents(id) ON DELETE CASCADE,
        number         {integer} NOT NULL,
        snapshot       TEXT NOT NULL,       -- JSON (services.agents.versions)
        note           TEXT NOT NULL DEFAULT '',
        author_user_id TEXT,                -- who made it (NULL: the server, or before versions)
        author_key_id  TEXT,                -- through this API key (NULL: a session)
        created_at     TEXT NOT NULL,
        PRIMARY KEY (agent_id, number)
    );
    ALTER TABLE agents ADD COLUMN version {integer} NOT NULL DEFAULT 1;
    ALTER TABLE agents ADD COLUMN versioning TEXT NOT NULL DEFAULT 'live';
    ALTER TABLE agents ADD COLUMN draft TEXT;
    ALTER TABLE agents ADD COLUMN tools_snapshot TEXT;
    ALTER TABLE messages ADD COLUMN agent_version {integer};
    INSERT INTO agent_versions (agent_id, number, snapshot, note, created_at)
    SELECT id, 1, {snapshot}, 'As it was when versions began', updated_at FROM agents;
"""
_SQLITE_SNAPSHOT = """json_object(
        'systemPrompt', system_prompt, 'model', model, 'temperature', temperature,
        'language', language, 'handoff', json(handoff))"""
_POSTGRES_SNAPSHOT = """json_build_object(
        'systemPrompt', system_prompt, 'model', model, 'temperature', temperature,
        'language', language, 'handoff', handoff::json)::text"""

# Constant text only (no value is ever formatted into these scripts).
SQLITE = _TABLE.replace("{integer}", "INTEGER").replace("{snapshot}", _SQLITE_SNAPSHOT)
POSTGRES = _TABLE.replace("{integer}", "BIGINT").replace("{snapshot}", _POSTGRES_SNAPSHOT)

# Taken away again, for the tests that build a PostgreSQL database of an earlier version.
UNDO_POSTGRES = """
ALTER TABLE messages DROP COLUMN agent_version;
ALTER TABLE agents DROP COLUMN tools_snapshot;
ALTER TABLE agents DROP COLUMN draft;
ALTER TABLE agents DROP COLUMN versioning;
ALTER TABLE agents DROP COLUMN version;
DROP TABLE agent_versions;
"""
