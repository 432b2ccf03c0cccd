"""Version 23 (issue 36): guardrails. An agent's guardrails (what is redacted, the topics it
refuses, what it must not say, the longest visitor message) are JSON on its row, kept in
its versions like the rest of what it does. A conversation whose answer a guardrail replaced
is flagged for review until a member clears it. Every hit is counted per agent, UTC day and
kind in `guardrail_daily`, written in the transaction of the message it concerns.
"""

_SCRIPT = """
    ALTER TABLE agents ADD COLUMN guardrails TEXT;
    ALTER TABLE conversations ADD COLUMN flagged_at TEXT;
    CREATE INDEX conversations_flagged ON conversations(agent_id, created_at, id)
        WHERE flagged_at IS NOT NULL;
    CREATE TABLE guardrail_daily (
        agent_id TEXT NOT NULL REFERENCES agents(id) ON DELETE CASCADE,
        day      TEXT NOT NULL,
        kind     TEXT NOT NULL,
        hits     {integer} NOT NULL DEFAULT 0,
        PRIMARY KEY (agent_id, day, kind)
    );
"""

# Constant text only (no value is ever formatted into these scripts).
SQLITE = _SCRIPT.replace("{integer}", "INTEGER")
POSTGRES = _SCRIPT.replace("{integer}", "BIGINT")

# Taken away again, for the tests that build a PostgreSQL database of an earlier version.
UNDO_POSTGRES = """
DROP TABLE guardrail_daily;
DROP INDEX conversations_flagged;
ALTER TABLE conversations DROP COLUMN flagged_at;
ALTER TABLE agents DROP COLUMN guardrails;
"""
