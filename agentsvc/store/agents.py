"""Agents."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from agentsvc.db import Tx
from agentsvc.store.rows import dump_json, load_json


@dataclass(frozen=True, slots=True)
class Agent:
    id: str
    team_id: str
    name: str
    slug: str
    model: str
    temperature: float
    system_prompt: str
    created_at: str
    updated_at: str
    language: str = "english"
    # Handoff to a person: {enabled, businessHours, offlineMessage, notify} (services.handoff).
    handoff: dict[str, Any] | None = None
    # The widget's look: {appearance, language, strings, starters, showSources}
    # (services.widget.look).
    widget: dict[str, Any] | None = None
    # Conversations and submissions older than this many days are purged; None: kept.
    retention_days: int | None = None
    version: int = 1  # the live version's number (services.agents.versions)
    versioning: str = "live"  # "draft": changes of what it does wait in the draft
    # The draft: {basedOn, updatedAt, snapshot, authorUserId, authorKeyId}; None: no draft.
    draft: dict[str, Any] | None = None
    # The running experiment: {id, variants: [{version, weight}]}; None: none runs.
    experiment: dict[str, Any] | None = None
    # Publishing the draft first runs this evaluation set: {evalsetId, minPassRate, maxDrop}.
    publish_gate: dict[str, Any] | None = None
    # Its tools as its versions keep them (services.agents.versions); None: not recorded yet.
    tools_snapshot: list[dict[str, Any]] | None = None
    # Its guardrails as stored (services.guardrails.settings); None: none.
    guardrails: dict[str, Any] | None = None


_COLUMNS = (
    "id, team_id, name, slug, model, temperature, system_prompt, created_at, updated_at, language"
)
_SELECT = (
    f"SELECT {_COLUMNS}, handoff, widget, retention_days, version, versioning, draft, experiment,"
    " publish_gate, tools_snapshot, guardrails FROM agents"
)
_JSON_COLUMNS = (
    "handoff",
    "widget",
    "draft",
    "experiment",
    "publish_gate",
    "tools_snapshot",
    "guardrails",
)


def _agent(row: Any) -> Agent:
    return Agent(
        *row[:-10],
        handoff=load_json(row[-10]),
        widget=load_json(row[-9]),
        retention_days=row[-8],
        version=row[-7],
        versioning=row[-6],
        draft=load_json(row[-5]),
        experiment=load_json(row[-4]),
        publish_gate=load_json(row[-3]),
        tools_snapshot=load_json(row[-2]),
        guardrails=load_json(row[-1]),
    )


async def insert(tx: Tx, agent: Agent) -> None:
    await tx.execute(
        f"INSERT INTO agents ({_COLUMNS}, widget, tools_snapshot)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            agent.id,
            agent.team_id,
            agent.name,
            agent.slug,
            agent.model,
            agent.temperature,
            agent.system_prompt,
            agent.created_at,
            agent.updated_at,
            agent.language,
            dump_json(agent.widget),
            dump_json(agent.tools_snapshot),
        ),
    )


async def get(tx: Tx, team_id: str, agent_id: str) -> Agent | None:
    """Return the team's agent, or None when it does not exist or belongs to another team."""
    rows = await tx.fetchall(f"{_SELECT} WHERE id = ? AND team_id = ?", (agent_id, team_id))
    return _agent(rows[0]) if rows else None


_LOCKED = {"sqlite": "", "postgresql": " FOR UPDATE"}  # SQLite: one writer at a time


async def get_for_update(tx: Tx, team_id: str, agent_id: str) -> Agent | None:
    """The team's agent, its row locked until the transaction ends (PostgreSQL)."""
    rows = await tx.fetchall(
        f"{_SELECT} WHERE id = ? AND team_id = ?{_LOCKED[tx.dialect]}", (agent_id, team_id)
    )
    return _agent(rows[0]) if rows else None


async def get_public(tx: Tx, agent_id: str) -> Agent | None:
    """Return an agent by id alone, for public endpoints addressed by agent id."""
    rows = await tx.fetchall(f"{_SELECT} WHERE id = ?", (agent_id,))
    return _agent(rows[0]) if rows else None


async def list_for_team(tx: Tx, team_id: str) -> list[Agent]:
    rows = await tx.fetchall(
        f"{_SELECT} WHERE team_id = ? ORDER BY created_at DESC, rowid DESC", (team_id,)
    )
    return [_agent(r) for r in rows]


async def slugs_like(tx: Tx, team_id: str, base: str) -> set[str]:
    """Return the team's slugs equal to `base` or of the form `base-N`."""
    rows = await tx.fetchall(
        "SELECT slug FROM agents WHERE team_id = ? AND (slug = ? OR substr(slug, 1, ?) = ?)",
        (team_id, base, len(base) + 1, f"{base}-"),
    )
    suffix = len(base) + 1
    return {r[0] for r in rows if r[0] == base or r[0][suffix:].isdigit()}


async def update(tx: Tx, team_id: str, agent_id: str, fields: dict, now: str) -> bool:
    """Update some of name, model, temperature, system_prompt, language, handoff, widget,
    retention_days, version, versioning, draft, experiment, publish_gate, tools_snapshot,
    guardrails; False when absent."""
    allowed = {
        "name",
        "model",
        "temperature",
        "system_prompt",
        "language",
        "retention_days",
        "version",
        "versioning",
        *_JSON_COLUMNS,
    }
    assert set(fields) <= allowed, fields
    fields = {k: dump_json(v) if k in _JSON_COLUMNS else v for k, v in fields.items()}
    assignments = ", ".join(f"{col} = ?" for col in fields)
    changed = await tx.execute(
        f"UPDATE agents SET {assignments}{', ' if fields else ''}updated_at = ?"  # noqa: S608
        " WHERE id = ? AND team_id = ?",
        (*fields.values(), now, agent_id, team_id),
    )
    return changed > 0


async def delete(tx: Tx, team_id: str, agent_id: str) -> bool:
    """Delete an agent; foreign keys cascade to everything it owns."""
    changed = await tx.execute(
        "DELETE FROM agents WHERE id = ? AND team_id = ?", (agent_id, team_id)
    )
    return changed > 0
