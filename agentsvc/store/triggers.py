"""Triggers: rows, the public feed, stats counters, and the form-tool check of `show_form`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from agentsvc.db import Tx
from agentsvc.store.rows import dump_json, load_json


@dataclass(frozen=True, slots=True)
class Trigger:
    id: str
    agent_id: str
    team_id: str
    name: str
    description: str | None
    trigger_type: str
    conditions: dict[str, Any]
    action_type: str
    action_config: dict[str, Any]
    trigger_once: bool
    is_enabled: bool
    priority: int
    created_at: str
    updated_at: str


_COLUMNS = (
    "id, agent_id, team_id, name, description, trigger_type, conditions, action_type,"
    " action_config, trigger_once, is_enabled, priority, created_at, updated_at"
)
# Lower priority first; creation order breaks ties so the order is stable.
_ORDER = "ORDER BY priority ASC, created_at ASC, rowid ASC"
# Columns a partial update may set (JSON columns are serialised by `update`).
UPDATABLE = {
    "name",
    "description",
    "trigger_type",
    "conditions",
    "action_type",
    "action_config",
    "trigger_once",
    "is_enabled",
    "priority",
}
_JSON_COLUMNS = {"conditions", "action_config"}


def _from_row(row: Any) -> Trigger:
    return Trigger(
        id=row[0],
        agent_id=row[1],
        team_id=row[2],
        name=row[3],
        description=row[4],
        trigger_type=row[5],
        conditions=load_json(row[6]),
        action_type=row[7],
        action_config=load_json(row[8]),
        trigger_once=bool(row[9]),
        is_enabled=bool(row[10]),
        priority=row[11],
        created_at=row[12],
        updated_at=row[13],
    )


async def insert(tx: Tx, trigger: Trigger) -> None:
    await tx.execute(
        f"INSERT INTO triggers ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            trigger.id,
            trigger.agent_id,
            trigger.team_id,
            trigger.name,
            trigger.description,
            trigger.trigger_type,
            dump_json(trigger.conditions),
            trigger.action_type,
            dump_json(trigger.action_config),
            int(trigger.trigger_once),
            int(trigger.is_enabled),
            trigger.priority,
            trigger.created_at,
            trigger.updated_at,
        ),
    )


async def get(tx: Tx, team_id: str, trigger_id: str) -> Trigger | None:
    """Return the team's trigger, or None when absent or another team's."""
    rows = await tx.fetchall(
        f"SELECT {_COLUMNS} FROM triggers WHERE id = ? AND team_id = ?", (trigger_id, team_id)
    )
    return _from_row(rows[0]) if rows else None


async def list_for_agent(tx: Tx, agent_id: str) -> list[Trigger]:
    """Return every trigger of an agent in execution order."""
    rows = await tx.fetchall(
        f"SELECT {_COLUMNS} FROM triggers WHERE agent_id = ? {_ORDER}", (agent_id,)
    )
    return [_from_row(r) for r in rows]


_TOOL_ID_OF_ACTION = {
    "sqlite": "json_extract(t.action_config, '$.toolId')",
    "postgresql": "(t.action_config::jsonb ->> 'toolId')",
}


async def list_for_widget(tx: Tx, agent_id: str) -> list[Trigger]:
    """Return the enabled triggers the widget can run, in execution order.

    A `show_form` trigger whose form tool was since disabled or deleted is left out, so the
    widget never receives an action it cannot perform.
    """
    tool_id = _TOOL_ID_OF_ACTION[tx.dialect]
    rows = await tx.fetchall(
        f"SELECT {_COLUMNS} FROM triggers t WHERE agent_id = ? AND is_enabled = 1"
        " AND (action_type != 'show_form' OR EXISTS (SELECT 1 FROM tools"
        f"   WHERE tools.id = {tool_id}"
        "   AND tools.agent_id = t.agent_id AND tools.execution_type = 'form'"
        f"   AND tools.is_enabled = 1)) {_ORDER}",
        (agent_id,),
    )
    return [_from_row(r) for r in rows]


async def update(tx: Tx, team_id: str, trigger_id: str, fields: dict[str, Any], now: str) -> bool:
    """Set some columns of a trigger; return False when it does not exist for the team."""
    assert set(fields) <= UPDATABLE, fields
    values = [
        dump_json(v) if k in _JSON_COLUMNS else int(v) if isinstance(v, bool) else v
        for k, v in fields.items()
    ]
    assignments = "".join(f"{col} = ?, " for col in fields)
    changed = await tx.execute(
        f"UPDATE triggers SET {assignments}updated_at = ? WHERE id = ? AND team_id = ?",
        (*values, now, trigger_id, team_id),
    )
    return changed > 0


async def toggle(tx: Tx, team_id: str, trigger_id: str, now: str) -> bool:
    """Invert `is_enabled` in one statement (two concurrent toggles both count)."""
    changed = await tx.execute(
        "UPDATE triggers SET is_enabled = 1 - is_enabled, updated_at = ?"
        " WHERE id = ? AND team_id = ?",
        (now, trigger_id, team_id),
    )
    return changed > 0


async def delete(tx: Tx, team_id: str, trigger_id: str) -> bool:
    changed = await tx.execute(
        "DELETE FROM triggers WHERE id = ? AND team_id = ?", (trigger_id, team_id)
    )
    return changed > 0


async def stats_for_agent(tx: Tx, agent_id: str) -> list[tuple[str, int, int]]:
    """Return (trigger id, fired count, converted count) for every trigger of an agent."""
    rows = await tx.fetchall(
        f"SELECT id, fired_count, converted_count FROM triggers WHERE agent_id = ? {_ORDER}",
        (agent_id,),
    )
    return [(r[0], r[1], r[2]) for r in rows]


async def is_enabled_form_tool(tx: Tx, agent_id: str, tool_id: str) -> bool:
    """Return whether tool_id is an enabled form tool of the agent."""
    rows = await tx.fetchall(
        "SELECT 1 FROM tools WHERE id = ? AND agent_id = ? AND execution_type = 'form'"
        " AND is_enabled = 1",
        (tool_id, agent_id),
    )
    return bool(rows)
