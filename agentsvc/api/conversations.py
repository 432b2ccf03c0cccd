"""Conversation endpoints: list, get with messages, delete, message feedback, and the
files a message came with (an e-mail's attachments)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field

from agentsvc.api import app_keys
from agentsvc.api.cursors import MAX_CURSOR_LENGTH, decode_cursor, next_cursor
from agentsvc.api.downloads import SAFE_HEADERS, disposition, send_stored, served_type
from agentsvc.api.list_filters import AgentId, ChannelName, ConversationFilterQuery
from agentsvc.api.models import RequestModel, ResponseModel
from agentsvc.api.routing import API_PREFIX, Call, RouteTable, envelope_response
from agentsvc.api.state import request_deps
from agentsvc.services.agents import identity as identity_service
from agentsvc.services.chat.conversations import Feedback, PageAt, assignee_of
from agentsvc.services.chat.service import ConversationsService
from agentsvc.services.usage.prices import currency_of, from_nanos
from agentsvc.store.attachments import Attachment
from agentsvc.store.conversations import Conversation, StoredMessage
from agentsvc.store.notes import Note

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
    avatar_url: str | None = Field(None, description="the member's picture (null without one)")


Status = Literal["bot", "waiting", "human", "closed"]
CHANNEL_DESCRIPTION = "web (the widget, /chat, MCP) or the type of the channel it came through"
CHANNEL_ID_DESCRIPTION = "the channel it came through (null for web, or once deleted)"
STATUS_DESCRIPTION = (
    "bot: the agent answers; waiting: a person was asked for; human: a member has it; closed"
)


class UsageTotals(ResponseModel):
    """What the conversation's AI answers used and cost (answers of unpriced models: 0)."""

    input_tokens: int
    output_tokens: int
    cost: float
    currency: str


class Ratings(ResponseModel):
    """How many of the conversation's answers are rated up and down."""

    up: int
    down: int


FLAGGED_DESCRIPTION = (
    "when a guardrail replaced one of its answers (mustNotSay), flagging it for review;"
    " null once reviewed (DELETE /conversations/{id}/flag) or never flagged"
)


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
    channel: ChannelName = Field(description=CHANNEL_DESCRIPTION)
    channel_id: str | None = Field(description=CHANNEL_ID_DESCRIPTION)
    flagged_at: str | None = Field(description=FLAGGED_DESCRIPTION)
    ratings: Ratings
    usage: UsageTotals
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
    cost: float | None = Field(
        None,
        description="in the currency of the conversation's usage; null or absent: the model"
        " had no price (or the answer came before prices were kept)",
    )


class SourceOut(ResponseModel):
    """A knowledge document the answer was given."""

    document_id: str
    title: str
    url: str | None = Field(
        None, description="the document's address, when it was fetched from a URL (absent else)"
    )


class AnswerSourceOut(ResponseModel):
    """A curated answer the answer came from (its question is the title)."""

    answer_id: str
    title: str


class Author(ResponseModel):
    type: Literal["visitor", "ai", "human"]
    id: str | None = None
    name: str | None = None
    avatar_url: str | None = Field(
        None, description="a member's picture (absolute; null or absent without one)"
    )


class AttachmentOut(ResponseModel):
    """A file the message came with (an e-mail's attachment), kept on the server."""

    id: str = Field(description="GET /conversations/{id}/attachments/{attachmentId} downloads it")
    name: str = Field(description="its file name, made safe (at most 100 characters)")
    size: int = Field(description="in bytes")
    content_type: str = Field(description="as the sender's mail program declared it")


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
    agent_version: int | None = Field(
        None,
        description="an AI answer: the number of the agent's version that made it (GET"
        " /agents/{id}/versions/{n}); null for other messages and older answers",
    )
    attachments: list[AttachmentOut] = Field(
        [], description="the files an e-mail came with (empty for other messages)"
    )


class NoteAuthor(ResponseModel):
    type: Literal["note"]
    id: str | None = Field(description="the member (null once their account is gone)")
    name: str
    avatar_url: str | None


class NoteOut(ResponseModel):
    """A member's private note: never shown to the visitor nor given to the model."""

    id: str
    conversation_id: str
    author: NoteAuthor
    content: str
    created_at: str


class ConversationOut(ResponseModel):
    id: str
    agent_id: str
    title: str
    session_id: str | None
    user: EndUser | None
    status: Status = Field(description=STATUS_DESCRIPTION)
    assignee: Assignee | None
    trigger_id: str | None
    channel: ChannelName = Field(description=CHANNEL_DESCRIPTION)
    channel_id: str | None = Field(description=CHANNEL_ID_DESCRIPTION)
    flagged_at: str | None = Field(description=FLAGGED_DESCRIPTION)
    messages: list[MessageOut]
    notes: list[NoteOut] = Field(description="members' private notes, oldest first")
    usage: UsageTotals
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


def avatar_url(origin: str, avatar_id: str | None) -> str | None:
    """A member's picture, absolute on the server's public origin (None without one)."""
    return f"{origin}{API_PREFIX}/avatars/{avatar_id}" if avatar_id else None


def public_origin(call: Call) -> str:
    """The server's public origin, which avatar addresses are absolute on."""
    # The settings every request's wrapper already holds (no lookup of its own).
    return request_deps(call.request).settings.server.public_url.rstrip("/")


