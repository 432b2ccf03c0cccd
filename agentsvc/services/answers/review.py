"""Reviewing rated answers: the thumbs-down (or up) answers of an agent with the question
before each, and whether a curated answer now answers that question."""

from __future__ import annotations

from dataclasses import dataclass

from agentsvc.db import Database
from agentsvc.errors import NotFound
from agentsvc.services.answers.matching import CuratedAnswers, CuratedMatch
from agentsvc.store import agents as agents_store
from agentsvc.store import feedback as store
from agentsvc.store.feedback import RatedAnswer


@dataclass(frozen=True, slots=True)
class ReviewItem:
    rated: RatedAnswer
    curated: CuratedMatch | None  # the curated answer the question would get now

    # For `api.cursors.next_cursor`: pages continue from the answer's key.
    @property
    def created_at(self) -> str:
        return self.rated.created_at

    @property
    def id(self) -> str:
        return self.rated.id


@dataclass(frozen=True, slots=True)
class ReviewPage:
    items: list[ReviewItem]
    total: int
    more: bool


@dataclass(frozen=True, slots=True)
class ReviewQuery:
    """Which rated answers to list: `rating` (None: both), a page of `limit`, continuing
    after a (created_at, id) key."""

    rating: str | None
    limit: int
    after: tuple[str, str] | None = None


async def list_rated(
    db: Database, curated: CuratedAnswers, team_id: str, agent_id: str, query: ReviewQuery
) -> ReviewPage:
    """A page of the agent's rated answers, newest first, the total, and whether more follow."""
    agent = await agents_store.get(db.reader, team_id, agent_id)
    if agent is None:
        raise NotFound("Agent not found")
    rating = query.rating
    rows, more = await store.list_rated(db.reader, agent_id, rating, query.limit, query.after)
    items = []
    for row in rows:
        match = None
        if row.question:
            match = await curated.match(db, agent_id, row.question, agent.language)
        items.append(ReviewItem(row, match))
    total = await store.count_rated(db.reader, agent_id, rating)
    return ReviewPage(items, total, more)
