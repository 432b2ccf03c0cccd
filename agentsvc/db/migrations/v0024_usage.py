"""Version 24 (issue 36): token usage and costs, and monthly budgets.

Each AI answer's tokens and cost (priced by `[prices]` when it is stored) are added to
counters in the answer's own transaction: per team, UTC day, agent and model
(`usage_daily`, what `GET /usage` reads), per team, UTC month and agent (`usage_monthly`,
what budgets compare), and on its conversation (`input_tokens`, `output_tokens`,
`cost_nanos`). Costs are integers in billionths of the currency's unit. The counters are a
history: deleting conversations or an agent does not lower what the team spent (only
deleting the team removes them).

A budget is a monthly limit, for the team or for one agent, with the percentage at which
the owners are warned; `budget_alerts` records each warning sent, once per month,
threshold and limit, whichever process crossed it.

Existing answers' token counts (their `usage` JSON) are added to the counters and to their
conversations, at no cost (their prices were not known); on a large `messages` table this
reads every answer once.
"""

_TABLES = """
    CREATE TABLE usage_daily (
        team_id       TEXT NOT NULL REFERENCES teams(id) ON DELETE CASCADE,
        day           TEXT NOT NULL,             -- UTC, YYYY-MM-DD
        agent_id      TEXT NOT NULL,             -- no reference: spending outlives the agent
        model         TEXT NOT NULL,             -- the agent's model id then
        answers       {integer} NOT NULL DEFAULT 0,
        input_tokens  {integer} NOT NULL DEFAULT 0,
        output_tokens {integer} NOT NULL DEFAULT 0,
        cost_nanos    {integer} NOT NULL DEFAULT 0,
        PRIMARY KEY (team_id, day, agent_id, model)
    );
    CREATE TABLE usage_monthly (
        team_id    TEXT NOT NULL REFERENCES teams(id) ON DELETE CASCADE,
        month      TEXT NOT NULL,                -- UTC, YYYY-MM
        agent_id   TEXT NOT NULL,
        cost_nanos {integer} NOT NULL DEFAULT 0,
        PRIMARY KEY (team_id, month, agent_id)
    );
    CREATE TABLE team_budgets (
        team_id         TEXT PRIMARY KEY REFERENCES teams(id) ON DELETE CASCADE,
        limit_nanos     {integer} NOT NULL CHECK (limit_nanos > 0),
        warn_at_percent {integer} CHECK (warn_at_percent BETWEEN 1 AND 99),
        updated_at      TEXT NOT NULL
    );
    CREATE TABLE agent_budgets (
        agent_id        TEXT PRIMARY KEY REFERENCES agents(id) ON DELETE CASCADE,
        team_id         TEXT NOT NULL REFERENCES teams(id) ON DELETE CASCADE,
        limit_nanos     {integer} NOT NULL CHECK (limit_nanos > 0),
        warn_at_percent {integer} CHECK (warn_at_percent BETWEEN 1 AND 99),
        updated_at      TEXT NOT NULL
    );
    CREATE INDEX agent_budgets_team ON agent_budgets(team_id);
    CREATE TABLE budget_alerts (
        team_id     TEXT NOT NULL REFERENCES teams(id) ON DELETE CASCADE,
        scope       TEXT NOT NULL,               -- 'team', or the agent's id
        month       TEXT NOT NULL,
        percent     {integer} NOT NULL,          -- the threshold crossed (100: the limit)
        limit_nanos {integer} NOT NULL,          -- the limit then: a raised one warns again
        sent_at     TEXT NOT NULL,
        PRIMARY KEY (team_id, scope, month, percent, limit_nanos)
    );
"""

_CONVERSATION_COLUMNS = """
    ALTER TABLE conversations ADD COLUMN input_tokens {integer} NOT NULL DEFAULT 0;
    ALTER TABLE conversations ADD COLUMN output_tokens {integer} NOT NULL DEFAULT 0;
    ALTER TABLE conversations ADD COLUMN cost_nanos {integer} NOT NULL DEFAULT 0;
"""

# The answers stored before: their tokens, by conversation and by team, day, agent and
# model ({input} and {output} read the usage JSON's numbers, 0 when absent).
_BACKFILL = """
    CREATE TEMPORARY TABLE used AS
        SELECT c.id AS conversation_id, c.team_id, c.agent_id,
               substr(m.created_at, 1, 10) AS day, COALESCE(m.model, '') AS model,
               COALESCE({input}, 0) AS input_tokens, COALESCE({output}, 0) AS output_tokens
        FROM messages AS m JOIN conversations AS c ON c.id = m.conversation_id
        WHERE m.role = 'assistant' AND m.usage IS NOT NULL AND m.usage <> 'null';
    UPDATE conversations SET
        input_tokens = (SELECT SUM(u.input_tokens) FROM used AS u
                        WHERE u.conversation_id = conversations.id),
        output_tokens = (SELECT SUM(u.output_tokens) FROM used AS u
                         WHERE u.conversation_id = conversations.id)
    WHERE id IN (SELECT conversation_id FROM used);
    INSERT INTO usage_daily (team_id, day, agent_id, model, answers, input_tokens, output_tokens)
        SELECT team_id, day, agent_id, model, COUNT(*), SUM(input_tokens), SUM(output_tokens)
        FROM used GROUP BY team_id, day, agent_id, model;
    DROP TABLE used;
"""

SQLITE = (
    (_TABLES + _CONVERSATION_COLUMNS).replace("{integer}", "INTEGER")
    + _BACKFILL.replace("{input}", "json_extract(m.usage, '$.inputTokens')").replace(
        "{output}", "json_extract(m.usage, '$.outputTokens')"
    )
)
POSTGRES = (
    (_TABLES + _CONVERSATION_COLUMNS).replace("{integer}", "BIGINT")
    + _BACKFILL.replace("{input}", "(m.usage::jsonb ->> 'inputTokens')::bigint").replace(
        "{output}", "(m.usage::jsonb ->> 'outputTokens')::bigint"
    )
)

# Taken away again, for the tests that build a PostgreSQL database of an earlier version.
UNDO_POSTGRES = """
DROP TABLE budget_alerts;
DROP TABLE agent_budgets;
DROP TABLE team_budgets;
DROP TABLE usage_monthly;
DROP TABLE usage_daily;
ALTER TABLE conversations DROP COLUMN input_tokens;
ALTER TABLE conversations DROP COLUMN output_tokens;
ALTER TABLE conversations DROP COLUMN cost_nanos;
"""
