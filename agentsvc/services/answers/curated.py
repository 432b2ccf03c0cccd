"""Curated answers: list, create, read, update and delete an agent's answers, within limits.

A question is stored with its key (its words, lower-cased): an agent has one answer per
key, so "How do I reset my password?" and "how do I reset my password" are the same
question (409 on the second). Every change announces the agent's answers as changed, so
each process's matcher (`matching.CuratedAnswers`) reads them again.
"""

from __future__ import annotations

from dataclasses import dataclass

from agentsvc.db import ConstraintViolation, Database
from agentsvc.errors import AnswerLimitReached, Conflict, NotFound, ValidationFailed
from agentsvc.ids import new_id, now_iso
from agentsvc.services import changes
from agentsvc.services.answers.matching import question_key
from agentsvc.store import agents as agents_store
from agentsvc.store import answers as store
from agentsvc.store.answers import CuratedAnswer


@dataclass(frozen=True, slots=True)
class AnswerDraft:
    """A curated answer as the team writes it: the question it answers, and the answer."""

    question: str
    answer: str


async def _check_agent(db: Database, team_id: str, agent_id: str) -> None:
    if await agents_store.get(db.reader, team_id, agent_id) is None:
        raise NotFound("Agent not found")


def _key(question: str) -> str:
    key = question_key(question)
    if not key:
        raise ValidationFailed("question: must contain at least one word")
    return key


async def list_answers(db: Database, team_id: str, agent_id: str) -> list[CuratedAnswer]:
    """The agent's answers, newest first."""
    await _check_agent(db, team_id, agent_id)
    return await store.list_for_agent(db.reader, agent_id)


async def create_answer(
    db: Database, team_id: str, agent_id: str, given: AnswerDraft, max_per_agent: int
) -> CuratedAnswer:
    """Add an answer to the agent's, unless it has `max_per_agent` or the question already."""
    question, answer = given.question, given.answer
    key = _key(question)
    now = now_iso()
    created = CuratedAnswer(
        id=new_id("answer"),
        agent_id=agent_id,
        team_id=team_id,
        question=question.strip(),
        question_key=key,
        answer=answer.strip(),
        created_at=now,
        updated_at=now,
    )
    try:
        async with db.write() as tx:
            if await agents_store.get(tx, team_id, agent_id) is None:
                raise NotFound("Agent not found")
            if await store.count_for_agent(tx, agent_id) >= max_per_agent:
                raise AnswerLimitReached(
                    f"The agent has {max_per_agent} curated answers, the most allowed"
                    " ([answers] max_per_agent): delete or edit one instead"
                )
            await store.insert(tx, created)
    except ConstraintViolation:
        raise Conflict("question: the agent already has an answer to this question") from None
    await db.announce(changes.answers(agent_id))
    return created


async def get_answer(db: Database, team_id: str, answer_id: str) -> CuratedAnswer:
    """The team's answer, or NotFound."""
    found = await store.get(db.reader, team_id, answer_id)
    if found is None:
        raise NotFound("Answer not found")
    return found


async def update_answer(
    db: Database, team_id: str, answer_id: str, question: str | None, answer: str | None
) -> CuratedAnswer:
    """Change an answer's question and/or text."""
    fields: dict[str, str] = {}
    if question is not None:
        fields["question"] = question.strip()
        fields["question_key"] = _key(question)
    if answer is not None:
        fields["answer"] = answer.strip()
    try:
        async with db.write() as tx:
            if not await store.update(tx, team_id, answer_id, fields, now_iso()):
                raise NotFound("Answer not found")
            updated = await store.get(tx, team_id, answer_id)
    except ConstraintViolation:
        raise Conflict("question: the agent already has an answer to this question") from None
    assert updated is not None
    await db.announce(changes.answers(updated.agent_id))
    return updated


async def delete_answer(db: Database, team_id: str, answer_id: str) -> None:
    """Delete the team's answer, or raise NotFound."""
    async with db.write() as tx:
        agent_id = await store.delete(tx, team_id, answer_id)
    if agent_id is None:
        raise NotFound("Answer not found")
    await db.announce(changes.answers(agent_id))
