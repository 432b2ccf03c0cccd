"""Agents."""

from __future__ import annotations

from dataclasses import dataclass

from agentsvc.db import Tx


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


_COLUMNS = (
    "id, team_id, name, slug, model, temperature, system_prompt, created_at, updated_at, language"
)


async def insert(tx: Tx, agent: Agent) -> None:
    await tx.execute(
        f"INSERT INTO agents ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
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
        ),
    )


async def get(tx: Tx, team_id: str, agent_id: str) -> Agent | None:
    """Return the team's agent, or None when it does not exist or belongs to another team."""
    rows = await tx.fetchall(
        f"SELECT {_COLUMNS} FROM agents WHERE id = ? AND team_id = ?", (agent_id, team_id)
    )
    return Agent(*rows[0]) if rows else None


async def get_public(tx: Tx, agent_id: str) -> Agent | None:
    """Return an agent by id alone, for public endpoints addressed by agent id."""
    rows = await tx.fetchall(f"SELECT {_COLUMNS} FROM agents WHERE id = ?", (agent_id,))
    return Agent(*rows[0]) if rows else None


async def list_for_team(tx: Tx, team_id: str) -> list[Agent]:
    rows = await tx.fetchall(
        f"SELECT {_COLUMNS} FROM agents WHERE team_id = ? ORDER BY created_at DESC, rowid DESC",
        (team_id,),
    )
    return [Agent(*r) for r in rows]


async def slugs_like(tx: Tx, team_id: str, base: str) -> set[str]:
    """Return the team's slugs equal to `base` or of the form `base-N`."""
    rows = await tx.fetchall(
        "SELECT slug FROM agents WHERE team_id = ? AND (slug = ? OR substr(slug, 1, ?) = ?)",
        (team_id, base, len(base) + 1, f"{base}-"),
    )
    suffix = len(base) + 1
    return {r[0] for r in rows if r[0] == base or r[0][suffix:].isdigit()}


async def update(tx: Tx, team_id: str, agent_id: str, fields: dict, now: str) -> bool:
    """Update some of name, model, temperature, system_prompt, language; False when absent."""
    allowed = {"name", "model", "temperature", "system_prompt", "language"}
    assert set(fields) <= allowed, fields
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
