"""Guardrails' traces: the hits per agent, UTC day and kind (`guardrail_daily`), and the
review flag of a conversation whose answer a guardrail replaced."""

from __future__ import annotations

from collections.abc import Iterable

from agentsvc.db import Tx

_ADD_HITS = """
INSERT INTO guardrail_daily (agent_id, day, kind, hits) VALUES (?, ?, ?, ?)
ON CONFLICT (agent_id, day, kind) DO UPDATE SET hits = guardrail_daily.hits + excluded.hits
"""


async def add_hits(tx: Tx, agent_id: str, day: str, hits: Iterable[tuple[str, int]]) -> None:
    """Add the (kind, count) hits of one day (YYYY-MM-DD) to the agent's counters."""
    rows = [(agent_id, day, kind, count) for kind, count in sorted(hits) if count]
    if rows:
        await tx.executemany(_ADD_HITS, rows)


async def days(tx: Tx, agent_id: str, first: str, last: str) -> list[tuple[str, str, int]]:
    """The agent's (day, kind, hits) of the days first..last (both included)."""
    rows = await tx.fetchall(
        "SELECT day, kind, hits FROM guardrail_daily"
        " WHERE agent_id = ? AND day >= ? AND day <= ? ORDER BY day, kind",
        (agent_id, first, last),
    )
    return [(r[0], r[1], int(r[2])) for r in rows]


async def flag(tx: Tx, conversation_id: str, at: str) -> None:
    """Flag the conversation for review (kept at its first flag until reviewed)."""
    await tx.execute(
        "UPDATE conversations SET flagged_at = ? WHERE id = ? AND flagged_at IS NULL",
        (at, conversation_id),
    )


async def clear_flag(tx: Tx, team_id: str, conversation_id: str) -> bool:
    """Clear the team's conversation's review flag; False when no such conversation."""
    changed = await tx.execute(
        "UPDATE conversations SET flagged_at = NULL WHERE id = ? AND team_id = ?",
        (conversation_id, team_id),
    )
    return changed > 0
