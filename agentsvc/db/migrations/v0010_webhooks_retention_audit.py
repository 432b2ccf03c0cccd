"""Version 10: event webhooks (subscriptions, the events they want, their delivery outbox and
attempt log), agents' retention of conversations and submissions, the audit log.
"""

SQLITE = """
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
    """

POSTGRES = """
    ALTER TABLE agents ADD COLUMN retention_days BIGINT;
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
        attempts         BIGINT NOT NULL DEFAULT 0,
        cycle_start      BIGINT NOT NULL DEFAULT 0, -- attempts made before the current schedule
        next_attempt_at  TEXT,
        lease_until      TEXT,
        last_status_code BIGINT,
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
        id            BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
        delivery_id   TEXT NOT NULL REFERENCES webhook_deliveries(id) ON DELETE CASCADE,
        attempt       BIGINT NOT NULL,
        started_at    TEXT NOT NULL,
        status_code   BIGINT,
        latency_ms    BIGINT NOT NULL,
        success       BIGINT NOT NULL,
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
    """

# Taken away again, for the tests that build a PostgreSQL database of an earlier version.
UNDO_POSTGRES = """
DROP TABLE audit_log, webhook_delivery_attempts, webhook_deliveries, webhook_events, webhooks;
ALTER TABLE agents DROP COLUMN retention_days;
"""
