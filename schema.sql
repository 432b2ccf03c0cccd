-- agentsvc schema: the current shape of the database, applied to a new database file.
-- Later changes are numbered migrations in agentsvc/db/migrations/ (PRAGMA user_version).
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
    notify_handoffs INTEGER NOT NULL DEFAULT 0, -- e-mail me when a visitor asks for a person (migration 7)
    notify_browser  INTEGER NOT NULL DEFAULT 0,  -- desk notifications (migration 13)
    notify_sound    INTEGER NOT NULL DEFAULT 0,
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
    language        TEXT NOT NULL DEFAULT 'english', -- Snowball language of its word forms (migration 2)
    handoff         TEXT,                   -- handoff settings, JSON (migration 7)
    widget          TEXT,                   -- the widget's look, JSON (migration 9)
    retention_days  INTEGER,                -- conversations/submissions kept N days; NULL: forever (migration 10)
    version         INTEGER NOT NULL DEFAULT 1, -- the live version's number (migration 17)
    versioning      TEXT NOT NULL DEFAULT 'live', -- 'draft': changes wait in the draft (migration 17)
    draft           TEXT,                   -- the draft: {basedOn, updatedAt, snapshot, ...} JSON
    tools_snapshot  TEXT,                   -- its tools as versions keep them, JSON (migration 17)
    experiment      TEXT,                   -- the running experiment: {id, variants} JSON (migration 18)
    publish_gate    TEXT,                   -- {evalsetId, minPassRate, maxDrop} JSON (migration 19)
    guardrails      TEXT,                   -- redaction, blocked topics, must-not-say... JSON (migration 23)
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
    execution_type      TEXT NOT NULL CHECK (execution_type IN ('mock', 'http', 'form', 'mcp')),
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
    mcp_url             TEXT,               -- MCP tools (migration 8): the server's endpoint
    mcp_headers         TEXT,               -- JSON object; values may hold {{SECRET}}
    mcp_tools           TEXT,               -- JSON array of the server's names to expose; NULL: all
    mcp_server_tools    TEXT,               -- JSON array of the functions exposed, as last listed
    mcp_listed_at       TEXT,               -- when the server's tools were last listed
    counts_as           INTEGER NOT NULL DEFAULT 1, -- tools it is against the plan's limit
    created_at          TEXT NOT NULL,
    updated_at          TEXT NOT NULL,
    requires_approval   INTEGER NOT NULL DEFAULT 0, -- a person approves each call first (migration 22)
    approval_timeout_seconds INTEGER,     -- how long a call waits for that approval
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
    sealed_body TEXT NOT NULL,
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
    updated_at  TEXT NOT NULL,
    -- how the user was vouched for: 'userToken' (a signed JWT: every field), 'userHash'
    -- (the id only; e-mail and name as declared), 'apiKey' (the team's own call), or NULL
    -- (declared, unchecked). Last, where migration 4 added it.
    user_verified_by TEXT CHECK (user_verified_by IN ('userToken', 'userHash', 'apiKey')),
    -- handoff (migration 7): who answers (bot, waiting for a person, human, closed), the
    -- member who took it, when a person was first asked for, how long the first human reply
    -- took, the e-mail a visitor left outside business hours, and when the visitor's event
    -- stream was last open (a reply to a visitor who is gone is e-mailed).
    status      TEXT NOT NULL DEFAULT 'bot' CHECK (status IN ('bot', 'waiting', 'human', 'closed')),
    assignee_id TEXT REFERENCES users(id) ON DELETE SET NULL,
    handoff_at  TEXT,
    first_reply_seconds REAL,
    contact_email TEXT,
    visitor_seen_at TEXT,
    trigger_id  TEXT,                          -- the trigger the chat started from (migration 11)
    rated_up    INTEGER NOT NULL DEFAULT 0,    -- its answers rated up and down (migration 11,
    rated_down  INTEGER NOT NULL DEFAULT 0,  -- kept by the ratings' triggers)
    -- what the widget tells of the visitor (migration 13): the page of the first request, where
    -- they came from, the browser's language, and the latest `identify` attributes (JSON)
    page_url    TEXT,
    referrer    TEXT,
    visitor_language TEXT,
    user_attributes TEXT,
    -- the channel the conversation came through (migration 15): 'web' for the widget and
    -- everything before, else the channel's type; its channel (emptied when deleted)
    channel     TEXT NOT NULL DEFAULT 'web',
    channel_id  TEXT REFERENCES channels(id) ON DELETE SET NULL,
    -- the experiment it took part in, and the agent's version it was given (migration 18)
    experiment_id TEXT,
    variant     INTEGER,
    -- when a guardrail replaced one of its answers; NULL once reviewed (migration 23)
    flagged_at  TEXT,
    -- its answers' tokens and cost in billionths of the currency (migration 24)
    input_tokens  INTEGER NOT NULL DEFAULT 0,
    output_tokens INTEGER NOT NULL DEFAULT 0,
    cost_nanos    INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX conversations_agent_created ON conversations(agent_id, created_at, id);
CREATE INDEX conversations_team ON conversations(team_id);
CREATE INDEX conversations_agent_status ON conversations(agent_id, status, created_at, id)
    WHERE status <> 'bot';
-- The inbox (migration 13): waiting ones by their wait, with a member by activity, a member's own.
CREATE INDEX conversations_team_waiting ON conversations(team_id, handoff_at, id)
    WHERE status = 'waiting';
CREATE INDEX conversations_team_human ON conversations(team_id, updated_at, id)
    WHERE status = 'human';
CREATE INDEX conversations_assignee ON conversations(assignee_id, updated_at, id)
    WHERE assignee_id IS NOT NULL;
-- The visitor panel (migration 13): the same verified user, or the same widget session.
CREATE INDEX conversations_team_user ON conversations(team_id, user_ref, created_at)
    WHERE user_ref IS NOT NULL;
CREATE INDEX conversations_team_session ON conversations(team_id, session_id, created_at)
    WHERE session_id IS NOT NULL;
CREATE INDEX conversations_agent_user ON conversations(agent_id, user_ref, created_at, id)
    WHERE user_ref IS NOT NULL;                -- the userId filter (migration 11)
-- The rating filter (migration 11): only rated conversations are in these, in list order.
CREATE INDEX conversations_agent_rated_up ON conversations(agent_id, created_at, id)
    WHERE rated_up > 0;
CREATE INDEX conversations_agent_rated_down ON conversations(agent_id, created_at, id)
    WHERE rated_down > 0;
CREATE INDEX conversations_agent_rated ON conversations(agent_id, created_at, id)
    WHERE rated_up > 0 OR rated_down > 0;

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
    created_at      TEXT NOT NULL,
    author_id       TEXT,                      -- a member's reply: the member (migration 7)
    author_name     TEXT,                      -- their name when they wrote it
    unanswered      INTEGER,                   -- an AI answer: 1 found nothing, 0 answered (migration 11)
    agent_version   INTEGER                    -- an AI answer: the agent's version that made it (migration 17)
);
CREATE INDEX messages_conversation ON messages(conversation_id, created_at);

-- What happened in a conversation, in order: the live event streams (visitor, inbox) read
-- from here, so a reconnect resumes after its Last-Event-ID without loss (migration 7).
-- inbox = 1 for what the team's inbox follows: status changes and visitors' messages.
CREATE TABLE conversation_events (
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
    note_id         TEXT                     -- a member's private note (migration 13)
);
CREATE INDEX conversation_events_conversation ON conversation_events(conversation_id, id);
CREATE INDEX conversation_events_team ON conversation_events(team_id, id) WHERE inbox = 1;

-- The support desk (migration 13). Members' private notes: never shown to the visitor, never
-- in the model's context, never in what is sent to the visitor (their event is kind 'note').
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
-- Replies a team keeps at hand, inserted in the inbox by their shortcut.
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
-- When each member last read each conversation (the inbox's unread counts).
CREATE TABLE conversation_reads (
    conversation_id TEXT NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
    user_id         TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    read_at         TEXT NOT NULL,
    PRIMARY KEY (conversation_id, user_id)
);
-- A member's picture (one per user; a new upload gets a new, unguessable id).
CREATE TABLE avatars (
    id           TEXT PRIMARY KEY,
    user_id      TEXT NOT NULL UNIQUE REFERENCES users(id) ON DELETE CASCADE,
    content_type TEXT NOT NULL,
    image        BLOB,  -- a picture uploaded before version 25; later ones: file storage
    created_at   TEXT NOT NULL
);

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
    updated_at       TEXT NOT NULL,
    session_id       TEXT,                     -- the widget session that submitted it
    files_bytes      INTEGER NOT NULL DEFAULT 0, -- size of its files (file quota)
    trigger_id       TEXT                      -- the trigger that showed the form (migration 11)
);
CREATE INDEX form_submissions_team_created ON form_submissions(team_id, created_at, id);
-- The file quota sums an agent's files (only rows with files).
CREATE INDEX form_submissions_agent_files ON form_submissions(agent_id, files_bytes)
    WHERE files_bytes > 0;
CREATE INDEX form_submissions_tool ON form_submissions(tool_id, status);
-- The visitor panel's submissions (migration 13): of a conversation, or of a widget session.
CREATE INDEX form_submissions_conversation ON form_submissions(conversation_id)
    WHERE conversation_id IS NOT NULL;
CREATE INDEX form_submissions_team_session ON form_submissions(team_id, session_id)
    WHERE session_id IS NOT NULL;

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

-- ── totals kept as counters (migration 6) ─────────────────────────────────────────────
-- Lists and analytics read these instead of counting rows: triggers update them in the
-- transaction that writes the rows they count, and every key starts with the agent, so
-- one agent's figures never touch another agent's rows.
CREATE TABLE conversation_totals (
    agent_id      TEXT PRIMARY KEY,
    conversations INTEGER NOT NULL
);
CREATE TRIGGER conversation_totals_insert AFTER INSERT ON conversations BEGIN
    INSERT INTO conversation_totals (agent_id, conversations) VALUES (new.agent_id, 1)
    ON CONFLICT (agent_id) DO UPDATE SET conversations = conversations + 1;
END;
CREATE TRIGGER conversation_totals_delete AFTER DELETE ON conversations BEGIN
    UPDATE conversation_totals SET conversations = conversations - 1
    WHERE agent_id = old.agent_id;
END;

-- Pages in list order (`created_at`, then `id`) for the lists' filters: a page, by cursor or
-- by offset, walks an index, never a sort of every row.
CREATE INDEX form_submissions_team_status ON form_submissions(team_id, status, created_at, id);
CREATE INDEX form_submissions_agent_created ON form_submissions(agent_id, created_at, id);

-- Submissions by (agent, form tool, status, mode); `unseen`/`unstarted` count those sent
-- without impressionAt/startedAt.
CREATE TABLE submission_totals (
    agent_id       TEXT NOT NULL,
    tool_id        TEXT NOT NULL,
    status         TEXT NOT NULL,
    execution_mode TEXT NOT NULL,
    team_id        TEXT NOT NULL,
    submissions    INTEGER NOT NULL,
    unseen         INTEGER NOT NULL,
    unstarted      INTEGER NOT NULL,
    PRIMARY KEY (agent_id, tool_id, status, execution_mode)
);
CREATE INDEX submission_totals_team ON submission_totals(team_id);
CREATE TRIGGER submission_totals_insert AFTER INSERT ON form_submissions BEGIN
    INSERT INTO submission_totals
        (agent_id, tool_id, status, execution_mode, team_id, submissions, unseen, unstarted)
    VALUES (new.agent_id, new.tool_id, new.status, new.execution_mode, new.team_id, 1,
            new.impression_at IS NULL, new.started_at IS NULL)
    ON CONFLICT (agent_id, tool_id, status, execution_mode) DO UPDATE SET
        submissions = submissions + 1,
        unseen = unseen + (new.impression_at IS NULL),
        unstarted = unstarted + (new.started_at IS NULL);
END;
CREATE TRIGGER submission_totals_delete AFTER DELETE ON form_submissions BEGIN
    UPDATE submission_totals SET
        submissions = submissions - 1,
        unseen = unseen - (old.impression_at IS NULL),
        unstarted = unstarted - (old.started_at IS NULL)
    WHERE agent_id = old.agent_id AND tool_id = old.tool_id AND status = old.status
      AND execution_mode = old.execution_mode;
END;
CREATE TRIGGER submission_totals_update
AFTER UPDATE OF status, impression_at, started_at ON form_submissions BEGIN
    UPDATE submission_totals SET
        submissions = submissions - 1,
        unseen = unseen - (old.impression_at IS NULL),
        unstarted = unstarted - (old.started_at IS NULL)
    WHERE agent_id = old.agent_id AND tool_id = old.tool_id AND status = old.status
      AND execution_mode = old.execution_mode;
    INSERT INTO submission_totals
        (agent_id, tool_id, status, execution_mode, team_id, submissions, unseen, unstarted)
    VALUES (new.agent_id, new.tool_id, new.status, new.execution_mode, new.team_id, 1,
            new.impression_at IS NULL, new.started_at IS NULL)
    ON CONFLICT (agent_id, tool_id, status, execution_mode) DO UPDATE SET
        submissions = submissions + 1,
        unseen = unseen + (new.impression_at IS NULL),
        unstarted = unstarted + (new.started_at IS NULL);
END;

-- How many submissions completed each field of a form.
CREATE TABLE form_field_totals (
    agent_id  TEXT NOT NULL,
    tool_id   TEXT NOT NULL,
    field     TEXT NOT NULL,
    completed INTEGER NOT NULL,
    PRIMARY KEY (agent_id, tool_id, field)
);
CREATE TRIGGER form_field_totals_insert AFTER INSERT ON form_submissions BEGIN
    INSERT INTO form_field_totals (agent_id, tool_id, field, completed)
    SELECT new.agent_id, new.tool_id, value, 1 FROM json_each(new.fields_completed) WHERE 1
    ON CONFLICT (agent_id, tool_id, field) DO UPDATE SET completed = completed + 1;
END;
CREATE TRIGGER form_field_totals_delete AFTER DELETE ON form_submissions BEGIN
    UPDATE form_field_totals SET completed = completed - (
        SELECT COUNT(*) FROM json_each(old.fields_completed) AS f WHERE f.value = field)
    WHERE agent_id = old.agent_id AND tool_id = old.tool_id;
END;

-- Form impressions and starts reported by the widget.
CREATE TABLE form_event_totals (
    agent_id   TEXT NOT NULL,
    tool_id    TEXT NOT NULL,
    event_type TEXT NOT NULL,
    events     INTEGER NOT NULL,
    PRIMARY KEY (agent_id, tool_id, event_type)
);
CREATE TRIGGER form_event_totals_insert AFTER INSERT ON form_events BEGIN
    INSERT INTO form_event_totals (agent_id, tool_id, event_type, events)
    VALUES (new.agent_id, new.tool_id, new.event_type, 1)
    ON CONFLICT (agent_id, tool_id, event_type) DO UPDATE SET events = events + 1;
END;
CREATE TRIGGER form_event_totals_delete AFTER DELETE ON form_events BEGIN
    UPDATE form_event_totals SET events = events - 1
    WHERE agent_id = old.agent_id AND tool_id = old.tool_id AND event_type = old.event_type;
END;

-- An agent's counters go with it (its rows went by cascade).
CREATE TRIGGER agent_totals_delete AFTER DELETE ON agents BEGIN
    DELETE FROM conversation_totals WHERE agent_id = old.id;
    DELETE FROM submission_totals WHERE agent_id = old.id;
    DELETE FROM form_field_totals WHERE agent_id = old.id;
    DELETE FROM form_event_totals WHERE agent_id = old.id;
END;

-- ── event webhooks, privacy and the audit log (migration 10) ─────────────────────────────
-- A team's event webhooks: the events they receive (a JSON list of event types) and their
-- signing secret (whsec_..., sealed with context event-webhook:<id>, shown once).
CREATE TABLE webhooks (
    id            TEXT PRIMARY KEY,
    team_id       TEXT NOT NULL REFERENCES teams(id) ON DELETE CASCADE,
    url           TEXT NOT NULL,
    events        TEXT NOT NULL,
    description   TEXT NOT NULL DEFAULT '',
    sealed_secret TEXT NOT NULL,
    created_by    TEXT,                      -- the user who created it
    created_at    TEXT NOT NULL,
    updated_at    TEXT NOT NULL,
    UNIQUE (team_id, url)
);

-- An event some webhook of its team wanted, written in the transaction of the change it
-- describes; `payload` is the JSON body sent. It goes with its conversation or submission
-- (erasure, retention, deletion), and with it its deliveries.
CREATE TABLE webhook_events (
    id              TEXT PRIMARY KEY,
    team_id         TEXT NOT NULL REFERENCES teams(id) ON DELETE CASCADE,
    type            TEXT NOT NULL,
    payload         TEXT NOT NULL,
    conversation_id TEXT REFERENCES conversations(id) ON DELETE CASCADE,
    submission_id   TEXT REFERENCES form_submissions(id) ON DELETE CASCADE,
    created_at      TEXT NOT NULL
);
CREATE INDEX webhook_events_conversation ON webhook_events(conversation_id)
    WHERE conversation_id IS NOT NULL;
CREATE INDEX webhook_events_submission ON webhook_events(submission_id)
    WHERE submission_id IS NOT NULL;
CREATE INDEX webhook_events_created ON webhook_events(created_at);

-- The outbox of event webhooks: one row per (event, webhook), leased and retried exactly as
-- form_deliveries are (services/delivery/outbox.py drains both).
CREATE TABLE webhook_deliveries (
    id               TEXT PRIMARY KEY,
    webhook_id       TEXT NOT NULL REFERENCES webhooks(id) ON DELETE CASCADE,
    event_id         TEXT NOT NULL REFERENCES webhook_events(id) ON DELETE CASCADE,
    status           TEXT NOT NULL CHECK (status IN ('pending', 'success', 'failed')),
    attempts         INTEGER NOT NULL DEFAULT 0,
    cycle_start      INTEGER NOT NULL DEFAULT 0, -- attempts made before the current schedule
    next_attempt_at  TEXT,
    lease_until      TEXT,
    last_status_code INTEGER,
    last_error       TEXT,
    created_at       TEXT NOT NULL,
    updated_at       TEXT NOT NULL,
    completed_at     TEXT
);
CREATE INDEX webhook_deliveries_due ON webhook_deliveries(status, next_attempt_at);
CREATE INDEX webhook_deliveries_webhook ON webhook_deliveries(webhook_id, created_at, id);
CREATE INDEX webhook_deliveries_event ON webhook_deliveries(event_id);
-- The retention job removes finished deliveries by age.
CREATE INDEX webhook_deliveries_completed ON webhook_deliveries(completed_at)
    WHERE completed_at IS NOT NULL;

CREATE TABLE webhook_delivery_attempts (
    id            INTEGER PRIMARY KEY,
    delivery_id   TEXT NOT NULL REFERENCES webhook_deliveries(id) ON DELETE CASCADE,
    attempt       INTEGER NOT NULL,
    started_at    TEXT NOT NULL,
    status_code   INTEGER,
    latency_ms    INTEGER NOT NULL,
    success       INTEGER NOT NULL,
    error         TEXT,
    response_body TEXT
);
CREATE INDEX webhook_delivery_attempts_delivery
    ON webhook_delivery_attempts(delivery_id, attempt);

-- Who did what in a team, and when: the actor (user, and the API key or session used, and
-- the address), the target, details as JSON. End users are named only by a hash.
CREATE TABLE audit_log (
    id               TEXT PRIMARY KEY,
    team_id          TEXT NOT NULL REFERENCES teams(id) ON DELETE CASCADE,
    action           TEXT NOT NULL,
    actor_user_id    TEXT,
    actor_key_id     TEXT,
    actor_session_id TEXT,
    actor_ip         TEXT,
    target_type      TEXT,
    target_id        TEXT,
    target_label     TEXT,
    details          TEXT,
    created_at       TEXT NOT NULL
);
CREATE INDEX audit_log_team ON audit_log(team_id, created_at, id);
CREATE INDEX audit_log_team_action ON audit_log(team_id, action, created_at, id);

-- ── search, feedback, curated answers and daily figures (migration 11) ─────────────────
-- Full text of every message, for the conversation search: a contentless FTS5 table keyed by
-- the message's rowid, with hex(agent_id) as a scope token (like passages_fts) so a search
-- ranks only that agent's messages. A contentless table forgets a row only when told its
-- indexed values, so deletions pass them: a conversation's messages leave the index before
-- the conversation goes (a cascade deletes them after their conversation row is gone), and a
-- message deleted on its own leaves it while its conversation is still there.
CREATE VIRTUAL TABLE messages_fts USING fts5(
    scope, content,
    content = '',
    tokenize = 'porter unicode61 remove_diacritics 2'
);
CREATE TRIGGER messages_fts_insert AFTER INSERT ON messages BEGIN
    INSERT INTO messages_fts (rowid, scope, content)
    SELECT new.rowid, hex(c.agent_id), new.content FROM conversations AS c
    WHERE c.id = new.conversation_id;
END;
CREATE TRIGGER messages_fts_update AFTER UPDATE OF content ON messages BEGIN
    INSERT INTO messages_fts (messages_fts, rowid, scope, content)
    SELECT 'delete', old.rowid, hex(c.agent_id), old.content FROM conversations AS c
    WHERE c.id = old.conversation_id;
    INSERT INTO messages_fts (rowid, scope, content)
    SELECT new.rowid, hex(c.agent_id), new.content FROM conversations AS c
    WHERE c.id = new.conversation_id;
END;
CREATE TRIGGER messages_fts_delete AFTER DELETE ON messages BEGIN
    INSERT INTO messages_fts (messages_fts, rowid, scope, content)
    SELECT 'delete', old.rowid, hex(c.agent_id), old.content FROM conversations AS c
    WHERE c.id = old.conversation_id;
END;
CREATE TRIGGER messages_fts_conversation_delete BEFORE DELETE ON conversations BEGIN
    INSERT INTO messages_fts (messages_fts, rowid, scope, content)
    SELECT 'delete', m.rowid, hex(old.agent_id), m.content FROM messages AS m
    WHERE m.conversation_id = old.id;
END;

-- Per agent and UTC day: conversations started, visitors' messages, AI answers, those that
-- found nothing, and answers rated up and down (by the answer's day). Counted by triggers in
-- the transaction that writes the rows; a history, so deleting conversations does not
-- lower it (only deleting the agent removes it).
CREATE TABLE agent_daily (
    agent_id         TEXT NOT NULL,
    day              TEXT NOT NULL,
    conversations    INTEGER NOT NULL DEFAULT 0,
    visitor_messages INTEGER NOT NULL DEFAULT 0,
    answers          INTEGER NOT NULL DEFAULT 0,
    unanswered       INTEGER NOT NULL DEFAULT 0,
    rated_up         INTEGER NOT NULL DEFAULT 0,
    rated_down       INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (agent_id, day)
);
CREATE TRIGGER agent_daily_conversation AFTER INSERT ON conversations BEGIN
    INSERT INTO agent_daily (agent_id, day, conversations)
    VALUES (new.agent_id, substr(new.created_at, 1, 10), 1)
    ON CONFLICT (agent_id, day) DO UPDATE SET conversations = conversations + 1;
END;
CREATE TRIGGER agent_daily_message AFTER INSERT ON messages BEGIN
    INSERT INTO agent_daily
        (agent_id, day, visitor_messages, answers, unanswered, rated_up, rated_down)
    SELECT c.agent_id, substr(new.created_at, 1, 10), new.role = 'user',
           new.role = 'assistant' AND new.author_id IS NULL, coalesce(new.unanswered, 0),
           new.role = 'assistant' AND new.rating IS 'up',
           new.role = 'assistant' AND new.rating IS 'down'
    FROM conversations AS c WHERE c.id = new.conversation_id
    ON CONFLICT (agent_id, day) DO UPDATE SET
        visitor_messages = visitor_messages + excluded.visitor_messages,
        answers = answers + excluded.answers,
        unanswered = unanswered + excluded.unanswered,
        rated_up = rated_up + excluded.rated_up,
        rated_down = rated_down + excluded.rated_down;
END;

-- Rated answers (assistant messages) by agent, newest first: the review list reads this
-- instead of every message. Kept by triggers (which also count each conversation's rated
-- answers, for the list's rating filter); a rating leaves with its message.
CREATE TABLE message_ratings (
    message_id      TEXT PRIMARY KEY REFERENCES messages(id) ON DELETE CASCADE,
    agent_id        TEXT NOT NULL,
    conversation_id TEXT NOT NULL,
    rating          TEXT NOT NULL,
    created_at      TEXT NOT NULL              -- the answer's
);
CREATE INDEX message_ratings_agent ON message_ratings(agent_id, rating, created_at, message_id);
CREATE INDEX message_ratings_newest ON message_ratings(agent_id, created_at, message_id);
CREATE TRIGGER message_ratings_insert AFTER INSERT ON messages
WHEN new.role = 'assistant' AND new.rating IS NOT NULL BEGIN
    INSERT INTO message_ratings (message_id, agent_id, conversation_id, rating, created_at)
    SELECT new.id, c.agent_id, new.conversation_id, new.rating, new.created_at
    FROM conversations AS c WHERE c.id = new.conversation_id;
    UPDATE conversations SET
        rated_up = rated_up + (new.rating IS 'up'),
        rated_down = rated_down + (new.rating IS 'down')
    WHERE id = new.conversation_id;
END;
CREATE TRIGGER message_ratings_delete AFTER DELETE ON messages
WHEN old.role = 'assistant' AND old.rating IS NOT NULL BEGIN
    UPDATE conversations SET
        rated_up = rated_up - (old.rating IS 'up'),
        rated_down = rated_down - (old.rating IS 'down')
    WHERE id = old.conversation_id;
END;
CREATE TRIGGER message_ratings_update AFTER UPDATE OF rating ON messages
WHEN new.role = 'assistant' AND new.rating IS NOT old.rating BEGIN
    DELETE FROM message_ratings WHERE message_id = old.id;
    INSERT INTO message_ratings (message_id, agent_id, conversation_id, rating, created_at)
    SELECT new.id, c.agent_id, new.conversation_id, new.rating, new.created_at
    FROM conversations AS c WHERE c.id = new.conversation_id AND new.rating IS NOT NULL;
    UPDATE agent_daily SET
        rated_up = rated_up + (new.rating IS 'up') - (old.rating IS 'up'),
        rated_down = rated_down + (new.rating IS 'down') - (old.rating IS 'down')
    WHERE agent_id = (SELECT agent_id FROM conversations WHERE id = new.conversation_id)
      AND day = substr(new.created_at, 1, 10);
    UPDATE conversations SET
        rated_up = rated_up + (new.rating IS 'up') - (old.rating IS 'up'),
        rated_down = rated_down + (new.rating IS 'down') - (old.rating IS 'down')
    WHERE id = new.conversation_id;
END;

-- Answers the team wrote for questions visitors ask (POST /agents/:id/answers). A visitor's
-- question close enough to `question` is answered with `answer`. question_key is the
-- question's words, lower-cased (one answer per question and agent).
CREATE TABLE curated_answers (
    id           TEXT PRIMARY KEY,
    agent_id     TEXT NOT NULL REFERENCES agents(id) ON DELETE CASCADE,
    team_id      TEXT NOT NULL REFERENCES teams(id) ON DELETE CASCADE,
    question     TEXT NOT NULL,
    question_key TEXT NOT NULL,
    answer       TEXT NOT NULL,
    created_at   TEXT NOT NULL,
    updated_at   TEXT NOT NULL,
    UNIQUE (agent_id, question_key)
);
CREATE INDEX curated_answers_agent ON curated_answers(agent_id, created_at, id);
CREATE INDEX curated_answers_team ON curated_answers(team_id);

-- The question of each AI answer that found nothing (messages.unanswered = 1), by time and
-- normalised text (the analytics' most frequent unanswered questions). It goes with its
-- answer, so deleting a conversation forgets its questions.
CREATE TABLE unanswered_questions (
    message_id   TEXT PRIMARY KEY REFERENCES messages(id) ON DELETE CASCADE,
    agent_id     TEXT NOT NULL,
    asked_at     TEXT NOT NULL,               -- when the answer was given
    question_key TEXT NOT NULL,               -- the question's words, lower-cased
    question     TEXT NOT NULL                -- as asked (its first 300 characters)
);
CREATE INDEX unanswered_questions_agent ON unanswered_questions(agent_id, asked_at);

-- Per agent, UTC day and trigger: widget events (fired, converted), conversations started
-- from the trigger and forms submitted from it. Written by the store with the rows they
-- count (the event batch, the conversation, the submission).
CREATE TABLE trigger_daily (
    agent_id      TEXT NOT NULL,
    day           TEXT NOT NULL,
    trigger_id    TEXT NOT NULL,
    fired         INTEGER NOT NULL DEFAULT 0,
    converted     INTEGER NOT NULL DEFAULT 0,
    conversations INTEGER NOT NULL DEFAULT 0,
    submissions   INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (agent_id, day, trigger_id)
);
CREATE TRIGGER agent_daily_delete AFTER DELETE ON agents BEGIN
    DELETE FROM agent_daily WHERE agent_id = old.id;
    DELETE FROM trigger_daily WHERE agent_id = old.id;
END;

-- Single sign-on (issue 35). A team's sign-in settings: the protocol ('oidc' now, 'saml'
-- later), its non-secret settings as JSON, its one secret (OIDC's client secret) sealed with
-- the secret box, and whether the team's domains must sign in through it.
CREATE TABLE team_sso (
    team_id       TEXT PRIMARY KEY REFERENCES teams(id) ON DELETE CASCADE,
    type          TEXT NOT NULL CHECK (type IN ('oidc', 'saml')),
    settings      TEXT NOT NULL,
    secret_sealed TEXT,
    enforce       INTEGER NOT NULL DEFAULT 0,
    created_at    TEXT NOT NULL,
    updated_at    TEXT NOT NULL
);
-- The e-mail domains a team claims for its SSO (lower-cased), each with the random token of
-- its DNS TXT proof; a domain does anything only once verified, and is verified for one team
-- at most (unverified claims do not block the real owner).
CREATE TABLE team_domains (
    domain      TEXT NOT NULL,
    team_id     TEXT NOT NULL REFERENCES teams(id) ON DELETE CASCADE,
    token       TEXT NOT NULL,
    verified_at TEXT,
    created_at  TEXT NOT NULL,
    PRIMARY KEY (domain, team_id)
);
CREATE INDEX team_domains_team ON team_domains(team_id);
CREATE UNIQUE INDEX team_domains_verified ON team_domains(domain)
    WHERE verified_at IS NOT NULL;
-- Sign-ins under way: the state (hashed), with the nonce and PKCE verifier bound to it.
CREATE TABLE sso_states (
    state_hash    TEXT PRIMARY KEY,
    team_id       TEXT NOT NULL REFERENCES teams(id) ON DELETE CASCADE,
    nonce         TEXT NOT NULL,
    code_verifier TEXT NOT NULL,
    callback_url  TEXT NOT NULL,
    created_at    TEXT NOT NULL,
    expires_at    TEXT NOT NULL
);
-- One-use values already accepted ('oidc-nonce:<sha256>', later SAML assertion ids), kept
-- until the token or assertion carrying them has expired.
CREATE TABLE sso_seen (
    key        TEXT PRIMARY KEY,
    team_id    TEXT NOT NULL REFERENCES teams(id) ON DELETE CASCADE,
    expires_at TEXT NOT NULL
);
-- SCIM 2.0 provisioning: the team's bearer token (its SHA-256 only; one per team).
CREATE TABLE team_scim (
    team_id    TEXT PRIMARY KEY REFERENCES teams(id) ON DELETE CASCADE,
    token_hash TEXT NOT NULL UNIQUE,
    created_at TEXT NOT NULL
);
-- People the identity provider manages in the team: the SCIM attributes it sent (JSON),
-- whether they are active (an inactive one is no member), and whether their owner role
-- came from a group (only such a role is taken away again by SCIM).
CREATE TABLE scim_users (
    team_id         TEXT NOT NULL REFERENCES teams(id) ON DELETE CASCADE,
    user_id         TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    external_id     TEXT,
    active          INTEGER NOT NULL DEFAULT 1,
    owner_by_groups INTEGER NOT NULL DEFAULT 0,
    attributes      TEXT NOT NULL,
    created_at      TEXT NOT NULL,
    updated_at      TEXT NOT NULL,
    PRIMARY KEY (team_id, user_id)
);
CREATE INDEX scim_users_external ON scim_users(team_id, external_id);
-- The provider's groups; their displayName maps to a role through team_sso's roleMapping.
CREATE TABLE scim_groups (
    id           TEXT PRIMARY KEY,
    team_id      TEXT NOT NULL REFERENCES teams(id) ON DELETE CASCADE,
    display_name TEXT NOT NULL,
    external_id  TEXT,
    created_at   TEXT NOT NULL,
    updated_at   TEXT NOT NULL,
    UNIQUE (team_id, display_name)
);
CREATE TABLE scim_group_members (
    group_id TEXT NOT NULL REFERENCES scim_groups(id) ON DELETE CASCADE,
    user_id  TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    PRIMARY KEY (group_id, user_id)
);
CREATE INDEX scim_group_members_user ON scim_group_members(user_id);

-- An agent on another channel than the widget (migration 15): settings that are not
-- credentials as JSON, the credentials sealed with the secret box; the platform messages
-- received (one turn each); the replies' outbox rows and their attempts.
CREATE TABLE channels (
    id             TEXT PRIMARY KEY,
    team_id        TEXT NOT NULL REFERENCES teams(id) ON DELETE CASCADE,
    agent_id       TEXT NOT NULL REFERENCES agents(id) ON DELETE CASCADE,
    type           TEXT NOT NULL,
    name           TEXT NOT NULL,
    enabled        INTEGER NOT NULL DEFAULT 1,
    config         TEXT NOT NULL,
    sealed_secrets TEXT NOT NULL,
    created_by     TEXT,
    created_at     TEXT NOT NULL,
    updated_at     TEXT NOT NULL
);
CREATE INDEX channels_agent ON channels(agent_id, created_at, id);
CREATE TABLE channel_inbound (
    channel_id  TEXT NOT NULL REFERENCES channels(id) ON DELETE CASCADE,
    external_id TEXT NOT NULL,
    received_at TEXT NOT NULL,
    -- the message until its turn starts (then emptied: the conversation keeps it), so a
    -- process that stopped in between leaves it to be answered at the next start; the
    -- address its reply goes to on the platform (a Telegram chat)
    user_id     TEXT,
    text        TEXT,
    address     TEXT,
    started_at  TEXT,
    PRIMARY KEY (channel_id, external_id)
);
CREATE INDEX channel_inbound_waiting ON channel_inbound(received_at) WHERE started_at IS NULL;
CREATE TABLE channel_deliveries (
    id               TEXT PRIMARY KEY,
    channel_id       TEXT NOT NULL REFERENCES channels(id) ON DELETE CASCADE,
    conversation_id  TEXT NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
    payload          TEXT NOT NULL,
    status           TEXT NOT NULL CHECK (status IN ('pending', 'success', 'failed')),
    attempts         INTEGER NOT NULL DEFAULT 0,
    cycle_start      INTEGER NOT NULL DEFAULT 0,
    next_attempt_at  TEXT,
    lease_until      TEXT,
    last_status_code INTEGER,
    last_error       TEXT,
    created_at       TEXT NOT NULL,
    updated_at       TEXT NOT NULL,
    completed_at     TEXT
);
CREATE INDEX channel_deliveries_due ON channel_deliveries(status, next_attempt_at);
CREATE INDEX channel_deliveries_channel ON channel_deliveries(channel_id, created_at, id);
CREATE INDEX channel_deliveries_conversation ON channel_deliveries(conversation_id);

CREATE TABLE channel_delivery_attempts (
    id            INTEGER PRIMARY KEY,
    delivery_id   TEXT NOT NULL REFERENCES channel_deliveries(id) ON DELETE CASCADE,
    attempt       INTEGER NOT NULL,
    started_at    TEXT NOT NULL,
    status_code   INTEGER,
    latency_ms    INTEGER NOT NULL,
    success       INTEGER NOT NULL,
    error         TEXT,
    response_body TEXT
);
CREATE INDEX channel_delivery_attempts_delivery
    ON channel_delivery_attempts(delivery_id, attempt);

-- A channel's end user's conversation (migration 15), and the list's channel filter.
CREATE INDEX conversations_channel_user ON conversations(channel_id, user_ref, created_at)
    WHERE channel_id IS NOT NULL;
CREATE INDEX conversations_agent_channel ON conversations(agent_id, channel, created_at, id)
    WHERE channel <> 'web';

-- The files an e-mail came with (migration 16): kept under <data_dir>/files/mail/<folder>/,
-- listed on the user message that brought them.
CREATE TABLE message_attachments (
    id              TEXT PRIMARY KEY,
    conversation_id TEXT NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
    message_id      TEXT NOT NULL REFERENCES messages(id) ON DELETE CASCADE,
    folder          TEXT NOT NULL,
    file            TEXT NOT NULL,
    name            TEXT NOT NULL,
    content_type    TEXT NOT NULL,
    size            INTEGER NOT NULL,
    position        INTEGER NOT NULL,
    created_at      TEXT NOT NULL
);
CREATE INDEX message_attachments_conversation ON message_attachments(conversation_id);
CREATE INDEX message_attachments_message ON message_attachments(message_id);
CREATE INDEX message_attachments_folder ON message_attachments(folder);

-- An agent's versions (migration 17): each change of its behaviour (prompt, model,
-- temperature, language, handoff settings) as a numbered JSON snapshot; agents.version is
-- the live one's number.
CREATE TABLE agent_versions (
    agent_id       TEXT NOT NULL REFERENCES agents(id) ON DELETE CASCADE,
    number         INTEGER NOT NULL,
    snapshot       TEXT NOT NULL,
    note           TEXT NOT NULL DEFAULT '',
    author_user_id TEXT,                -- who made it (NULL: the server, or before versions)
    author_key_id  TEXT,                -- through this API key (NULL: a session)
    created_at     TEXT NOT NULL,
    PRIMARY KEY (agent_id, number)
);

-- Experiments (migration 18): an agent's versions as weighted variants, one running per
-- agent; each conversation started meanwhile keeps the variant it was given.
CREATE TABLE experiments (
    id          TEXT PRIMARY KEY,
    agent_id    TEXT NOT NULL REFERENCES agents(id) ON DELETE CASCADE,
    team_id     TEXT NOT NULL,
    variants    TEXT NOT NULL,             -- JSON [{version, weight}]
    status      TEXT NOT NULL CHECK (status IN ('running', 'stopped')),
    winner      INTEGER,                   -- the version made live when it stopped
    created_by  TEXT,
    created_at  TEXT NOT NULL,
    stopped_at  TEXT
);
CREATE UNIQUE INDEX experiments_running ON experiments(agent_id) WHERE status = 'running';
CREATE INDEX experiments_agent ON experiments(agent_id, created_at);
CREATE INDEX conversations_experiment ON conversations(experiment_id, variant)
    WHERE experiment_id IS NOT NULL;

-- Evaluation sets, their cases, runs and results (migration 19).
CREATE TABLE evalsets (
    id          TEXT PRIMARY KEY,
    agent_id    TEXT NOT NULL REFERENCES agents(id) ON DELETE CASCADE,
    team_id     TEXT NOT NULL,
    name        TEXT NOT NULL,
    created_at  TEXT NOT NULL,
    updated_at  TEXT NOT NULL
);
CREATE INDEX evalsets_agent ON evalsets(agent_id, created_at);
CREATE TABLE eval_cases (
    id              TEXT PRIMARY KEY,
    evalset_id      TEXT NOT NULL REFERENCES evalsets(id) ON DELETE CASCADE,
    question        TEXT NOT NULL,
    question_key    TEXT NOT NULL,         -- its words' stems, to import a question once
    expected        TEXT,
    must_include    TEXT NOT NULL,         -- JSON [text]
    must_not_include TEXT NOT NULL,        -- JSON [text]
    tags            TEXT NOT NULL,         -- JSON [text]
    created_at      TEXT NOT NULL
);
CREATE INDEX eval_cases_set ON eval_cases(evalset_id, created_at, id);
CREATE INDEX eval_cases_key ON eval_cases(evalset_id, question_key);
CREATE TABLE eval_runs (
    id           TEXT PRIMARY KEY,
    evalset_id   TEXT NOT NULL REFERENCES evalsets(id) ON DELETE CASCADE,
    agent_id     TEXT NOT NULL,
    team_id      TEXT NOT NULL,
    version      TEXT NOT NULL,            -- 'draft' or the version's number
    snapshot     TEXT NOT NULL,            -- JSON: what the agent did in it
    judge        TEXT,                     -- provider/model, or NULL: word checks only
    case_ids     TEXT NOT NULL,            -- JSON [id], in order
    status       TEXT NOT NULL CHECK (status IN ('queued', 'running', 'done', 'failed')),
    total        INTEGER NOT NULL,
    done         INTEGER NOT NULL DEFAULT 0,
    passed       INTEGER NOT NULL DEFAULT 0,
    lease_until  TEXT,
    error        TEXT,
    created_by   TEXT,
    created_at   TEXT NOT NULL,
    finished_at  TEXT
);
CREATE INDEX eval_runs_set ON eval_runs(evalset_id, created_at);
CREATE INDEX eval_runs_open ON eval_runs(status, lease_until)
    WHERE status IN ('queued', 'running');
CREATE TABLE eval_results (
    run_id      TEXT NOT NULL REFERENCES eval_runs(id) ON DELETE CASCADE,
    case_id     TEXT NOT NULL,
    position    INTEGER NOT NULL,
    question    TEXT NOT NULL,
    answer      TEXT NOT NULL,
    passed      INTEGER NOT NULL,
    reason      TEXT NOT NULL,
    latency_ms  INTEGER NOT NULL,
    PRIMARY KEY (run_id, case_id)
);

CREATE TABLE sources (
    id            TEXT PRIMARY KEY,
    agent_id      TEXT NOT NULL REFERENCES agents(id) ON DELETE CASCADE,
    team_id       TEXT NOT NULL,
    type          TEXT NOT NULL CHECK (type IN ('sitemap', 'crawl', 'url')),
    url           TEXT NOT NULL,
    include       TEXT NOT NULL,           -- JSON [glob]
    exclude       TEXT NOT NULL,           -- JSON [glob]
    max_pages     INTEGER NOT NULL,
    schedule      TEXT NOT NULL CHECK (schedule IN ('off', 'hourly', 'daily', 'weekly')),
    status        TEXT NOT NULL CHECK (status IN ('queued', 'syncing', 'ready', 'failed')),
    error         TEXT,
    generation    INTEGER NOT NULL DEFAULT 0,  -- the number of the last sync begun
    removed       INTEGER NOT NULL DEFAULT 0,  -- pages the last sync removed
    lease_until   TEXT,
    last_sync_at  TEXT,
    next_sync_at  TEXT,
    created_at    TEXT NOT NULL,
    updated_at    TEXT NOT NULL
);
CREATE INDEX sources_agent ON sources(agent_id, created_at);
CREATE INDEX sources_open ON sources(status, lease_until)
    WHERE status IN ('queued', 'syncing');
CREATE INDEX sources_due ON sources(next_sync_at) WHERE next_sync_at IS NOT NULL;
CREATE TABLE source_pages (
    source_id      TEXT NOT NULL REFERENCES sources(id) ON DELETE CASCADE,
    url            TEXT NOT NULL,          -- normalised
    status         TEXT NOT NULL
        CHECK (status IN ('pending', 'ok', 'failed', 'duplicate', 'skipped')),
    found_in       INTEGER NOT NULL,     -- the last sync that found it
    done_in        INTEGER NOT NULL DEFAULT 0,  -- the last sync that fetched it
    changed_in     INTEGER NOT NULL DEFAULT 0,  -- the last sync that changed it
    etag           TEXT,
    last_modified  TEXT,
    body_hash      TEXT,
    text_hash      TEXT,
    document_id    TEXT REFERENCES documents(id) ON DELETE SET NULL,
    links          TEXT,                   -- JSON [url]: the site's pages it links to
    error          TEXT,
    changed_at     TEXT,
    fetched_at     TEXT,
    PRIMARY KEY (source_id, url)
);
CREATE INDEX source_pages_document ON source_pages(document_id)
    WHERE document_id IS NOT NULL;

-- Tool calls a person approves first (migration 22).
CREATE TABLE paused_turns (
    id              TEXT PRIMARY KEY,
    conversation_id TEXT NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
    team_id         TEXT NOT NULL,
    message_id      TEXT NOT NULL,          -- the answer the turn stores when it ends
    state           TEXT NOT NULL,          -- JSON: what the turn needs to go on
    status          TEXT NOT NULL CHECK (status IN ('waiting', 'done')),
    holder          TEXT,                   -- the process holding it (a random token)
    lease_until     TEXT,
    created_at      TEXT NOT NULL
);
CREATE INDEX paused_turns_waiting ON paused_turns(lease_until) WHERE status = 'waiting';
CREATE TABLE tool_approvals (
    id              TEXT PRIMARY KEY,
    pause_id        TEXT NOT NULL REFERENCES paused_turns(id) ON DELETE CASCADE,
    conversation_id TEXT NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
    team_id         TEXT NOT NULL,
    agent_id        TEXT NOT NULL,
    tool_id         TEXT,
    tool_name       TEXT NOT NULL,
    tool_use_id     TEXT NOT NULL,
    input           TEXT NOT NULL,          -- JSON object, as the model gave it
    edited_input    TEXT,                   -- JSON object a member approved instead
    status          TEXT NOT NULL
        CHECK (status IN ('pending', 'approved', 'denied', 'expired')),
    reason          TEXT,
    decided_by      TEXT,                   -- the member's user id
    decided_by_name TEXT,
    decided_at      TEXT,
    expires_at      TEXT NOT NULL,
    ran_at          TEXT,                   -- set once, before the tool runs
    output          TEXT,                   -- JSON: what the tool gave
    is_error        INTEGER,
    created_at      TEXT NOT NULL
);
CREATE INDEX tool_approvals_team ON tool_approvals(team_id, created_at, id);
CREATE INDEX tool_approvals_pending ON tool_approvals(expires_at) WHERE status = 'pending';
CREATE INDEX tool_approvals_pause ON tool_approvals(pause_id);
CREATE INDEX tool_approvals_conversation ON tool_approvals(conversation_id);
-- Guardrails (migration 23): conversations a guardrail flagged for review, and the hits of
-- every guardrail per agent, UTC day and kind (email, phone, card, iban, pattern, blocked,
-- mustNotSay, tooLong), written with the message each concerns.
CREATE INDEX conversations_flagged ON conversations(agent_id, created_at, id)
    WHERE flagged_at IS NOT NULL;
CREATE TABLE guardrail_daily (
    agent_id TEXT NOT NULL REFERENCES agents(id) ON DELETE CASCADE,
    day      TEXT NOT NULL,
    kind     TEXT NOT NULL,
    hits     INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (agent_id, day, kind)
);
-- ── usage and budgets (migration 24): counters written with each answer, monthly limits ──
CREATE TABLE usage_daily (
    team_id       TEXT NOT NULL REFERENCES teams(id) ON DELETE CASCADE,
    day           TEXT NOT NULL,             -- UTC, YYYY-MM-DD
    agent_id      TEXT NOT NULL,             -- no reference: spending outlives the agent
    model         TEXT NOT NULL,             -- the agent's model id then
    answers       INTEGER NOT NULL DEFAULT 0,
    input_tokens  INTEGER NOT NULL DEFAULT 0,
    output_tokens INTEGER NOT NULL DEFAULT 0,
    cost_nanos    INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (team_id, day, agent_id, model)
);
CREATE TABLE usage_monthly (
    team_id    TEXT NOT NULL REFERENCES teams(id) ON DELETE CASCADE,
    month      TEXT NOT NULL,                -- UTC, YYYY-MM
    agent_id   TEXT NOT NULL,
    cost_nanos INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (team_id, month, agent_id)
);
CREATE TABLE team_budgets (
    team_id         TEXT PRIMARY KEY REFERENCES teams(id) ON DELETE CASCADE,
    limit_nanos     INTEGER NOT NULL CHECK (limit_nanos > 0),
    warn_at_percent INTEGER CHECK (warn_at_percent BETWEEN 1 AND 99),
    updated_at      TEXT NOT NULL
);
CREATE TABLE agent_budgets (
    agent_id        TEXT PRIMARY KEY REFERENCES agents(id) ON DELETE CASCADE,
    team_id         TEXT NOT NULL REFERENCES teams(id) ON DELETE CASCADE,
    limit_nanos     INTEGER NOT NULL CHECK (limit_nanos > 0),
    warn_at_percent INTEGER CHECK (warn_at_percent BETWEEN 1 AND 99),
    updated_at      TEXT NOT NULL
);
CREATE INDEX agent_budgets_team ON agent_budgets(team_id);
CREATE TABLE budget_alerts (
    team_id     TEXT NOT NULL REFERENCES teams(id) ON DELETE CASCADE,
    scope       TEXT NOT NULL,               -- 'team', or the agent's id
    month       TEXT NOT NULL,
    percent     INTEGER NOT NULL,          -- the threshold crossed (100: the limit)
    limit_nanos INTEGER NOT NULL,          -- the limit then: a raised one warns again
    sent_at     TEXT NOT NULL,
    PRIMARY KEY (team_id, scope, month, percent, limit_nanos)
);
-- ── files kept in the database (PostgreSQL without [storage] url; agentsvc/storage/) ────
CREATE TABLE stored_files (
    key        TEXT PRIMARY KEY,
    folder     TEXT NOT NULL,          -- the key up to its last "/": what delete_folder names
    upload_id  TEXT NOT NULL UNIQUE,
    size       INTEGER NOT NULL,
    chunks     INTEGER NOT NULL,
    created_at TEXT NOT NULL
);
CREATE TABLE stored_file_chunks (
    upload_id  TEXT NOT NULL,
    seq        INTEGER NOT NULL,
    data       BLOB NOT NULL,
    created_at TEXT NOT NULL,
    PRIMARY KEY (upload_id, seq)
);
CREATE INDEX stored_files_folder ON stored_files(folder);
