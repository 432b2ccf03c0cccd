"""Numbered schema migrations applied after `schema.sql`.

`schema.sql` is version 1 and always holds the current schema for new databases; each
change after a release is appended here as SQL (migration N+2 is MIGRATIONS[N]) and also
folded into `schema.sql`. Each runs in one transaction and bumps `PRAGMA user_version`.
"""

MIGRATIONS: list[str] = [
    # 2: an agent's language, for the word forms of its builtin answers and retrieval.
    "ALTER TABLE agents ADD COLUMN language TEXT NOT NULL DEFAULT 'english';",
    # 3: form submissions keep the widget session that made them (client results must come
    # from it) and the size of their files (the per-agent file quota), counted for the
    # submissions already stored from their formData descriptors.
    """
    ALTER TABLE form_submissions ADD COLUMN session_id TEXT;
    ALTER TABLE form_submissions ADD COLUMN files_bytes INTEGER NOT NULL DEFAULT 0;
    UPDATE form_submissions SET files_bytes = (
        SELECT COALESCE(SUM(json_extract(d.value, '$.size')), 0)
        FROM json_each(form_submissions.files) AS f
        JOIN json_each(form_submissions.form_data) AS d ON d.key = f.key
    ) WHERE files IS NOT NULL;
    CREATE INDEX form_submissions_agent_files ON form_submissions(agent_id, files_bytes)
        WHERE files_bytes > 0;
    """,
    # 4: how a conversation's end user was vouched for (signed identity). Existing users
    # were recorded before the distinction: NULL, shown as unverified.
    """
    ALTER TABLE conversations ADD COLUMN user_verified_by TEXT
        CHECK (user_verified_by IN ('userToken', 'userHash', 'apiKey'));
    """,
    # 5: outbox bodies are sealed from now on. Bodies kept in clear before carry magic-link
    # and invitation tokens (SQL cannot seal them): they are removed, and secure_delete
    # overwrites the freed bytes instead of leaving them in the file's free space. The
    # links also went to the log; an invitation can be sent again.
    """
    PRAGMA secure_delete = ON;
    ALTER TABLE mail_outbox RENAME COLUMN body TO sealed_body;
    UPDATE mail_outbox SET sealed_body = '';
    """,
    # 6: totals kept as counters by triggers (lists and analytics stop counting rows), filled
    # from the rows there are.
    """
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
    """,
    # 7: handoff to a person: agents' handoff settings, members' notification choice,
    # conversations' status and assignee, members' replies, and the conversation event log.
    """
    ALTER TABLE agents ADD COLUMN handoff TEXT;
    ALTER TABLE memberships ADD COLUMN notify_handoffs INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE conversations ADD COLUMN status TEXT NOT NULL DEFAULT 'bot'
        CHECK (status IN ('bot', 'waiting', 'human', 'closed'));
    ALTER TABLE conversations ADD COLUMN assignee_id TEXT REFERENCES users(id) ON DELETE SET NULL;
    ALTER TABLE conversations ADD COLUMN handoff_at TEXT;
    ALTER TABLE conversations ADD COLUMN first_reply_seconds REAL;
    ALTER TABLE conversations ADD COLUMN contact_email TEXT;
    ALTER TABLE conversations ADD COLUMN visitor_seen_at TEXT;
    CREATE INDEX conversations_agent_status ON conversations(agent_id, status, created_at, id)
        WHERE status <> 'bot';
    ALTER TABLE messages ADD COLUMN author_id TEXT;
    ALTER TABLE messages ADD COLUMN author_name TEXT;
    CREATE TABLE conversation_events (
        id              INTEGER PRIMARY KEY AUTOINCREMENT,
        conversation_id TEXT NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
        team_id         TEXT NOT NULL,
        agent_id        TEXT NOT NULL,
        kind            TEXT NOT NULL CHECK (kind IN ('message', 'status')),
        message_id      TEXT,
        status          TEXT,
        assignee_id     TEXT,
        assignee_name   TEXT,
        inbox           INTEGER NOT NULL,
        created_at      TEXT NOT NULL
    );
    CREATE INDEX conversation_events_conversation ON conversation_events(conversation_id, id);
    CREATE INDEX conversation_events_team ON conversation_events(team_id, id) WHERE inbox = 1;
    """,
    # 8: MCP tools: a fourth execution type (SQLite cannot change a CHECK constraint, so the
    # table is rebuilt; no other table refers to it), the server's address, headers, the
    # names to expose and the functions it exposed, and how many tools a row counts for
    # against the plan's limit.
    """
    ALTER TABLE tools RENAME TO tools_before_mcp;
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
        form_webhook_secret TEXT,
        mcp_url             TEXT,
        mcp_headers         TEXT,
        mcp_tools           TEXT,
        mcp_server_tools    TEXT,
        mcp_listed_at       TEXT,
        counts_as           INTEGER NOT NULL DEFAULT 1,
        created_at          TEXT NOT NULL,
        updated_at          TEXT NOT NULL,
        UNIQUE (agent_id, name)
    );
    INSERT INTO tools (rowid, id, agent_id, team_id, name, description, execution_type,
        input_schema, is_enabled, display_config, mock_response, http_url, http_method,
        http_headers, form_schema, form_execution_mode, form_webhook_url, form_client_handler,
        form_post_actions, form_webhook_secret, created_at, updated_at)
        SELECT rowid, id, agent_id, team_id, name, description, execution_type,
        input_schema, is_enabled, display_config, mock_response, http_url, http_method,
        http_headers, form_schema, form_execution_mode, form_webhook_url, form_client_handler,
        form_post_actions, form_webhook_secret, created_at, updated_at
        FROM tools_before_mcp ORDER BY rowid;
    DROP TABLE tools_before_mcp;
    CREATE INDEX tools_team ON tools(team_id);
    """,
    # 9: the widget's look per agent (appearance, language, strings, starters), JSON.
    """
    ALTER TABLE agents ADD COLUMN widget TEXT;
    """,
    # 10: event webhooks (subscriptions, the events they want, their delivery outbox and
    # attempt log), agents' retention of conversations and submissions, the audit log.
    """
    ALTER TABLE agents ADD COLUMN retention_days INTEGER;
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
    -- form_deliveries are (services/forms/delivery.py drains both).
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
    """,
    # 11: getting data out: the conversation search (messages_fts over every message, stored
    # ones indexed here), the trigger a chat or form came from, whether an AI answer found
    # nothing, rated answers by agent, curated answers, unanswered questions and the daily
    # figures (filled from the rows there are; answers stored before are not classified).
    """
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
    """,
    # ── 12 (issue 29, `people`): nobody sees a member's e-mail address. Replies and
    # handoff events stored before named an unnamed member by their address: they now
    # carry the member's display name, else the team's name. Teams named after their
    # owner's whole address ("ana@example.com's team") are called "Support".
    # (No schema change on SQLite: the audit log orders by its implicit rowid.)
    """
    UPDATE teams SET name = 'Support' WHERE name IN (
        SELECT u.email || '''s team' FROM users AS u WHERE u.id = teams.owner_user_id
    );
    UPDATE messages SET author_name = COALESCE(
        (SELECT NULLIF(TRIM(u.name), '') FROM users AS u WHERE u.id = messages.author_id),
        (SELECT t.name FROM conversations AS c JOIN teams AS t ON t.id = c.team_id
         WHERE c.id = messages.conversation_id)
    ) WHERE author_id IS NOT NULL AND author_name LIKE '%@%';
    UPDATE conversation_events SET assignee_name = COALESCE(
        (SELECT NULLIF(TRIM(u.name), '') FROM users AS u
         WHERE u.id = conversation_events.assignee_id),
        (SELECT t.name FROM teams AS t WHERE t.id = conversation_events.team_id)
    ) WHERE assignee_id IS NOT NULL AND assignee_name LIKE '%@%';
    """,
    # ── end of 12 (issue 29, `people`)
]
