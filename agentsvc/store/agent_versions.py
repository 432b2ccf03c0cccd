"""An agent's versions: numbered snapshots of its behaviour (JSON), newest number last."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from agentsvc.db import Tx
from agentsvc.store.rows import dump_json, load_json


@dataclass(frozen=True, slots=True)
class AgentVersion:
    agent_id: str
    number: int
    snapshot: dict[str, Any]
    note: str
    author_user_id: str | None
    author_key_id: str | None
    created_at: str
    author_name: str | None = None  # the member's name now (read with the version)
    key_name: str | None = None  # the API key's name now


_SELECT = (
    "SELECT v.agent_id, v.number, v.snapshot, v.note, v.author_user_id, v.author_key_id,"
    " v.created_at, u.name, k.name FROM agent_versions v"
    " LEFT JOIN users u ON u.id = v.author_user_id"
    " LEFT JOIN api_keys k ON k.id = v.author_key_id"
)


def _version(row: Any) -> AgentVersion:
    return AgentVersion(row[0], row[1], load_json(row[2]), *row[3:])


async def insert(tx: Tx, version: AgentVersion) -> None:
    await tx.execute(
        "INSERT INTO agent_versions"
        " (agent_id, number, snapshot, note, author_user_id, author_key_id, created_at)"
        " VALUES (?, ?, ?, ?, ?, ?, ?)",
        (
            version.agent_id,
            version.number,
            dump_json(version.snapshot),
            version.note,
            version.author_user_id,
            version.author_key_id,
            version.created_at,
        ),
    )


async def latest(tx: Tx, agent_id: str) -> tuple[int, dict[str, Any]] | None:
    """The newest version's number and snapshot, or None when the agent has none."""
    rows = await tx.fetchall(
        "SELECT number, snapshot FROM agent_versions WHERE agent_id = ?"
        " ORDER BY number DESC LIMIT 1",
        (agent_id,),
    )
    return (rows[0][0], load_json(rows[0][1])) if rows else None


async def get(tx: Tx, agent_id: str, number: int) -> AgentVersion | None:
    rows = await tx.fetchall(f"{_SELECT} WHERE v.agent_id = ? AND v.number = ?", (agent_id, number))
    return _version(rows[0]) if rows else None


async def page(tx: Tx, agent_id: str, limit: int, below: int | None) -> list[AgentVersion]:
    """Up to `limit` versions, newest first, numbered below `below` when given."""
    rows = await tx.fetchall(
        f"{_SELECT} WHERE v.agent_id = ? AND v.number < ? ORDER BY v.number DESC LIMIT ?",
        (agent_id, below if below is not None else 2**62, limit),
    )
    return [_version(r) for r in rows]
