"""Deleting conversations and submissions with everything that hangs off them (messages,
conversation events, webhook events and their deliveries, delivery rows and attempts: all by
cascade), for erasure and retention; and what retention finds expired."""

from __future__ import annotations

from agentsvc.db import Tx
from agentsvc.store.end_users import chunks


async def delete_conversations(tx: Tx, team_id: str, ids: list[str]) -> int:
    """Delete the team's conversations among `ids`; return how many went."""
    gone = 0
    for part in chunks(ids):
        marks = ", ".join("?" for _ in part)
        gone += await tx.execute(
            f"DELETE FROM conversations WHERE team_id = ? AND id IN ({marks})", (team_id, *part)
        )
    return gone


async def delete_submissions(tx: Tx, team_id: str, ids: list[str]) -> int:
    """Delete the team's submissions among `ids`; return how many went (their files are the
    caller's to remove, after the commit)."""
    gone = 0
    for part in chunks(ids):
        marks = ", ".join("?" for _ in part)
        gone += await tx.execute(
            f"DELETE FROM form_submissions WHERE team_id = ? AND id IN ({marks})",
            (team_id, *part),
        )
    return gone


async def agents_with_retention(tx: Tx) -> list[tuple[str, str, int]]:
    """(agent id, team id, days) of every agent that keeps its data a limited time."""
    rows = await tx.fetchall(
        "SELECT id, team_id, retention_days FROM agents WHERE retention_days IS NOT NULL"
    )
    return [(r[0], r[1], int(r[2])) for r in rows]


async def idle_conversations(tx: Tx, agent_id: str, before: str, limit: int) -> list[str]:
    """Ids of the agent's conversations with no activity since `before`."""
    rows = await tx.fetchall(
        "SELECT id FROM conversations WHERE agent_id = ? AND updated_at < ? LIMIT ?",
        (agent_id, before, limit),
    )
    return [r[0] for r in rows]


async def old_submissions(tx: Tx, agent_id: str, before: str, limit: int) -> list[str]:
    """Ids of the agent's submissions made before `before`."""
    rows = await tx.fetchall(
        "SELECT id FROM form_submissions WHERE agent_id = ? AND created_at < ? LIMIT ?",
        (agent_id, before, limit),
    )
    return [r[0] for r in rows]
