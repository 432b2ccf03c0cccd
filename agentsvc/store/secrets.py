"""Team secrets: named values sealed with the secret box (values never leave sealed)."""

from __future__ import annotations

from dataclasses import dataclass

from agentsvc.db import Tx


@dataclass(frozen=True, slots=True)
class SecretInfo:
    """A secret's name and times; the value is deliberately not part of it."""

    name: str
    created_at: str
    updated_at: str


async def list_for_team(tx: Tx, team_id: str) -> list[SecretInfo]:
    rows = await tx.fetchall(
        "SELECT name, created_at, updated_at FROM team_secrets WHERE team_id = ? ORDER BY name",
        (team_id,),
    )
    return [SecretInfo(*r) for r in rows]


async def sealed_values(tx: Tx, team_id: str, names: set[str]) -> dict[str, str]:
    """Return the sealed values of those of `names` the team has."""
    if not names:
        return {}
    marks = ", ".join("?" for _ in names)
    rows = await tx.fetchall(
        f"SELECT name, sealed_value FROM team_secrets WHERE team_id = ? AND name IN ({marks})",
        (team_id, *sorted(names)),
    )
    return {r[0]: r[1] for r in rows}


async def upsert(tx: Tx, team_id: str, name: str, sealed: str, now: str) -> SecretInfo:
    """Create or replace a secret and return its info."""
    await tx.execute(
        "INSERT INTO team_secrets (team_id, name, sealed_value, created_at, updated_at)"
        " VALUES (?, ?, ?, ?, ?) ON CONFLICT (team_id, name)"
        " DO UPDATE SET sealed_value = excluded.sealed_value, updated_at = excluded.updated_at",
        (team_id, name, sealed, now, now),
    )
    rows = await tx.fetchall(
        "SELECT name, created_at, updated_at FROM team_secrets WHERE team_id = ? AND name = ?",
        (team_id, name),
    )
    return SecretInfo(*rows[0])


async def delete(tx: Tx, team_id: str, name: str) -> bool:
    changed = await tx.execute(
        "DELETE FROM team_secrets WHERE team_id = ? AND name = ?", (team_id, name)
    )
    return changed > 0
