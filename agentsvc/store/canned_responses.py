"""A team's canned responses: replies kept at hand, inserted in the inbox by shortcut."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from agentsvc.db import Tx


@dataclass(frozen=True, slots=True)
class CannedResponse:
    id: str
    team_id: str
    shortcut: str
    title: str
    content: str
    created_at: str
    updated_at: str


_COLUMNS = "id, team_id, shortcut, title, content, created_at, updated_at"
_FIELDS = frozenset({"shortcut", "title", "content"})


async def list_for_team(tx: Tx, team_id: str) -> list[CannedResponse]:
    """The team's canned responses by shortcut."""
    rows = await tx.fetchall(
        f"SELECT {_COLUMNS} FROM canned_responses WHERE team_id = ? ORDER BY shortcut",
        (team_id,),
    )
    return [CannedResponse(*r) for r in rows]


async def get(tx: Tx, team_id: str, canned_id: str) -> CannedResponse | None:
    rows = await tx.fetchall(
        f"SELECT {_COLUMNS} FROM canned_responses WHERE id = ? AND team_id = ?",
        (canned_id, team_id),
    )
    return CannedResponse(*rows[0]) if rows else None


async def count_for_team(tx: Tx, team_id: str) -> int:
    return int(
        await tx.fetchval("SELECT COUNT(*) FROM canned_responses WHERE team_id = ?", (team_id,))
    )


async def insert(tx: Tx, canned: CannedResponse) -> None:
    """Insert a canned response (ConstraintViolation for a shortcut the team has)."""
    await tx.execute(
        f"INSERT INTO canned_responses ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?)",
        (
            canned.id,
            canned.team_id,
            canned.shortcut,
            canned.title,
            canned.content,
            canned.created_at,
            canned.updated_at,
        ),
    )


async def update(tx: Tx, team_id: str, canned_id: str, fields: dict[str, Any], now: str) -> bool:
    """Change some of shortcut, title and content; False when not the team's."""
    assert set(fields) <= _FIELDS, fields
    assignments = "".join(f"{col} = ?, " for col in fields)
    changed = await tx.execute(
        f"UPDATE canned_responses SET {assignments}updated_at = ?"  # noqa: S608
        " WHERE id = ? AND team_id = ?",
        (*fields.values(), now, canned_id, team_id),
    )
    return changed > 0


async def delete(tx: Tx, team_id: str, canned_id: str) -> bool:
    changed = await tx.execute(
        "DELETE FROM canned_responses WHERE id = ? AND team_id = ?", (canned_id, team_id)
    )
    return changed > 0
