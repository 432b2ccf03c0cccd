"""Version 11: getting data out: the conversation search (messages_fts over every message, stored
ones indexed here), the trigger a chat or form came from, whether an AI answer found
nothing, rated answers by agent, curated answers, unanswered questions and the daily
figures (filled from the rows there are; answers stored before are not classified).
"""

SQLITE = """
    ALTER TABLE conversations ADD COLUMN trigger_id TEXT;
    ALTER TABLE messages ADD COLUMN unanswered INTEGER;
    ALTER TABLE form_submissions ADD COLUMN trigger_id TEXT;
    ALTER TABLE conversations ADD COLUMN rated_up INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE conversations ADD COLUMN rated_down INTEGER NOT NULL DEFAULT 0;
    CREATE INDEX conversations_agent_user ON conversations(agent_id, user_ref, created_at, id)
        WHERE user_ref IS NOT NULL;
    CREATE INDEX conversations_agent_rated_up ON conversations(agent_id, created_at, id)
        WHERE rated_up > 0;
    CREATE INDEX conversations_agent_rated_down ON conversations(agent_id, created_at, id)
        WHERE rated_down > 0;
    CREATE INDEX conversations_agent_rated ON conversations(agent_id, created_at, id)
        WHERE rated_up > 0 OR rated_down > 0;
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

    INSERT INTO messages_fts (rowid, scope, content)
        SELECT m.rowid, hex(c.agent_id), m.content
        FROM messages AS m JOIN conversations AS c ON c.id = m.conversation_id;
    INSERT INTO message_ratings (message_id, agent_id, conversation_id, rating, created_at)
        SELECT m.id, c.agent_id, m.conversation_id, m.rating, m.created_at
        FROM messages AS m JOIN conversations AS c ON c.id = m.conversation_id
        WHERE m.role = 'assistant' AND m.rating IS NOT NULL;
    UPDATE conversations SET
        rated_up = (SELECT COUNT(*) FROM messages AS m WHERE m.conversation_id = conversations.id
                    AND m.role = 'assistant' AND m.rating = 'up'),
        rated_down = (SELECT COUNT(*) FROM messages AS m WHERE m.conversation_id = conversations.id
                      AND m.role = 'assistant' AND m.rating = 'down')
    WHERE id IN (SELECT conversation_id FROM messages WHERE rating IS NOT NULL);
    INSERT INTO agent_daily (agent_id, day, conversations)
        SELECT agent_id, substr(created_at, 1, 10), COUNT(*) FROM conversations
        WHERE true GROUP BY agent_id, substr(created_at, 1, 10);
    INSERT INTO agent_daily (agent_id, day, visitor_messages, answers, rated_up, rated_down)
        SELECT c.agent_id, substr(m.created_at, 1, 10), SUM(m.role = 'user'),
               SUM(m.role = 'assistant' AND m.author_id IS NULL),
               SUM(m.role = 'assistant' AND m.rating IS 'up'),
               SUM(m.role = 'assistant' AND m.rating IS 'down')
        FROM messages AS m JOIN conversations AS c ON c.id = m.conversation_id
        WHERE true GROUP BY c.agent_id, substr(m.created_at, 1, 10)
        ON CONFLICT (agent_id, day) DO UPDATE SET
            visitor_messages = excluded.visitor_messages, answers = excluded.answers,
            rated_up = excluded.rated_up, rated_down = excluded.rated_down;
    """

