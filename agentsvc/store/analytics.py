"""Daily figures of agents and triggers, and the questions AI answers found nothing for.

`agent_daily` is kept by database triggers (schema.sql); `trigger_daily` and
`unanswered_questions` are written here, in the transactions of the rows they count. Reads
take one agent's rows of a bounded range of days, so a report never counts rows.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from agentsvc.db import Tx


@dataclass(frozen=True, slots=True)
class AgentDay:
    day: str
    conversations: int
    visitor_messages: int
    answers: int
    unanswered: int
    rated_up: int
    rated_down: int


@dataclass(frozen=True, slots=True)
class TriggerDay:
    day: str
    trigger_id: str
    trigger_name: str | None  # None once the trigger is deleted
    fired: int
    converted: int
    conversations: int
    submissions: int


@dataclass(frozen=True, slots=True)
class FrequentQuestion:
    question: str  # as last asked
    asked: int
    last_asked_at: str


def day_of(timestamp: str) -> str:
    """The UTC day (YYYY-MM-DD) of a stored timestamp."""
    return timestamp[:10]


async def trigger_of_agent(tx: Tx, agent_id: str, trigger_id: str) -> bool:
    """Whether the trigger is one of the agent's."""
    row = await tx.fetchone(
        "SELECT 1 FROM triggers WHERE id = ? AND agent_id = ?", (trigger_id, agent_id)
    )
    return row is not None


_ADD_TRIGGER_COUNTS = """
INSERT INTO trigger_daily
    (agent_id, day, trigger_id, fired, converted, conversations, submissions)
VALUES (?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (agent_id, day, trigger_id) DO UPDATE SET
    fired = trigger_daily.fired + excluded.fired,
    converted = trigger_daily.converted + excluded.converted,
    conversations = trigger_daily.conversations + excluded.conversations,
    submissions = trigger_daily.submissions + excluded.submissions
"""


async def add_trigger_counts(
    tx: Tx, rows: Iterable[tuple[str, str, str, int, int, int, int]]
) -> None:
    """Add (agent_id, day, trigger_id, fired, converted, conversations, submissions)."""
    await tx.executemany(_ADD_TRIGGER_COUNTS, list(rows))


async def insert_unanswered(
    tx: Tx, message_id: str, agent_id: str, asked_at: str, question_key: str, question: str
) -> None:
    """Record the question of an AI answer that found nothing (`asked_at`: the answer's time)."""
    await tx.execute(
        "INSERT INTO unanswered_questions"
        " (message_id, agent_id, asked_at, question_key, question) VALUES (?, ?, ?, ?, ?)",
        (message_id, agent_id, asked_at, question_key, question),
    )


async def agent_days(tx: Tx, agent_id: str, first: str, last: str) -> list[AgentDay]:
    """The agent's figures of the days first..last (YYYY-MM-DD, both included) that have any."""
    rows = await tx.fetchall(
        "SELECT day, conversations, visitor_messages, answers, unanswered, rated_up, rated_down"
        " FROM agent_daily WHERE agent_id = ? AND day >= ? AND day <= ? ORDER BY day",
        (agent_id, first, last),
    )
    return [AgentDay(*r) for r in rows]


async def trigger_days(tx: Tx, agent_id: str, first: str, last: str) -> list[TriggerDay]:
    """The agent's trigger figures of the days first..last, with the triggers' names."""
    rows = await tx.fetchall(
        "SELECT d.day, d.trigger_id, t.name, d.fired, d.converted, d.conversations,"
        " d.submissions FROM trigger_daily d LEFT JOIN triggers t ON t.id = d.trigger_id"
        " WHERE d.agent_id = ? AND d.day >= ? AND d.day <= ? ORDER BY d.day, d.trigger_id",
        (agent_id, first, last),
    )
    return [TriggerDay(*r) for r in rows]


# The groups first (same words), the most asked; then each one's latest wording.
_FREQUENT = """
SELECT (SELECT u.question FROM unanswered_questions u
        WHERE u.agent_id = g.agent_id AND u.question_key = g.question_key
          AND u.asked_at >= ? AND u.asked_at < ?
        ORDER BY u.asked_at DESC, u.message_id DESC LIMIT 1),
       g.asked, g.last_asked_at
FROM (SELECT agent_id, question_key, COUNT(*) AS asked, MAX(asked_at) AS last_asked_at
      FROM unanswered_questions
      WHERE agent_id = ? AND asked_at >= ? AND asked_at < ?
      GROUP BY agent_id, question_key
      ORDER BY asked DESC, last_asked_at DESC, question_key LIMIT ?) AS g
ORDER BY g.asked DESC, g.last_asked_at DESC, g.question_key
"""


async def frequent_unanswered(
    tx: Tx, agent_id: str, since: str, before: str, limit: int
) -> list[FrequentQuestion]:
    """The questions asked most often (same words) that AI answers found nothing for, asked
    at or after `since` and before `before` (timestamps)."""
    rows = await tx.fetchall(_FREQUENT, (since, before, agent_id, since, before, limit))
    return [FrequentQuestion(r[0], int(r[1]), r[2]) for r in rows]
