"""Rated answers of an agent (the `message_ratings` kept by triggers), newest first, each
with the visitor's question before it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from agentsvc.db import Tx
from agentsvc.store.rows import load_json


@dataclass(frozen=True, slots=True)
class RatedAnswer:
    id: str  # the answer's message id
    conversation_id: str
    rating: str
    created_at: str  # the answer's
    answer: str
    sources: list[Any] | None
    rated_at: str | None
    question: str | None  # the visitor's message before the answer, if any


# The question: the conversation's last visitor message before the answer (by the index of
# its messages).
_SELECT = """
SELECT r.message_id, r.conversation_id, r.rating, r.created_at, m.content, m.sources,
       m.rated_at,
       (SELECT q.content FROM messages q
        WHERE q.conversation_id = r.conversation_id AND q.role = 'user'
          AND (q.created_at, q.rowid) < (m.created_at, m.rowid)
        ORDER BY q.created_at DESC, q.rowid DESC LIMIT 1)
FROM message_ratings r JOIN messages m ON m.id = r.message_id
"""


def _where(agent_id: str, rating: str | None) -> tuple[str, list[Any]]:
    if rating is None:
        return "r.agent_id = ?", [agent_id]
    return "r.agent_id = ? AND r.rating = ?", [agent_id, rating]


async def list_rated(
    tx: Tx,
    agent_id: str,
    rating: str | None,
    limit: int,
    after: tuple[str, str] | None = None,
) -> tuple[list[RatedAnswer], bool]:
    """A page of the agent's rated answers (with `rating`, or either), newest answer first
    (`created_at`, then id), and whether more follow; `after` continues from a key."""
    where, args = _where(agent_id, rating)
    if after is not None:
        where += " AND (r.created_at, r.message_id) < (?, ?)"
        args += after
    rows = await tx.fetchall(
        f"{_SELECT} WHERE {where} ORDER BY r.created_at DESC, r.message_id DESC LIMIT ?",
        (*args, limit + 1),
    )
    found = [
        RatedAnswer(r[0], r[1], r[2], r[3], r[4], load_json(r[5]), r[6], r[7]) for r in rows[:limit]
    ]
    return found, len(rows) > limit


async def count_rated(tx: Tx, agent_id: str, rating: str | None) -> int:
    """How many of the agent's answers are rated so (or rated at all)."""
    where, args = _where(agent_id, rating)
    return int(await tx.fetchval(f"SELECT COUNT(*) FROM message_ratings r WHERE {where}", args))
