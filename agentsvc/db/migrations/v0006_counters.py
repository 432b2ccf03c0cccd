"""Version 6: totals kept as counters by triggers (lists and analytics stop counting rows), filled
from the rows there are.
"""

SQLITE = """
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
    DROP INDEX conversations_agent_created;
    CREATE INDEX conversations_agent_created ON conversations(agent_id, created_at, id);
    DROP INDEX form_submissions_team_created;
    CREATE INDEX form_submissions_team_created ON form_submissions(team_id, created_at, id);
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
    INSERT INTO conversation_totals (agent_id, conversations)
        SELECT agent_id, COUNT(*) FROM conversations GROUP BY agent_id;
    INSERT INTO submission_totals
        (agent_id, tool_id, status, execution_mode, team_id, submissions, unseen, unstarted)
        SELECT agent_id, tool_id, status, execution_mode, MIN(team_id), COUNT(*),
               SUM(impression_at IS NULL), SUM(started_at IS NULL)
        FROM form_submissions GROUP BY agent_id, tool_id, status, execution_mode;
    INSERT INTO form_field_totals (agent_id, tool_id, field, completed)
        SELECT s.agent_id, s.tool_id, f.value, COUNT(*)
        FROM form_submissions AS s, json_each(s.fields_completed) AS f
        GROUP BY s.agent_id, s.tool_id, f.value;
    INSERT INTO form_event_totals (agent_id, tool_id, event_type, events)
        SELECT agent_id, tool_id, event_type, COUNT(*) FROM form_events
        GROUP BY agent_id, tool_id, event_type;
    """

# PostgreSQL support began at this version: a PostgreSQL database was created with this
# version's whole schema or a later one (a new one gets schema_postgres.sql, the newest), so
# there is nothing to migrate here; FIRST_POSTGRES_VERSION is this version.
POSTGRES = None
