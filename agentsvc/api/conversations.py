"""Conversation endpoints: list, get with messages, delete, and message feedback."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field

from agentsvc.api import app_keys
from agentsvc.api.cursors import MAX_CURSOR_LENGTH, decode_cursor, next_cursor
from agentsvc.api.list_filters import AgentId, ConversationFilterQuery
from agentsvc.api.models import RequestModel, ResponseModel
from agentsvc.api.routing import Call, RouteTable, envelope_response
from agentsvc.services.agents import identity as identity_service
from agentsvc.services.chat.conversations import Feedback, PageAt, assignee_of
from agentsvc.services.chat.service import ConversationsService
from agentsvc.store.conversations import Conversation, StoredMessage

routes = RouteTable("conversations")


def _conversations(call: Call) -> ConversationsService:
    return call.app[app_keys.conversations_key]


# One conversation: any id but `export` (GET /conversations/export is the download), so
# the fixed path is never taken for an id and `Allow` lists each resource's own methods.
ONE_CONVERSATION = "/conversations/{id:(?!export$)[^/]+}"

SESSION_HEADER = "X-Session-Id"


class ConversationQuery(ConversationFilterQuery):
    agent_id: AgentId
    limit: Annotated[int, Field(ge=1, le=100)] = 20
    offset: Annotated[int, Field(ge=0, le=10**12)] = 0  # SQLite integers are 64-bit
    # `nextCursor` of the previous page: the page after it at any depth (offset unused).
    cursor: Annotated[str | None, Field(min_length=1, max_length=MAX_CURSOR_LENGTH)] = None


class FeedbackBody(RequestModel):
    message_id: Annotated[str, Field(min_length=1, max_length=100)]
    rating: Literal["up", "down"]


class EndUser(ResponseModel):
    id: str | None
    email: str | None
    name: str | None
    verified: bool = Field(
        description="true when the e-mail and name are vouched for (a userToken, or the"
        " team's own call); false when they are as the browser declared them"
    )
    verified_by: Literal["userToken", "userHash", "apiKey"] | None = Field(
        description="userToken: every field signed; userHash: the id only; apiKey: the"
        " team's key or session; null: nothing checked"
    )


class Assignee(ResponseModel):
    id: str
    name: str


Status = Literal["bot", "waiting", "human", "closed"]
STATUS_DESCRIPTION = (
    "bot: the agent answers; waiting: a person was asked for; human: a member has it; closed"
)


class Ratings(ResponseModel):
    """How many of the conversation's answers are rated up and down."""

    up: int
    down: int


class ConversationSummary(ResponseModel):
    id: str
    agent_id: str
    title: str
    message_count: int
    session_id: str | None
    user: EndUser | None
    status: Status = Field(description=STATUS_DESCRIPTION)
    assignee: Assignee | None
    trigger_id: str | None = Field(description="the widget trigger the chat started from")
    ratings: Ratings
    created_at: str
    updated_at: str


class ToolCallOut(ResponseModel):
    tool_use_id: str
    tool_name: str
    input: Any
    output: Any
    is_error: bool


class Usage(ResponseModel):
    input_tokens: int | None
    output_tokens: int | None


class SourceOut(ResponseModel):
    """A knowledge document the answer was given."""

    document_id: str
    title: str


class AnswerSourceOut(ResponseModel):
    """A curated answer the answer came from (its question is the title)."""

    answer_id: str
    title: str


class Author(ResponseModel):
    type: Literal["visitor", "ai", "human"]
    id: str | None = None
    name: str | None = None


class MessageOut(ResponseModel):
    id: str
    role: Literal["user", "assistant"]
    content: str
    author: Author = Field(
        description="visitor (role user), ai (the agent) or human (a member's reply, with"
        " the member's id and name)"
    )
    created_at: str
    rating: Literal["up", "down"] | None
    tool_calls: list[ToolCallOut] | None
    usage: Usage | None
    # Curated answer first (when one matched), then knowledge documents.
    sources: list[AnswerSourceOut | SourceOut] | None
    status: Literal["complete", "interrupted", "failed"]
    unanswered: bool | None = Field(
        description="an AI answer: true when it found nothing to answer with (no curated"
        " answer, no knowledge passage, no tool); null for other messages"
    )


class ConversationOut(ResponseModel):
    id: str
    agent_id: str
    title: str
    session_id: str | None
    user: EndUser | None
    status: Status = Field(description=STATUS_DESCRIPTION)
    assignee: Assignee | None
    trigger_id: str | None
    messages: list[MessageOut]
    created_at: str
    updated_at: str


class ConversationDeleted(ResponseModel):
    id: str
    deleted: bool


class FeedbackOut(ResponseModel):
    message_id: str
    rating: Literal["up", "down"]