def assignee_json(conv: Conversation, origin: str) -> dict | None:
    """The conversation's assignee with their picture, or None."""
    found = assignee_of(conv)
    if found is None:
        return None
    return {**found, "avatarUrl": avatar_url(origin, conv.assignee_avatar_id)}


def _base_json(conv: Conversation, origin: str = "") -> dict:
    return {
        "id": conv.id,
        "agentId": conv.agent_id,
        "title": conv.title,
        "sessionId": conv.session_id,
        "user": _user_json(conv),
        "status": conv.status,
        "assignee": assignee_json(conv, origin),
        "triggerId": conv.trigger_id,
        "channel": conv.channel,
        "channelId": conv.channel_id,
        "flaggedAt": conv.flagged_at,
    }


def currency(call: Call) -> str:
    """The currency of costs (the settings every request's wrapper already holds)."""
    return currency_of(request_deps(call.request).settings)


def usage_json(conv: Conversation, currency: str) -> dict:
    """The conversation's totals: its answers' tokens and cost."""
    return {
        "inputTokens": conv.input_tokens,
        "outputTokens": conv.output_tokens,
        "cost": from_nanos(conv.cost_nanos),
        "currency": currency,
    }


def summary_json(conv: Conversation, origin: str = "", currency: str = "") -> dict:
    return {
        **_base_json(conv, origin),
        "messageCount": conv.message_count,
        "ratings": {"up": conv.rated_up, "down": conv.rated_down},
        "usage": usage_json(conv, currency),
        "createdAt": conv.created_at,
        "updatedAt": conv.updated_at,
    }


def author_json(msg: StoredMessage, origin: str = "") -> dict:
    """Who wrote a message: the visitor, the agent (ai) or a member (human, with their
    picture)."""
    if msg.role == "user":
        return {"type": "visitor"}
    if msg.author_id is None:
        return {"type": "ai"}
    return {
        "type": "human",
        "id": msg.author_id,
        "name": msg.author_name,
        "avatarUrl": avatar_url(origin, msg.author_avatar_id),
    }


def note_json(note: Note, origin: str) -> dict:
    """A member's private note as members see it."""
    return {
        "id": note.id,
        "conversationId": note.conversation_id,
        "author": {
            "type": "note",
            "id": note.author_id,
            "name": note.author_name,
            "avatarUrl": avatar_url(origin, note.author_avatar_id),
        },
        "content": note.content,
        "createdAt": note.created_at,
    }


def attachment_json(row: Attachment) -> dict:
    return {"id": row.id, "name": row.name, "size": row.size, "contentType": row.content_type}


def message_json(
    msg: StoredMessage, origin: str = "", attachments: list[Attachment] | None = None
) -> dict:
    return {
        "id": msg.id,
        "role": msg.role,
        "content": msg.content,
        "author": author_json(msg, origin),
        "createdAt": msg.created_at,
        "rating": msg.rating,
        "toolCalls": msg.tool_calls,
        "usage": msg.usage,
        "sources": msg.sources,
        "status": msg.status,
        "unanswered": msg.unanswered,
        "agentVersion": msg.agent_version,
        "attachments": [attachment_json(a) for a in attachments or ()],
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
    origin, costs_in = public_origin(call), currency(call)
    return envelope_response(
        [summary_json(c, origin, costs_in) for c in page.conversations],
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
    """Get a conversation with its messages in order, and members' private notes."""
    conv, messages = await _conversations(call).get(call.team_id, call.params["id"])
    notes = await call.app[app_keys.desk_key].notes(conv.id)
    files = await _conversations(call).attachments(conv.id)
    origin = public_origin(call)
    return envelope_response(
        {
            **_base_json(conv, origin),
            "messages": [message_json(m, origin, files.get(m.id)) for m in messages],
            "notes": [note_json(n, origin) for n in notes],
            "usage": usage_json(conv, currency(call)),
            "createdAt": conv.created_at,
            "updatedAt": conv.updated_at,
        }
    )


@routes.delete(ONE_CONVERSATION, response=ConversationDeleted, envelope=True, errors=(404,))
async def delete_conversation(call: Call):
    """Delete a conversation and its messages."""
    await _conversations(call).delete(call.team_id, call.params["id"])
    return envelope_response({"id": call.params["id"], "deleted": True})


class FlagCleared(ResponseModel):
    id: str
    flagged_at: None = Field(description="null: reviewed")


@routes.delete("/conversations/{id}/flag", response=FlagCleared, envelope=True, errors=(404,))
async def delete_flag(call: Call):
    """Mark a conversation a guardrail flagged as reviewed (its flag cleared)."""
    await _conversations(call).clear_flag(call.team_id, call.params["id"])
    return envelope_response({"id": call.params["id"], "flaggedAt": None})


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


@routes.get(
    "/conversations/{id}/attachments/{attachmentId}",
    media_type="application/octet-stream",
    response_headers=("Content-Disposition",),
    errors=(404, 503),
)
async def get_attachment(call: Call):
    """Download a file a message came with (an e-mail's attachment), as an attachment."""
    row, reading = await _conversations(call).attachment(
        call.team_id, call.params["id"], call.params["attachmentId"]
    )
    headers = {
        "Content-Type": served_type(row.content_type),
        "Content-Disposition": disposition(row.name),
        **SAFE_HEADERS,
    }
    return await send_stored(call.request, reading.size, reading.chunks(), headers)
