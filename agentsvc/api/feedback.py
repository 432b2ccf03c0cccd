"""GET /feedback: an agent's rated answers, each with the question before it, to review."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field

from agentsvc.api import app_keys
from agentsvc.api.conversations import AnswerSourceOut, SourceOut
from agentsvc.api.cursors import MAX_CURSOR_LENGTH, decode_cursor, next_cursor
from agentsvc.api.list_filters import AgentId
from agentsvc.api.models import QueryModel, ResponseModel
from agentsvc.api.routing import Call, RouteTable, envelope_response
from agentsvc.services.answers.review import ReviewItem, ReviewQuery
from agentsvc.services.answers.service import AnswersService

routes = RouteTable("feedback")


def _answers(call: Call) -> AnswersService:
    return call.app[app_keys.answers_key]


class FeedbackQuery(QueryModel):
    agent_id: AgentId
    rating: Literal["up", "down"] | None = Field(
        None, description="only answers rated so (both when left out)"
    )
    limit: Annotated[int, Field(ge=1, le=100)] = 20
    cursor: Annotated[str | None, Field(min_length=1, max_length=MAX_CURSOR_LENGTH)] = None


class CuratedRef(ResponseModel):
    id: str
    question: str


class FeedbackItem(ResponseModel):
    message_id: str
    conversation_id: str
    rating: Literal["up", "down"]
    question: str | None = Field(description="the visitor's message before the answer")
    answer: str
    sources: list[AnswerSourceOut | SourceOut] | None
    created_at: str = Field(description="when the answer was given")
    rated_at: str | None
    curated_answer: CuratedRef | None = Field(
        description="the curated answer that this question would get now, if any"
    )


PAGINATION_SCHEMA = {
    "type": "object",
    "required": ["total", "limit", "nextCursor"],
    "properties": {
        "total": {"type": "integer"},
        "limit": {"type": "integer"},
        "nextCursor": {
            "type": ["string", "null"],
            "description": "Pass as `cursor` for the next page; null on the last page.",
        },
    },
}


def item_json(item: ReviewItem) -> dict[str, Any]:
    rated, curated = item.rated, item.curated
    return {
        "messageId": rated.id,
        "conversationId": rated.conversation_id,
        "rating": rated.rating,
        "question": rated.question,
        "answer": rated.answer,
        "sources": rated.sources,
        "createdAt": rated.created_at,
        "ratedAt": rated.rated_at,
        "curatedAnswer": (
            {"id": curated.answer_id, "question": curated.question} if curated else None
        ),
    }


@routes.get(
    "/feedback",
    query=FeedbackQuery,
    response=list[FeedbackItem],
    envelope=True,
    errors=(400, 404),
    extra={"envelope_extra": {"properties_extra": {"pagination": PAGINATION_SCHEMA}}},
)
async def list_feedback(call: Call):
    """List an agent's rated answers with their questions, newest first, with pagination."""
    query: FeedbackQuery = call.query
    wanted = ReviewQuery(query.rating, query.limit, decode_cursor(query.cursor))
    page = await _answers(call).review(call.team_id, query.agent_id, wanted)
    return envelope_response(
        [item_json(i) for i in page.items],
        pagination={
            "total": page.total,
            "limit": query.limit,
            "nextCursor": next_cursor(page.items, page.more),
        },
    )
