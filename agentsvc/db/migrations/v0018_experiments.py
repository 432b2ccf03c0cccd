"""Version 18 (issue 33): experiments. An agent may run one experiment at a time: its
versions as variants with weights; each new conversation meanwhile is given one variant
(kept on the conversation), and the experiment's figures are counted per variant. The
running one's variants are also kept on the agent's row, read with it on every turn.
"""

_SCRIPT = """
    CREATE TABLE experiments (
        id          TEXT PRIMARY KEY,
        agent_id    TEXT NOT NULL REFERENCES agents(id) ON DELETE CASCADE,
        team_id     TEXT NOT NULL,
        variants    TEXT NOT NULL,             -- JSON [{version, weight}]
        status      TEXT NOT NULL CHECK (status IN ('running', 'stopped')),
        winner      {integer},                 -- the version made live when it stopped
        created_by  TEXT,
        created_at  TEXT NOT NULL,
        stopped_at  TEXT
    );
    CREATE UNIQUE INDEX experiments_running ON experiments(agent_id) WHERE status = 'running';
    CREATE INDEX experiments_agent ON experiments(agent_id, created_at);
    ALTER TABLE agents ADD COLUMN experiment TEXT;
    ALTER TABLE conversations ADD COLUMN experiment_id TEXT;
    ALTER TABLE conversations ADD COLUMN variant {integer};
    CREATE INDEX conversations_experiment ON conversations(experiment_id, variant)
        WHERE experiment_id IS NOT NULL;
"""

# Constant text only (no value is ever formatted into these scripts).
SQLITE = _SCRIPT.replace("{integer}", "INTEGER")
POSTGRES = _SCRIPT.replace("{integer}", "BIGINT")

# Taken away again, for the tests that build a PostgreSQL database of an earlier version.
UNDO_POSTGRES = """
DROP INDEX conversations_experiment;
ALTER TABLE conversations DROP COLUMN variant;
ALTER TABLE conversations DROP COLUMN experiment_id;
ALTER TABLE agents DROP COLUMN experiment;
DROP TABLE experiments;
"""
