"""Curated answers as one object: the team's answers to visitors' questions, and the review
of rated answers (which curated answer each question would get now)."""

from __future__ import annotations

from agentsvc.db import Database
from agentsvc.services.answers import curated, review
from agentsvc.services.answers.curated import AnswerDraft
from agentsvc.services.answers.matching import CuratedAnswers
from agentsvc.services.answers.review import ReviewPage, ReviewQuery
from agentsvc.store.answers import CuratedAnswer


class AnswersService:
    """An agent's curated answers and the review of rated answers (one for the app)."""

    def __init__(self, db: Database, matcher: CuratedAnswers, max_per_agent: int):
        self._db = db
        self._matcher = matcher
        self._max_per_agent = max_per_agent  # [answers] max_per_agent

    async def for_agent(self, team_id: str, agent_id: str) -> list[CuratedAnswer]:
        """The agent's answers, newest first."""
        return await curated.list_answers(self._db, team_id, agent_id)

    async def create(self, team_id: str, agent_id: str, given: AnswerDraft) -> CuratedAnswer:
        """Add an answer to the agent's, within the limit, unless the question has one."""
        return await curated.create_answer(self._db, team_id, agent_id, given, self._max_per_agent)

    async def get(self, team_id: str, answer_id: str) -> CuratedAnswer:
        """The team's answer, or NotFound."""
        return await curated.get_answer(self._db, team_id, answer_id)

    async def update(
        self, team_id: str, answer_id: str, question: str | None, answer: str | None
    ) -> CuratedAnswer:
        """Change an answer's question and/or text."""
        return await curated.update_answer(self._db, team_id, answer_id, question, answer)

    async def delete(self, team_id: str, answer_id: str) -> None:
        """Delete the team's answer, or raise NotFound."""
        await curated.delete_answer(self._db, team_id, answer_id)

    async def review(self, team_id: str, agent_id: str, query: ReviewQuery) -> ReviewPage:
        """A page of the agent's rated answers, each with the curated answer its question
        would get now."""
        return await review.list_rated(self._db, self._matcher, team_id, agent_id, query)
