# ruff: noqa: E501  (schema lines quoted as they stand in schema.sql)
"""The schema of an older database version, rebuilt from `schema.sql` for migration tests.

Each migration lists the edits that undo it in the current `schema.sql` text; a test asks
for the schema as it stood at a version and gets every later migration undone.
"""

from agentsvc.db.schema import schema_sql

# Sections appended to schema.sql by a migration, each up to the next one.
_MIGRATION_10_HEAD = "\n-- ── event webhooks, privacy and the audit log (migration 10)"
MIGRATION_10 = schema_sql()[schema_sql().index(_MIGRATION_10_HEAD) :]
# The counters' tables and triggers.
MIGRATION_6 = schema_sql()[
    schema_sql().index("\n-- ── totals kept as counters (migration 6)") : schema_sql().index(
        _MIGRATION_10_HEAD
    )
]

# Migration number -> (text in schema.sql, text before that migration).
_SCHEMA = schema_sql()
SCHEMA_7_CONVERSATIONS = _SCHEMA[
    _SCHEMA.index(
        "    user_verified_by TEXT CHECK (user_verified_by IN ('userToken', 'userHash', 'apiKey')),\n"
    ) : _SCHEMA.index("    visitor_seen_at TEXT\n);") + len("    visitor_seen_at TEXT\n);")
]
SCHEMA_7_EVENTS = _SCHEMA[
    _SCHEMA.index("\n-- What happened in a conversation, in order") + 1 : _SCHEMA.index(
        "WHERE inbox = 1;\n"
    )
    + len("WHERE inbox = 1;\n")
]

UNDO: dict[int, list[tuple[str, str]]] = {
    2: [
        (
            "    language        TEXT NOT NULL DEFAULT 'english', "
            "-- Snowball language of its word forms (migration 2)\n",
            "",
        )
    ],
    3: [
        (
            "    updated_at       TEXT NOT NULL,\n"
            "    session_id       TEXT,                     -- the widget session that submitted it\n"
            "    files_bytes      INTEGER NOT NULL DEFAULT 0 -- size of its files (file quota)\n",
            "    updated_at       TEXT NOT NULL\n",
        ),
        (
            "-- The file quota sums an agent's files (only rows with files).\n"
            "CREATE INDEX form_submissions_agent_files ON form_submissions(agent_id, files_bytes)\n"
            "    WHERE files_bytes > 0;\n",
            "",
        ),
    ],
    4: [
        (
            "    updated_at  TEXT NOT NULL,\n"
            "    -- how the user was vouched for: 'userToken' (a signed JWT: every field), 'userHash'\n"
            "    -- (the id only; e-mail and name as declared), 'apiKey' (the team's own call), or NULL\n"
            "    -- (declared, unchecked). Last, where migration 4 added it.\n"
            "    user_verified_by TEXT CHECK (user_verified_by IN ('userToken', 'userHash', 'apiKey'))\n",
            "    updated_at  TEXT NOT NULL\n",
        )
    ],
    5: [("    sealed_body TEXT NOT NULL,\n", "    body TEXT NOT NULL,\n")],
    6: [
        (MIGRATION_6, ""),
        (
            "CREATE INDEX conversations_agent_created ON conversations(agent_id, created_at, id);",
            "CREATE INDEX conversations_agent_created ON conversations(agent_id, created_at);",
        ),
        (
            "CREATE INDEX form_submissions_team_created ON form_submissions(team_id, created_at, id);",
            "CREATE INDEX form_submissions_team_created ON form_submissions(team_id, created_at);",
        ),
    ],
    7: [
        (
            "    handoff         TEXT,                   -- handoff settings, JSON (migration 7)\n",
            "",
        ),
        (
            "    notify_handoffs INTEGER NOT NULL DEFAULT 0, -- e-mail me when a visitor asks for"
            " a person (migration 7)\n",
            "",
        ),
        (
            SCHEMA_7_CONVERSATIONS,
            "    user_verified_by TEXT CHECK (user_verified_by IN ('userToken', 'userHash', 'apiKey'))\n);",
        ),
        (
            "CREATE INDEX conversations_agent_status ON conversations(agent_id, status, created_at, id)\n"
            "    WHERE status <> 'bot';\n",
            "",
        ),
        (
            "    created_at      TEXT NOT NULL,\n"
            "    author_id       TEXT,                      -- a member's reply: the member (migration 7)\n"
            "    author_name     TEXT                       -- their name when they wrote it\n",
            "    created_at      TEXT NOT NULL\n",
        ),
        (SCHEMA_7_EVENTS, ""),
    ],
    8: [
        (
            "CHECK (execution_type IN ('mock', 'http', 'form', 'mcp')),\n",
            "CHECK (execution_type IN ('mock', 'http', 'form')),\n",
        ),
        (
            "    mcp_url             TEXT,               -- MCP tools (migration 8): the server's endpoint\n"
            "    mcp_headers         TEXT,               -- JSON object; values may hold {{SECRET}}\n"
            "    mcp_tools           TEXT,               -- JSON array of the server's names to expose; NULL: all\n"
            "    mcp_server_tools    TEXT,               -- JSON array of the functions exposed, as last listed\n"
            "    mcp_listed_at       TEXT,               -- when the server's tools were last listed\n"
            "    counts_as           INTEGER NOT NULL DEFAULT 1, -- tools it is against the plan's limit\n",
            "",
        ),
    ],
    9: [
        (
            "    widget          TEXT,                   -- the widget's look, JSON (migration 9)\n",
            "",
        )
    ],
    10: [
        (
            "    retention_days  INTEGER,                -- conversations/submissions kept N days;"
            " NULL: forever (migration 10)\n",
            "",
        ),
        (MIGRATION_10, ""),
    ],
}


def schema_at(version: int) -> str:
    """`schema.sql` with every migration after `version` undone, ending in its user_version."""
    schema = schema_sql()
    for number in sorted(UNDO, reverse=True):
        if number <= version:
            break
        for new, old in UNDO[number]:
            assert new in schema, f"migration {number}: schema.sql no longer holds {new!r}"
            schema = schema.replace(new, old)
    return schema + f"PRAGMA user_version = {version};"
