"""Curated answers: answers the team wrote for questions visitors ask, per agent."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from agentsvc.db import Tx


@dataclass(frozen=True, slots=True)
class CuratedAnswer:
    id: str
    agent_id: str
    team_id: str
    question: str
    question_key: str  # the question's words, lower-cased: one answer per key and agent
    answer: str
    created_at: str
    updated_at: str


_COLUMNS = "id, agent_id, team_id, question, question_key, answer, created_at, updated_at"


def _answer(row: Any) -> CuratedAnswer:
    return CuratedAnswer(*row)


async def insert(tx: Tx, answer: CuratedAnswer) -> None:
    """Insert an answer (ConstraintViolation when its question_key is taken)."""
    await tx.execute(
        f"INSERT INTO curated_answers ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        (
            answer.id,
            answer.agent_id,
            answer.team_id,
            answer.question,
            answer.question_key,
            answer.answer,
            answer.created_at,
            answer.updated_at,
        ),
    )


async def get(tx: Tx, team_id: str, answer_id: str) -> CuratedAnswer | None:
    """The team's answer, or None when absent or another team's."""
    row = await tx.fetchone(
        f"SELECT {_COLUMNS} FROM curated_answers WHERE id = ? AND team_id = ?",
        (answer_id, team_id),
    )
    return _answer(row) if row else None


async def list_for_agent(tx: Tx, agent_id: str) -> list[CuratedAnswer]:
    """Every answer of the agent, newest first."""
    rows = await tx.fetchall(
        f"SELECT {_COLUMNS} FROM curated_answers WHERE agent_id = ?"
        " ORDER BY created_at DESC, rowid DESC",
        (agent_id,),
    )
    return [_answer(r) for r in rows]


async def count_for_agent(tx: Tx, agent_id: str) -> int:
    """How many answers the agent has."""
    found = await tx.fetchval(
        "SELECT COUNT(*) FROM curated_answers WHERE agent_id = ?", (agent_id,)
    )
    return int(found or 0)


async def update(tx: Tx, team_id: str, answer_id: str, fields: dict[str, str], now: str) -> bool:
    """Set some of question, question_key and answer; False when absent or another team's."""
    assert set(fields) <= {"question", "question_key", "answer"}, fields
    assignments = "".join(f"{column} = ?, " for column in fields)
    changed = await tx.execute(
        f"UPDATE curated_answers SET {assignments}updated_at = ?"  # noqa: S608 (fixed names)
        " WHERE id = ? AND team_id = ?",
        (*fields.values(), now, answer_id, team_id),
    )
    return changed > 0


async def delete(tx: Tx, team_id: str, answer_id: str) -> str | None:
    """Delete the team's answer; its agent's id, or None when absent or another team's."""
    return await tx.fetchval(
        "DELETE FROM curated_answers WHERE id = ? AND team_id = ? RETURNING agent_id",
        (answer_id, team_id),
    )
