"""Version 8: MCP tools: a fourth execution type (SQLite cannot change a CHECK constraint, so the
table is rebuilt; no other table refers to it), the server's address, headers, the
names to expose and the functions it exposed, and how many tools a row counts for
against the plan's limit.
"""

SQLITE = """
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
    """

POSTGRES = """
    ALTER TABLE tools DROP CONSTRAINT tools_execution_type_check;
    ALTER TABLE tools ADD CONSTRAINT tools_execution_type_check
        CHECK (execution_type IN ('mock', 'http', 'form', 'mcp'));
    ALTER TABLE tools ADD COLUMN mcp_url TEXT, ADD COLUMN mcp_headers TEXT,
        ADD COLUMN mcp_tools TEXT, ADD COLUMN mcp_server_tools TEXT,
        ADD COLUMN mcp_listed_at TEXT, ADD COLUMN counts_as INTEGER NOT NULL DEFAULT 1;
    """

# Taken away again, for the tests that build a PostgreSQL database of an earlier version.
UNDO_POSTGRES = """
ALTER TABLE tools DROP CONSTRAINT tools_execution_type_check;
ALTER TABLE tools ADD CONSTRAINT tools_execution_type_check
    CHECK (execution_type IN ('mock', 'http', 'form'));
ALTER TABLE tools DROP COLUMN mcp_url, DROP COLUMN mcp_headers, DROP COLUMN mcp_tools,
    DROP COLUMN mcp_server_tools, DROP COLUMN mcp_listed_at, DROP COLUMN counts_as;
"""
