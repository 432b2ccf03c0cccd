"""Version 19 (issue 33): evaluation sets of an agent (questions with what a good answer
holds), and their runs against a version: each run keeps the snapshot it runs and its
cases' ids, so any process can take over a run whose process died (its lease ran out),
and each case's result is written once. An agent's publish gate names a set to pass.
"""

_SCRIPT = """
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
        total        {integer} NOT NULL,
        done         {integer} NOT NULL DEFAULT 0,
        passed       {integer} NOT NULL DEFAULT 0,
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
        position    {integer} NOT NULL,
        question    TEXT NOT NULL,
        answer      TEXT NOT NULL,
        passed      {integer} NOT NULL,
        reason      TEXT NOT NULL,
        latency_ms  {integer} NOT NULL,
        PRIMARY KEY (run_id, case_id)
    );
    ALTER TABLE agents ADD COLUMN publish_gate TEXT;
"""

# Constant text only (no value is ever formatted into these scripts).
SQLITE = _SCRIPT.replace("{integer}", "INTEGER")
POSTGRES = _SCRIPT.replace("{integer}", "BIGINT")

# Taken away again, for the tests that build a PostgreSQL database of an earlier version.
UNDO_POSTGRES = """
ALTER TABLE agents DROP COLUMN publish_gate;
DROP TABLE eval_results;
DROP TABLE eval_runs;
DROP TABLE eval_cases;
DROP TABLE evalsets;
"""
