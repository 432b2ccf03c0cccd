# ruff: noqa: E501  (the schema as it stood, lines and all)
"""Version 1: the first release's schema, as a new database got it then.

No database is migrated to it: a new SQLite database gets `schema.sql` (the newest
version) and every older one is at least version 1. It is kept as the history starts
from: the tests build a database of any earlier version from it and the migrations
after it (`schema_at`), and prove that migrating it to the newest version gives
`schema.sql`.
"""

SQLITE = """-- agentsvc schema: the current shape of the database, applied to a new database file.
-- Later changes are the numbered versions of agentsvc/db/migrations/ (PRAGMA user_version).
-- Times are ISO 8601 UTC text with milliseconds ("2026-11-21T10:00:00.000Z"), so they sort.
-- Everything a team owns cascades from teams; everything an agent owns cascades from agents.

-- ── foundation: users, teams, memberships, API keys, agents ─────────────────────────────
CREATE TABLE users (
    id            TEXT PRIMARY KEY,
    email         TEXT NOT NULL UNIQUE COLLATE NOCASE,
    name          TEXT NOT NULL DEFAULT '',
    password_hash TEXT,
    created_at    TEXT NOT NULL,
    updated_at    TEXT NOT NULL
);

CREATE TABLE teams (
    id            TEXT PRIMARY KEY,
    name          TEXT NOT NULL,
    owner_user_id TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    plan          TEXT NOT NULL,
    created_at    TEXT NOT NULL,
    updated_at    TEXT NOT NULL
);
CREATE UNIQUE INDEX teams_owner ON teams(owner_user_id);

CREATE TABLE memberships (
    id         TEXT PRIMARY KEY,
    team_id    TEXT NOT NULL REFERENCES teams(id) ON DELETE CASCADE,
    user_id    TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    role       TEXT NOT NULL CHECK (role IN ('owner', 'member')),
    created_at TEXT NOT NULL,
    UNIQUE (team_id, user_id)
);
CREATE INDEX memberships_user ON memberships(user_id);

CREATE TABLE api_keys (
    id           TEXT PRIMARY KEY,
    team_id      TEXT NOT NULL REFERENCES teams(id) ON DELETE CASCADE,
    user_id      TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    name         TEXT NOT NULL DEFAULT '',
    key_hash     TEXT NOT NULL UNIQUE,      -- SHA-256 hex of the key; the key itself is never stored
    prefix       TEXT NOT NULL,             -- first characters, to recognise a key in a list
    last4        TEXT NOT NULL,
    created_at   TEXT NOT NULL,
    last_used_at TEXT,
    revoked_at   TEXT
);
CREATE INDEX api_keys_team ON api_keys(team_id);

CREATE TABLE agents (
    id              TEXT PRIMARY KEY,
    team_id         TEXT NOT NULL REFERENCES teams(id) ON DELETE CASCADE,
    name            TEXT NOT NULL,
    slug            TEXT NOT NULL,
    model           TEXT NOT NULL,
    temperature     REAL NOT NULL,
    system_prompt   TEXT NOT NULL DEFAULT '',
    identity_secret TEXT,                   -- widget identity signing (encrypted), optional
    created_at      TEXT NOT NULL,
    updated_at      TEXT NOT NULL,
    UNIQUE (team_id, slug)
);
CREATE INDEX agents_team_created ON agents(team_id, created_at);

-- ── tools ───────────────────────────────────────────────────────────────────────────────
-- JSON columns hold JSON text; NULL means "not set".
CREATE TABLE tools (
    id                  TEXT PRIMARY KEY,
    agent_id            TEXT NOT NULL REFERENCES agents(id) ON DELETE CASCADE,
    team_id             TEXT NOT NULL REFERENCES teams(id) ON DELETE CASCADE,
    name                TEXT NOT NULL,
    description         TEXT NOT NULL,
    execution_type      TEXT NOT NULL CHECK (execution_type IN ('mock', 'http', 'form')),
    input_schema        TEXT NOT NULL,
    is_enabled          INTEGER NOT NULL DEFAULT 1,
    display_config      TEXT,
    mock_response       TEXT,
    http_url            TEXT,
    http_method         TEXT,
    http_headers        TEXT,
    form_schema         TEXT,
    form_execution_mode TEXT,
    form_webhook_url    TEXT,
    form_client_handler TEXT,
    form_post_actions   TEXT,
    form_webhook_secret TEXT,               -- encrypted with the secret box
    created_at          TEXT NOT NULL,
    updated_at          TEXT NOT NULL,
    UNIQUE (agent_id, name)
);
CREATE INDEX tools_team ON tools(team_id);

-- ── team and sessions ───────────────────────────────────────────────────────────────────
-- Secrets (session tokens, magic-link and invitation tokens, OAuth states) are stored only
-- as SHA-256 hex digests; the clear value exists only in the cookie or the e-mailed link.
CREATE TABLE sessions (
    id           TEXT PRIMARY KEY,
    token_hash   TEXT NOT NULL UNIQUE,
    user_id      TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    team_id      TEXT NOT NULL REFERENCES teams(id) ON DELETE CASCADE,  -- the team it acts in
    created_at   TEXT NOT NULL,
    expires_at   TEXT NOT NULL                -- rolling: pushed forward as the session is used
);
CREATE INDEX sessions_user_team ON sessions(user_id, team_id);
CREATE INDEX sessions_expires ON sessions(expires_at);

CREATE TABLE magic_links (
    token_hash   TEXT PRIMARY KEY,
    user_id      TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    callback_url TEXT NOT NULL,
    created_at   TEXT NOT NULL,
    expires_at   TEXT NOT NULL,
    used_at      TEXT                          -- set once, atomically, when the link is opened
);

CREATE TABLE oauth_states (
    state_hash    TEXT PRIMARY KEY,
    provider      TEXT NOT NULL,
    code_verifier TEXT NOT NULL,               -- PKCE verifier, sent to the token endpoint
    callback_url  TEXT NOT NULL,
    created_at    TEXT NOT NULL,
    expires_at    TEXT NOT NULL
);

CREATE TABLE invitations (
    id                 TEXT PRIMARY KEY,
    team_id            TEXT NOT NULL REFERENCES teams(id) ON DELETE CASCADE,
    email              TEXT NOT NULL COLLATE NOCASE,
    role               TEXT NOT NULL CHECK (role IN ('owner', 'member')),
    status             TEXT NOT NULL CHECK (status IN ('pending', 'accepted', 'expired', 'cancelled')),
    token_hash         TEXT NOT NULL UNIQUE,
    invited_by_user_id TEXT REFERENCES users(id) ON DELETE SET NULL,
    created_at         TEXT NOT NULL,
    updated_at         TEXT NOT NULL,
    expires_at         TEXT NOT NULL
);
CREATE INDEX invitations_team ON invitations(team_id, created_at);
CREATE INDEX invitations_pending ON invitations(status, expires_at);

-- Mail that could not go through SMTP (none configured, or the server failed): kept so the
-- links it carries still reach a self-hoster. The body may hold a live magic-link or
-- invitation token, so it is sealed (AES-GCM, context mail:<id>); '' when it was removed.
CREATE TABLE mail_outbox (
    id          TEXT PRIMARY KEY,
    to_address  TEXT NOT NULL,
    subject     TEXT NOT NULL,
    body TEXT NOT NULL,
    reason      TEXT NOT NULL,                -- "no SMTP configured" or the SMTP error
    created_at  TEXT NOT NULL
);

-- ── secrets ─────────────────────────────────────────────────────────────────────────────
-- Team secrets filled into HTTP tools' `{{NAME}}` placeholders; values sealed (AES-GCM).
CREATE TABLE team_secrets (
    team_id      TEXT NOT NULL REFERENCES teams(id) ON DELETE CASCADE,
    name         TEXT NOT NULL,
    sealed_value TEXT NOT NULL,
    created_at   TEXT NOT NULL,
    updated_at   TEXT NOT NULL,
    PRIMARY KEY (team_id, name)
);

-- ── chat: conversations and messages ────────────────────────────────────────────────────
-- session_id binds a public (widget) conversation to the anonymous session that started
-- it; user_* hold the identified end user the widget declared, if any.
CREATE TABLE conversations (
    id          TEXT PRIMARY KEY,
    agent_id    TEXT NOT NULL REFERENCES agents(id) ON DELETE CASCADE,
    team_id     TEXT NOT NULL REFERENCES teams(id) ON DELETE CASCADE,
    title       TEXT NOT NULL,
    session_id  TEXT,
    user_ref    TEXT,                          -- the end user's id in the embedding site
    user_email  TEXT,
    user_name   TEXT,
    created_at  TEXT NOT NULL,
    updated_at  TEXT NOT NULL
);
CREATE INDEX conversations_agent_created ON conversations(agent_id, created_at);
CREATE INDEX conversations_team ON conversations(team_id);

-- An assistant message's content is its text; its tool calls (with their results), token
-- usage and knowledge sources are JSON columns. status: complete, interrupted (client gone,
-- server stopping) or failed (provider error), with whatever was produced.
CREATE TABLE messages (
    id              TEXT PRIMARY KEY,
    conversation_id TEXT NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
    role            TEXT NOT NULL CHECK (role IN ('user', 'assistant')),
    content         TEXT NOT NULL,
    tool_calls      TEXT,                      -- [{toolUseId, toolName, input, output, isError}]
    usage           TEXT,                      -- {inputTokens, outputTokens}
    sources         TEXT,                      -- knowledge passages used (filled by knowledge)
    status          TEXT NOT NULL DEFAULT 'complete',
    model           TEXT,
    rating          TEXT CHECK (rating IN ('up', 'down')),
    rated_at        TEXT,
    created_at      TEXT NOT NULL
);
CREATE INDEX messages_conversation ON messages(conversation_id, created_at);


-- ── triggers ────────────────────────────────────────────────────────────────────────────
-- conditions / action_config hold JSON text. fired_count / converted_count are the stats:
-- each batch of widget events adds to them in one transaction, so they stay exact. Events
-- are counted, not kept one by one (nothing reads them, and busy sites send floods).
CREATE TABLE triggers (
    id              TEXT PRIMARY KEY,
    agent_id        TEXT NOT NULL REFERENCES agents(id) ON DELETE CASCADE,
    team_id         TEXT NOT NULL REFERENCES teams(id) ON DELETE CASCADE,
    name            TEXT NOT NULL,
    description     TEXT,
    trigger_type    TEXT NOT NULL CHECK (trigger_type IN
                        ('time_on_page', 'scroll_depth', 'exit_intent', 'page_view', 'custom_event')),
    conditions      TEXT NOT NULL,
    action_type     TEXT NOT NULL CHECK (action_type IN ('open_chat', 'show_form', 'show_bubble')),
    action_config   TEXT NOT NULL,
    trigger_once    INTEGER NOT NULL DEFAULT 1,
    is_enabled      INTEGER NOT NULL DEFAULT 1,
    priority        INTEGER NOT NULL DEFAULT 0,
    fired_count     INTEGER NOT NULL DEFAULT 0,
    converted_count INTEGER NOT NULL DEFAULT 0,
    created_at      TEXT NOT NULL,
    updated_at      TEXT NOT NULL
);
CREATE INDEX triggers_agent ON triggers(agent_id, priority, created_at);
CREATE INDEX triggers_team ON triggers(team_id);

-- ── form submissions and their delivery ─────────────────────────────────────────────────
-- A submission outlives its tool (tool_id is kept as text, tool_name copied); it goes with
-- its agent. form_data is JSON: files are described there ({fileName, contentType, size})
-- and kept under data_dir, their relative paths in `files` ({field: path}).
-- status is derived from the primary delivery and the client result (services/forms.py).
CREATE TABLE form_submissions (
    id               TEXT PRIMARY KEY,
    team_id          TEXT NOT NULL REFERENCES teams(id) ON DELETE CASCADE,
    agent_id         TEXT NOT NULL REFERENCES agents(id) ON DELETE CASCADE,
    tool_id          TEXT NOT NULL,
    tool_name        TEXT NOT NULL,
    conversation_id  TEXT,                     -- as given; may name no conversation
    form_data        TEXT NOT NULL,
    files            TEXT,
    fields_completed TEXT NOT NULL,            -- JSON list of field names
    execution_mode   TEXT NOT NULL CHECK (execution_mode IN ('webhook', 'client', 'both')),
    client_handler   TEXT,
    status           TEXT NOT NULL CHECK (status IN ('pending', 'submitted', 'webhook_success',
                         'webhook_failed', 'client_success', 'client_failed', 'success', 'failed')),
    webhook_attempts INTEGER NOT NULL DEFAULT 0,
    last_error       TEXT,
    client_result    TEXT,                     -- JSON {success, message, data, reportedAt}
    impression_at    TEXT,
    started_at       TEXT,
    created_at       TEXT NOT NULL,
    updated_at       TEXT NOT NULL
);
CREATE INDEX form_submissions_team_created ON form_submissions(team_id, created_at);
CREATE INDEX form_submissions_tool ON form_submissions(tool_id, status);

-- The outbox: one row per target (position 0 the primary webhook, 1.. the post actions),
-- written in the submission's transaction. A row is due when status = 'pending',
-- next_attempt_at has passed and no live lease holds it; an attempt takes a lease first, so
-- an attempt cut off by a crash is retried once the lease runs out (or at the next start).
-- spec: the target as of the submission (url/headers/payload template, or recipients).
-- sealed_secret: the tool's signing secret (sealed with context tool-webhook:<tool_id>).
CREATE TABLE form_deliveries (
    id              TEXT PRIMARY KEY,
    submission_id   TEXT NOT NULL REFERENCES form_submissions(id) ON DELETE CASCADE,
    position        INTEGER NOT NULL,
    kind            TEXT NOT NULL CHECK (kind IN ('webhook', 'post_webhook', 'team_chat', 'email')),
    webhook_id      TEXT NOT NULL,             -- the stable `webhook-id` header value
    spec            TEXT NOT NULL,
    sealed_secret   TEXT,
    status          TEXT NOT NULL CHECK (status IN ('pending', 'success', 'failed')),
    attempts        INTEGER NOT NULL DEFAULT 0,
    cycle_start     INTEGER NOT NULL DEFAULT 0, -- attempts made before the current schedule
    next_attempt_at TEXT,
    lease_until     TEXT,
    last_error      TEXT,
    created_at      TEXT NOT NULL,
    updated_at      TEXT NOT NULL,
    completed_at    TEXT,
    UNIQUE (submission_id, position)
);
CREATE INDEX form_deliveries_due ON form_deliveries(status, next_attempt_at);

-- Every attempt, in order: when, HTTP status (NULL when none came back), latency, error, and
-- the start of the response body (capped).
CREATE TABLE form_delivery_attempts (
    id            INTEGER PRIMARY KEY,
    delivery_id   TEXT NOT NULL REFERENCES form_deliveries(id) ON DELETE CASCADE,
    attempt       INTEGER NOT NULL,
    started_at    TEXT NOT NULL,
    status_code   INTEGER,
    latency_ms    INTEGER NOT NULL,
    success       INTEGER NOT NULL,
    error         TEXT,
    response_body TEXT
);
CREATE INDEX form_delivery_attempts_delivery ON form_delivery_attempts(delivery_id, attempt);

-- Form impressions and starts reported by the widget (analytics).
CREATE TABLE form_events (
    id         INTEGER PRIMARY KEY,
    tool_id    TEXT NOT NULL,
    agent_id   TEXT NOT NULL REFERENCES agents(id) ON DELETE CASCADE,
    event_type TEXT NOT NULL CHECK (event_type IN ('impression', 'started')),
    session_id TEXT,
    created_at TEXT NOT NULL
);
CREATE INDEX form_events_tool ON form_events(tool_id, event_type);

-- ── knowledge documents ─────────────────────────────────────────────────────────────────
-- A document keeps its extracted text (`content`); `passages` are its chunks, indexed in the
-- contentless FTS5 table `passages_fts` (BM25) by the triggers below, so every way a passage
-- goes (document deleted, agent deleted by cascade) also leaves the index. The `scope`
-- column holds hex(agent_id) as one token: retrieval matches it first, so a query ranks only
-- that agent's passages. status: indexing (passages being written), ready, failed (`error`).
CREATE TABLE documents (
    id             TEXT PRIMARY KEY,
    agent_id       TEXT NOT NULL REFERENCES agents(id) ON DELETE CASCADE,
    team_id        TEXT NOT NULL REFERENCES teams(id) ON DELETE CASCADE,
    title          TEXT NOT NULL,
    source_type    TEXT NOT NULL CHECK (source_type IN ('text', 'file', 'url')),
    format         TEXT NOT NULL CHECK (format IN ('text', 'markdown', 'html', 'pdf')),
    filename       TEXT,
    source_url     TEXT,
    size_bytes     INTEGER NOT NULL,          -- of the text, file or fetched body as received
    status         TEXT NOT NULL CHECK (status IN ('indexing', 'ready', 'failed')),
    error          TEXT,
    passage_count  INTEGER NOT NULL DEFAULT 0,
    created_at     TEXT NOT NULL,
    updated_at     TEXT NOT NULL,
    -- Last, so reading the other columns never walks this (possibly large) text's pages.
    content        TEXT NOT NULL              -- the extracted text that was indexed
);
CREATE INDEX documents_agent ON documents(agent_id, created_at);
CREATE INDEX documents_team ON documents(team_id);
CREATE INDEX documents_status ON documents(status) WHERE status = 'indexing';

CREATE TABLE passages (
    id          INTEGER PRIMARY KEY,
    document_id TEXT NOT NULL REFERENCES documents(id) ON DELETE CASCADE,
    agent_id    TEXT NOT NULL,
    position    INTEGER NOT NULL,
    heading     TEXT NOT NULL DEFAULT '',    -- the section's heading path ("Billing › Refunds")
    text        TEXT NOT NULL
);
CREATE INDEX passages_document ON passages(document_id, position);

CREATE VIRTUAL TABLE passages_fts USING fts5(
    scope, heading, text,
    content = '',
    tokenize = 'porter unicode61 remove_diacritics 2'
);

CREATE TRIGGER passages_fts_insert AFTER INSERT ON passages BEGIN
    INSERT INTO passages_fts (rowid, scope, heading, text)
    VALUES (new.id, hex(new.agent_id), new.heading, new.text);
END;

CREATE TRIGGER passages_fts_delete AFTER DELETE ON passages BEGIN
    INSERT INTO passages_fts (passages_fts, rowid, scope, heading, text)
    VALUES ('delete', old.id, hex(old.agent_id), old.heading, old.text);
END;

-- Embeddings of passages when `[knowledge] embedding_model` is set: `vector` is `dims`
-- float32 numbers, little-endian (sqlite-vec's BLOB format), normalised to unit length.
-- They go with their passage (and so with its document and agent). Retrieval uses only the
-- vectors of the model configured now (another model's numbers are not comparable).
CREATE TABLE passage_embeddings (
    passage_id INTEGER PRIMARY KEY REFERENCES passages(id) ON DELETE CASCADE,
    agent_id   TEXT NOT NULL,
    model      TEXT NOT NULL,                -- the embedding_model that made it (PROVIDER/MODEL)
    dims       INTEGER NOT NULL,
    vector     BLOB NOT NULL
);
CREATE INDEX passage_embeddings_agent ON passage_embeddings(agent_id);
"""

POSTGRES = None  # older than PostgreSQL's first schema (version 6)