def _user_json(conv: Conversation) -> dict | None:
    if conv.user_ref is None and conv.user_email is None and conv.user_name is None:
        return None
    return {
        "id": conv.user_ref,
        "email": conv.user_email,
        "name": conv.user_name,
        "verified": identity_service.profile_verified(conv.user_verified_by),
        "verifiedBy": conv.user_verified_by,
    }


def _base_json(conv: Conversation) -> dict:
    return {
        "id": conv.id,
        "agentId": conv.agent_id,
        "title": conv.title,
        "sessionId": conv.session_id,
        "user": _user_json(conv),
        "status": conv.status,
        "assignee": assignee_of(conv),
        "triggerId": conv.trigger_id,
    }


def summary_json(conv: Conversation) -> dict:
    return {
        **_base_json(conv),
        "messageCount": conv.message_count,
        "ratings": {"up": conv.rated_up, "down": conv.rated_down},
        "createdAt": conv.created_at,
        "updatedAt": conv.updated_at,
    }


def author_json(msg: StoredMessage) -> dict:
    """Who wrote a message: the visitor, the agent (ai) or a member (human)."""
    if msg.role == "user":
        return {"type": "visitor"}
    if msg.author_id is None:
        return {"type": "ai"}
    return {"type": "human", "id": msg.author_id, "name": msg.author_name}


def message_json(msg: StoredMessage) -> dict:
    return {
        "id": msg.id,
        "role": msg.role,
        "content": msg.content,
        "author": author_json(msg),
        "createdAt": msg.created_at,
        "rating": msg.rating,
        "toolCalls": msg.tool_calls,
        "usage": msg.usage,
        "sources": msg.sources,
        "status": msg.status,
        "unanswered": msg.unanswered,
    }


# The envelope's `pagination`, for the OpenAPI document.
PAGINATION_SCHEMA = {
    "type": "object",
    "required": ["total", "limit", "offset", "nextCursor", "totalCapped"],
    "properties": {
        "total": {"type": "integer"},
        "totalCapped": {
            "type": "boolean",
            "description": "true when a filtered total stopped counting at 10,000 (or a"
            " search looked at its 10,000 newest matching messages)",
        },
        "limit": {"type": "integer"},
        "offset": {"type": "integer"},
        "nextCursor": {
            "type": ["string", "null"],
            "description": "Pass as `cursor` for the next page; null on the last page.",
        },
    },
}


@routes.get(
    "/conversations",
    query=ConversationQuery,
    response=list[ConversationSummary],
    envelope=True,
    errors=(400, 404),
    extra={"envelope_extra": {"properties_extra": {"pagination": PAGINATION_SCHEMA}}},
)
async def list_conversations(call: Call):
    """List an agent's conversations, newest first, filtered and searched, with pagination."""
    query: ConversationQuery = call.query
    at = PageAt(query.limit, query.offset, decode_cursor(query.cursor))
    page = await _conversations(call).page(call.team_id, query.agent_id, at, query.filters())
    return envelope_response(
        [summary_json(c) for c in page.conversations],
        pagination={
            "total": page.total,
            "limit": query.limit,
            "offset": query.offset,
            "nextCursor": next_cursor(page.conversations, page.more),
            "totalCapped": page.total_capped,
        },
    )


@routes.get(ONE_CONVERSATION, response=ConversationOut, envelope=True, errors=(404,))
async def get_conversation(call: Call):
    """Get a conversation with its messages in order."""
    conv, messages = await _conversations(call).get(call.team_id, call.params["id"])
    return envelope_response(
        {
            **_base_json(conv),
            "messages": [message_json(m) for m in messages],
            "createdAt": conv.created_at,
            "updatedAt": conv.updated_at,
        }
    )


@routes.delete(ONE_CONVERSATION, response=ConversationDeleted, envelope=True, errors=(404,))
async def delete_conversation(call: Call):
    """Delete a conversation and its messages."""
    await _conversations(call).delete(call.team_id, call.params["id"])
    return envelope_response({"id": call.params["id"], "deleted": True})


@routes.post(
    "/conversations/{id}/feedback",
    auth="optional",
    cors=True,
    body=FeedbackBody,
    response=FeedbackOut,
    envelope=True,
    errors=(400, 401, 404),
)
async def post_feedback(call: Call):
    """Rate a message up or down (API key, or the widget with X-Session-Id)."""
    body: FeedbackBody = call.body
    await _conversations(call).rate(
        Feedback(call.params["id"], body.message_id, body.rating),
        team_id=call.principal.team_id if call.principal else None,
        session_id=call.request.headers.get(SESSION_HEADER),
    )
    return envelope_response({"messageId": body.message_id, "rating": body.rating})
