"""Version 22 (issue 36): tool calls a person approves first.

A tool may require a person's approval (`requires_approval`, with how long a call waits
for one, `approval_timeout_seconds`). A turn whose model calls such a tool pauses: the
pause keeps what the turn needs to go on (`paused_turns.state`, JSON) and each held call
is a row of `tool_approvals`, decided by a member (approved, maybe with an edited input, or
denied with a reason) or expired. The process that holds a pause (the visitor's open
stream, or one that resumes it) renews its lease; once it runs out, any process takes the
decided pause and finishes the turn. `ran_at` is set before an approved call's tool runs,
so a tool never runs twice, even when its process stops in between.
"""

_SCRIPT = """
    ALTER TABLE tools ADD COLUMN requires_approval {integer} NOT NULL DEFAULT 0;
    ALTER TABLE tools ADD COLUMN approval_timeout_seconds {integer};
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
        is_error        {integer},
        created_at      TEXT NOT NULL
    );
    CREATE INDEX tool_approvals_team ON tool_approvals(team_id, created_at, id);
    CREATE INDEX tool_approvals_pending ON tool_approvals(expires_at) WHERE status = 'pending';
    CREATE INDEX tool_approvals_pause ON tool_approvals(pause_id);
    CREATE INDEX tool_approvals_conversation ON tool_approvals(conversation_id);
"""

# Constant text only (no value is ever formatted into these scripts).
SQLITE = _SCRIPT.replace("{integer}", "INTEGER")
POSTGRES = _SCRIPT.replace("{integer}", "BIGINT")

# Taken away again, for the tests that build a PostgreSQL database of an earlier version.
UNDO_POSTGRES = """
DROP TABLE tool_approvals;
DROP TABLE paused_turns;
ALTER TABLE tools DROP COLUMN approval_timeout_seconds;
ALTER TABLE tools DROP COLUMN requires_approval;
"""
