"""Tools of agents (JSON columns hold JSON text; NULL means not set)."""

from __future__ import annotations

from dataclasses import astuple, dataclass
from typing import Any

from agentsvc.db import Tx
from agentsvc.store.rows import dump_json, load_json


@dataclass(frozen=True, slots=True)
class Tool:
    id: str
    agent_id: str
    team_id: str
    name: str
    description: str
    execution_type: str  # "mock" | "http" | "form" | "mcp"
    input_schema: dict
    is_enabled: bool
    display_config: dict | None
    mock_response: str | None
    http_url: str | None
    http_method: str | None
    http_headers: dict | None
    form_schema: dict | None
    form_execution_mode: str | None
    form_webhook_url: str | None
    form_client_handler: str | None
    form_post_actions: list | None
    form_webhook_secret: str | None  # sealed with the secret box
    created_at: str
    updated_at: str
    mcp_url: str | None = None
    mcp_headers: dict | None = None
    mcp_tools: list | None = None  # the server's names to expose; None: all
    # The functions exposed, as last listed: {name, serverName, description, inputSchema}.
    mcp_server_tools: list | None = None
    mcp_listed_at: str | None = None
    counts_as: int = 1  # tools this row is against the plan's per-agent limit
    requires_approval: bool = False  # a person approves each call first (services.approvals)
    approval_timeout_seconds: int | None = None  # how long a call waits for that


_FIELDS = tuple(Tool.__dataclass_fields__)
_COLUMNS = ", ".join(_FIELDS)
_JSON = {
    "input_schema",
    "display_config",
    "http_headers",
    "form_schema",
    "form_post_actions",
    "mcp_headers",
    "mcp_tools",
    "mcp_server_tools",
}
_FLAGS = {"is_enabled", "requires_approval"}
# Columns a partial update may set.
UPDATABLE = frozenset(_FIELDS) - {"id", "agent_id", "team_id", "created_at", "updated_at"}


def _to_db(name: str, value: Any) -> Any:
    if name in _JSON:
        return dump_json(value)
    if name in _FLAGS:
        return 1 if value else 0
    return value


def _from_row(row: Any) -> Tool:
    values = {}
    for name, value in zip(_FIELDS, row, strict=True):
        if name in _JSON:
            value = load_json(value)
        elif name in _FLAGS:
            value = bool(value)
        values[name] = value
    return Tool(**values)


async def insert(tx: Tx, tool: Tool) -> None:
    placeholders = ", ".join("?" for _ in _FIELDS)
    await tx.execute(
        f"INSERT INTO tools ({_COLUMNS}) VALUES ({placeholders})",
        tuple(_to_db(n, v) for n, v in zip(_FIELDS, astuple(tool), strict=True)),
    )


async def get(tx: Tx, team_id: str, tool_id: str) -> Tool | None:
    """Return the team's tool, or None when absent or another team's."""
    rows = await tx.fetchall(
        f"SELECT {_COLUMNS} FROM tools WHERE id = ? AND team_id = ?", (tool_id, team_id)
    )
    return _from_row(rows[0]) if rows else None


async def get_public(tx: Tx, tool_id: str) -> Tool | None:
    """Return a tool by id alone, for public endpoints addressed by tool id."""
    rows = await tx.fetchall(f"SELECT {_COLUMNS} FROM tools WHERE id = ?", (tool_id,))
    return _from_row(rows[0]) if rows else None


async def get_by_name(tx: Tx, agent_id: str, name: str) -> Tool | None:
    """Return an agent's tool by its name."""
    rows = await tx.fetchall(
        f"SELECT {_COLUMNS} FROM tools WHERE agent_id = ? AND name = ?", (agent_id, name)
    )
    return _from_row(rows[0]) if rows else None


async def enabled_forms_named(tx: Tx, team_id: str, name: str, limit: int = 2) -> list[Tool]:
    """Up to `limit` enabled form tools of that name among the team's agents, oldest first."""
    rows = await tx.fetchall(
        f"SELECT {_COLUMNS} FROM tools WHERE team_id = ? AND name = ?"
        " AND execution_type = 'form' AND is_enabled = 1 ORDER BY created_at, rowid LIMIT ?",
        (team_id, name, limit),
    )
    return [_from_row(r) for r in rows]


async def list_for_agent(tx: Tx, team_id: str, agent_id: str) -> list[Tool]:
    """Return the team agent's tools, oldest first."""
    rows = await tx.fetchall(
        f"SELECT {_COLUMNS} FROM tools WHERE agent_id = ? AND team_id = ?"
        " ORDER BY created_at, rowid",
        (agent_id, team_id),
    )
    return [_from_row(r) for r in rows]


async def list_enabled_for_agent(tx: Tx, agent_id: str) -> list[Tool]:
    """Return an agent's enabled tools, oldest first (what the chat loop offers the model)."""
    rows = await tx.fetchall(
        f"SELECT {_COLUMNS} FROM tools WHERE agent_id = ? AND is_enabled = 1"
        " ORDER BY created_at, rowid",
        (agent_id,),
    )
    return [_from_row(r) for r in rows]


async def count_for_agent(tx: Tx, agent_id: str, except_id: str | None = None) -> int:
    """The agent's tools against the plan's limit (an MCP tool counts its functions)."""
    sql = "SELECT COALESCE(SUM(counts_as), 0) FROM tools WHERE agent_id = ?"
    params: tuple = (agent_id,)
    if except_id is not None:
        sql += " AND id <> ?"
        params = (agent_id, except_id)
    rows = await tx.fetchall(sql, params)
    return int(rows[0][0])


async def name_taken(tx: Tx, agent_id: str, name: str, except_id: str | None = None) -> bool:
    """Whether another tool of the agent already has this name."""
    if except_id is None:
        sql, params = "SELECT 1 FROM tools WHERE agent_id = ? AND name = ?", (agent_id, name)
    else:
        sql = "SELECT 1 FROM tools WHERE agent_id = ? AND name = ? AND id <> ?"
        params = (agent_id, name, except_id)
    rows = await tx.fetchall(sql, params)
    return bool(rows)


async def update(tx: Tx, team_id: str, tool_id: str, fields: dict[str, Any], now: str) -> bool:
    """Set some columns of a tool (see UPDATABLE); return False when absent."""
    assert set(fields) <= UPDATABLE, fields
    assignments = "".join(f"{col} = ?, " for col in fields)
    changed = await tx.execute(
        f"UPDATE tools SET {assignments}updated_at = ? WHERE id = ? AND team_id = ?",
        (*(_to_db(k, v) for k, v in fields.items()), now, tool_id, team_id),
    )
    return changed > 0


async def delete(tx: Tx, team_id: str, tool_id: str) -> bool:
    changed = await tx.execute("DELETE FROM tools WHERE id = ? AND team_id = ?", (tool_id, team_id))
    return changed > 0
