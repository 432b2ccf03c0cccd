# ruff: noqa: E501  (schema lines quoted as they stand in schema.sql)
"""The schema of an older database version, rebuilt from `schema.sql` for migration tests.

Each migration lists the edits that undo it in the current `schema.sql` text; a test asks
for the schema as it stood at a version and gets every later migration undone.
"""

from agentsvc.db.schema import schema_sql

_CURRENT = schema_sql()
# Sections appended to schema.sql by a migration, each up to the next one.
_MIGRATION_10_HEAD = "\n-- ── event webhooks, privacy and the audit log (migration 10)"
_MIGRATION_11_HEAD = "\n-- ── search, feedback, curated answers and daily figures (migration 11)"
_MIGRATION_11_END = "    DELETE FROM trigger_daily WHERE agent_id = old.id;\nEND;\n"
MIGRATION_10 = _CURRENT[_CURRENT.index(_MIGRATION_10_HEAD) : _CURRENT.index(_MIGRATION_11_HEAD)]
MIGRATION_11 = _CURRENT[
    _CURRENT.index(_MIGRATION_11_HEAD) : _CURRENT.index(_MIGRATION_11_END) + len(_MIGRATION_11_END)
]
# The counters' tables and triggers.
MIGRATION_6 = _CURRENT[
    _CURRENT.index("\n-- ── totals kept as counters (migration 6)") : _CURRENT.index(
        _MIGRATION_10_HEAD
    )
]
UNDO_11 = [
    (
        "    visitor_seen_at TEXT,\n"
        "    trigger_id  TEXT,                          -- the trigger the chat started from (migration 11)\n"
        "    rated_up    INTEGER NOT NULL DEFAULT 0,    -- its answers rated up and down (migration 11,\n"
        "    rated_down  INTEGER NOT NULL DEFAULT 0     -- kept by the ratings' triggers)\n);",
        "    visitor_seen_at TEXT\n);",
    ),
    (
        "CREATE INDEX conversations_agent_user ON conversations(agent_id, user_ref, created_at, id)\n"
        "    WHERE user_ref IS NOT NULL;                -- the userId filter (migration 11)\n"
        "-- The rating filter (migration 11): only rated conversations are in these, in list order.\n"
        "CREATE INDEX conversations_agent_rated_up ON conversations(agent_id, created_at, id)\n"
        "    WHERE rated_up > 0;\n"
        "CREATE INDEX conversations_agent_rated_down ON conversations(agent_id, created_at, id)\n"
        "    WHERE rated_down > 0;\n"
        "CREATE INDEX conversations_agent_rated ON conversations(agent_id, created_at, id)\n"
        "    WHERE rated_up > 0 OR rated_down > 0;\n",
        "",
    ),
    (
        "    author_name     TEXT,                      -- their name when they wrote it\n"
        "    unanswered      INTEGER                    -- an AI answer: 1 found nothing, 0 answered (migration 11)\n",
        "    author_name     TEXT                       -- their name when they wrote it\n",
    ),
    (
        "    files_bytes      INTEGER NOT NULL DEFAULT 0, -- size of its files (file quota)\n"
        "    trigger_id       TEXT                      -- the trigger that showed the form (migration 11)\n",
        "    files_bytes      INTEGER NOT NULL DEFAULT 0 -- size of its files (file quota)\n",
    ),
    (MIGRATION_11, ""),
]


def _undone(schema: str, edits: list[tuple[str, str]]) -> str:
    for new, old in edits:
        schema = schema.replace(new, old)
    return schema


# The schema before migration 11, whose edits to the conversations table the texts of
# migration 7 below are found without.
_SCHEMA = _undone(_CURRENT, UNDO_11)

# Migration number -> (text in schema.sql, text before that migration).
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
    11: UNDO_11,
    # 12 (issue 29, `people`): data only on SQLite (e-mail addresses out of stored names).
    12: [],
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