POSTGRES = """
    ALTER TABLE conversations ADD COLUMN trigger_id TEXT;
    ALTER TABLE messages ADD COLUMN unanswered BIGINT;
    ALTER TABLE form_submissions ADD COLUMN trigger_id TEXT;
    ALTER TABLE conversations ADD COLUMN rated_up BIGINT NOT NULL DEFAULT 0;
    ALTER TABLE conversations ADD COLUMN rated_down BIGINT NOT NULL DEFAULT 0;
    CREATE INDEX conversations_agent_user ON conversations(agent_id, user_ref, created_at, id)
        WHERE user_ref IS NOT NULL;
    CREATE INDEX conversations_agent_rated_up ON conversations(agent_id, created_at, id)
        WHERE rated_up > 0;
    CREATE INDEX conversations_agent_rated_down ON conversations(agent_id, created_at, id)
        WHERE rated_down > 0;
    CREATE INDEX conversations_agent_rated ON conversations(agent_id, created_at, id)
        WHERE rated_up > 0 OR rated_down > 0;
    CREATE INDEX messages_search ON messages USING GIN (to_tsvector('english'::regconfig, content));
    CREATE TABLE agent_daily (
        agent_id         TEXT NOT NULL,
        day              TEXT NOT NULL,
        conversations    BIGINT NOT NULL DEFAULT 0,
        visitor_messages BIGINT NOT NULL DEFAULT 0,
        answers          BIGINT NOT NULL DEFAULT 0,
        unanswered       BIGINT NOT NULL DEFAULT 0,
        rated_up         BIGINT NOT NULL DEFAULT 0,
        rated_down       BIGINT NOT NULL DEFAULT 0,
        PRIMARY KEY (agent_id, day)
    );

    CREATE TABLE message_ratings (
        message_id      TEXT PRIMARY KEY REFERENCES messages(id) ON DELETE CASCADE,
        agent_id        TEXT NOT NULL,
        conversation_id TEXT NOT NULL,
        rating          TEXT NOT NULL,
        created_at      TEXT NOT NULL
    );
    CREATE INDEX message_ratings_agent ON message_ratings(agent_id, rating, created_at, message_id);
    CREATE INDEX message_ratings_newest ON message_ratings(agent_id, created_at, message_id);

    CREATE TABLE curated_answers (
        id           TEXT PRIMARY KEY,
        agent_id     TEXT NOT NULL REFERENCES agents(id) ON DELETE CASCADE,
        team_id      TEXT NOT NULL REFERENCES teams(id) ON DELETE CASCADE,
        question     TEXT NOT NULL,
        question_key TEXT NOT NULL,
        answer       TEXT NOT NULL,
        created_at   TEXT NOT NULL,
        updated_at   TEXT NOT NULL,
        rowid        BIGINT GENERATED BY DEFAULT AS IDENTITY,
        UNIQUE (agent_id, question_key)
    );
    CREATE INDEX curated_answers_agent ON curated_answers(agent_id, created_at, id);
    CREATE INDEX curated_answers_team ON curated_answers(team_id);

    CREATE TABLE unanswered_questions (
        message_id   TEXT PRIMARY KEY REFERENCES messages(id) ON DELETE CASCADE,
        agent_id     TEXT NOT NULL,
        asked_at     TEXT NOT NULL,
        question_key TEXT NOT NULL,
        question     TEXT NOT NULL
    );
    CREATE INDEX unanswered_questions_agent ON unanswered_questions(agent_id, asked_at);

    CREATE TABLE trigger_daily (
        agent_id      TEXT NOT NULL,
        day           TEXT NOT NULL,
        trigger_id    TEXT NOT NULL,
        fired         BIGINT NOT NULL DEFAULT 0,
        converted     BIGINT NOT NULL DEFAULT 0,
        conversations BIGINT NOT NULL DEFAULT 0,
        submissions   BIGINT NOT NULL DEFAULT 0,
        PRIMARY KEY (agent_id, day, trigger_id)
    );

    -- The counters of new rows are kept by statement triggers over the rows a statement added
    -- (a transition table): one grouped upsert per statement, however many rows it wrote. A
    -- trigger per row would update one counter row once per message, and in one transaction
    -- (copy-data, a bulk load) PostgreSQL's row versions make that quadratic.
    CREATE FUNCTION agent_daily_conversations_added() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        INSERT INTO agent_daily AS t (agent_id, day, conversations)
        SELECT agent_id, substr(created_at, 1, 10), COUNT(*) FROM added
        GROUP BY agent_id, substr(created_at, 1, 10)
        ON CONFLICT (agent_id, day) DO UPDATE SET
            conversations = t.conversations + EXCLUDED.conversations;
        RETURN NULL;
    END $$;
    CREATE TRIGGER agent_daily_conversation AFTER INSERT ON conversations
        REFERENCING NEW TABLE AS added
        FOR EACH STATEMENT EXECUTE FUNCTION agent_daily_conversations_added();

    -- New messages: the day's counts, rated answers and each conversation's ratings (SQLite:
    -- agent_daily_message and message_ratings_insert).
    CREATE FUNCTION agent_daily_messages_added() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        INSERT INTO agent_daily AS t
            (agent_id, day, visitor_messages, answers, unanswered, rated_up, rated_down)
        SELECT c.agent_id, substr(m.created_at, 1, 10),
               COUNT(*) FILTER (WHERE m.role = 'user'),
               COUNT(*) FILTER (WHERE m.role = 'assistant' AND m.author_id IS NULL),
               COALESCE(SUM(m.unanswered), 0),
               COUNT(*) FILTER (WHERE m.role = 'assistant' AND m.rating = 'up'),
               COUNT(*) FILTER (WHERE m.role = 'assistant' AND m.rating = 'down')
        FROM added AS m JOIN conversations AS c ON c.id = m.conversation_id
        GROUP BY c.agent_id, substr(m.created_at, 1, 10)
        ON CONFLICT (agent_id, day) DO UPDATE SET
            visitor_messages = t.visitor_messages + EXCLUDED.visitor_messages,
            answers = t.answers + EXCLUDED.answers,
            unanswered = t.unanswered + EXCLUDED.unanswered,
            rated_up = t.rated_up + EXCLUDED.rated_up,
            rated_down = t.rated_down + EXCLUDED.rated_down;
        INSERT INTO message_ratings (message_id, agent_id, conversation_id, rating, created_at)
        SELECT m.id, c.agent_id, m.conversation_id, m.rating, m.created_at
        FROM added AS m JOIN conversations AS c ON c.id = m.conversation_id
        WHERE m.role = 'assistant' AND m.rating IS NOT NULL;
        UPDATE conversations AS c
        SET rated_up = c.rated_up + r.up, rated_down = c.rated_down + r.down
        FROM (SELECT conversation_id, COUNT(*) FILTER (WHERE rating = 'up') AS up,
                     COUNT(*) FILTER (WHERE rating = 'down') AS down
              FROM added WHERE role = 'assistant' AND rating IS NOT NULL
              GROUP BY conversation_id) AS r
        WHERE c.id = r.conversation_id;
        RETURN NULL;
    END $$;
    CREATE TRIGGER agent_daily_messages AFTER INSERT ON messages
        REFERENCING NEW TABLE AS added
        FOR EACH STATEMENT EXECUTE FUNCTION agent_daily_messages_added();

    -- A rating given or changed (one message at a time; SQLite: message_ratings_update).
    CREATE FUNCTION message_rating_changed() RETURNS trigger LANGUAGE plpgsql AS $$
    DECLARE
        agent TEXT;
    BEGIN
        SELECT agent_id INTO agent FROM conversations WHERE id = NEW.conversation_id;
        IF agent IS NULL THEN
            RETURN NULL;
        END IF;
        DELETE FROM message_ratings WHERE message_id = OLD.id;
        IF NEW.rating IS NOT NULL THEN
            INSERT INTO message_ratings (message_id, agent_id, conversation_id, rating, created_at)
            VALUES (NEW.id, agent, NEW.conversation_id, NEW.rating, NEW.created_at);
        END IF;
        UPDATE agent_daily SET
            rated_up = rated_up + (NEW.rating IS NOT DISTINCT FROM 'up')::int
                - (OLD.rating IS NOT DISTINCT FROM 'up')::int,
            rated_down = rated_down + (NEW.rating IS NOT DISTINCT FROM 'down')::int
                - (OLD.rating IS NOT DISTINCT FROM 'down')::int
        WHERE agent_id = agent AND day = substr(NEW.created_at, 1, 10);
        UPDATE conversations SET
            rated_up = rated_up + (NEW.rating IS NOT DISTINCT FROM 'up')::int
                - (OLD.rating IS NOT DISTINCT FROM 'up')::int,
            rated_down = rated_down + (NEW.rating IS NOT DISTINCT FROM 'down')::int
                - (OLD.rating IS NOT DISTINCT FROM 'down')::int
        WHERE id = NEW.conversation_id;
        RETURN NULL;
    END $$;
    CREATE TRIGGER message_rating_change AFTER UPDATE OF rating ON messages
        FOR EACH ROW WHEN (NEW.role = 'assistant' AND NEW.rating IS DISTINCT FROM OLD.rating)
        EXECUTE FUNCTION message_rating_changed();

    -- A rated answer deleted on its own: its conversation counts one rating fewer (SQLite:
    -- message_ratings_delete).
    CREATE FUNCTION message_rating_removed() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        UPDATE conversations SET
            rated_up = rated_up - (OLD.rating = 'up')::int,
            rated_down = rated_down - (OLD.rating = 'down')::int
        WHERE id = OLD.conversation_id;
        RETURN NULL;
    END $$;
    CREATE TRIGGER message_rating_delete AFTER DELETE ON messages
        FOR EACH ROW WHEN (OLD.role = 'assistant' AND OLD.rating IS NOT NULL)
        EXECUTE FUNCTION message_rating_removed();

    CREATE FUNCTION agent_daily_forget() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        DELETE FROM agent_daily WHERE agent_id = OLD.id;
        DELETE FROM trigger_daily WHERE agent_id = OLD.id;
        RETURN NULL;
    END $$;
    CREATE TRIGGER agent_daily_delete AFTER DELETE ON agents
        FOR EACH ROW EXECUTE FUNCTION agent_daily_forget();

    INSERT INTO message_ratings (message_id, agent_id, conversation_id, rating, created_at)
        SELECT m.id, c.agent_id, m.conversation_id, m.rating, m.created_at
        FROM messages AS m JOIN conversations AS c ON c.id = m.conversation_id
        WHERE m.role = 'assistant' AND m.rating IS NOT NULL;
    UPDATE conversations AS c SET rated_up = r.up, rated_down = r.down
    FROM (SELECT conversation_id, COUNT(*) FILTER (WHERE rating = 'up') AS up,
                 COUNT(*) FILTER (WHERE rating = 'down') AS down
          FROM messages WHERE role = 'assistant' AND rating IS NOT NULL
          GROUP BY conversation_id) AS r
    WHERE c.id = r.conversation_id;
    INSERT INTO agent_daily (agent_id, day, conversations)
        SELECT agent_id, substr(created_at, 1, 10), COUNT(*) FROM conversations
        GROUP BY agent_id, substr(created_at, 1, 10);
    INSERT INTO agent_daily AS t (agent_id, day, visitor_messages, answers, rated_up, rated_down)
        SELECT c.agent_id, substr(m.created_at, 1, 10), COUNT(*) FILTER (WHERE m.role = 'user'),
               COUNT(*) FILTER (WHERE m.role = 'assistant' AND m.author_id IS NULL),
               COUNT(*) FILTER (WHERE m.role = 'assistant' AND m.rating = 'up'),
               COUNT(*) FILTER (WHERE m.role = 'assistant' AND m.rating = 'down')
        FROM messages AS m JOIN conversations AS c ON c.id = m.conversation_id
        GROUP BY c.agent_id, substr(m.created_at, 1, 10)
        ON CONFLICT (agent_id, day) DO UPDATE SET
            visitor_messages = EXCLUDED.visitor_messages, answers = EXCLUDED.answers,
            rated_up = EXCLUDED.rated_up, rated_down = EXCLUDED.rated_down;
    """

# Taken away again, for the tests that build a PostgreSQL database of an earlier version.
UNDO_POSTGRES = """
DROP TRIGGER agent_daily_delete ON agents;
DROP TRIGGER agent_daily_messages ON messages;
DROP TRIGGER agent_daily_conversation ON conversations;
DROP TRIGGER message_rating_change ON messages;
DROP TRIGGER message_rating_delete ON messages;
DROP FUNCTION agent_daily_forget, agent_daily_messages_added, agent_daily_conversations_added,
    message_rating_changed, message_rating_removed;
DROP TABLE agent_daily, message_ratings, curated_answers, unanswered_questions, trigger_daily;
DROP INDEX messages_search;
DROP INDEX conversations_agent_user;
DROP INDEX conversations_agent_rated_up, conversations_agent_rated_down, conversations_agent_rated;
ALTER TABLE conversations DROP COLUMN trigger_id, DROP COLUMN rated_up, DROP COLUMN rated_down;
ALTER TABLE messages DROP COLUMN unanswered;
ALTER TABLE form_submissions DROP COLUMN trigger_id;
"""
