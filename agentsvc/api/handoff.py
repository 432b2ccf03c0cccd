"""Handoff endpoints: asking for a person, taking, replying, releasing and closing a
conversation, and the live event streams of a conversation and of the team's inbox."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field
from pydantic.json_schema import SkipJsonSchema

from agentsvc.api import app_keys, event_streams, sse
from agentsvc.api.conversations import (
    SESSION_HEADER,
    Assignee,
    MessageOut,
    Status,
    assignee_json,
    author_json,
    avatar_url,
    message_json,
    note_json,
    public_origin,
)
from agentsvc.api.errors import RateLimited
from agentsvc.api.limits import STREAM_END_MARGIN_SECONDS, take_token, team_stream_slots
from agentsvc.api.models import NON_BLANK, QueryModel, RequestModel, ResponseModel
from agentsvc.api.routing import Call, RouteTable, envelope_response, json_response, parse_json
from agentsvc.api.streams import streaming_of
from agentsvc.errors import ValidationFailed
from agentsvc.services.handoff.flow import HandoffState
from agentsvc.services.handoff.service import HandoffService
from agentsvc.store.conversation_events import ConversationEvent
from agentsvc.store.conversations import Conversation, StoredMessage

routes = RouteTable("handoff")

STREAM_SLOT_RETRY_AFTER_SECONDS = 5
SessionId = Annotated[str, Field(min_length=1, max_length=200)]
EventId = Annotated[int, Field(ge=0, le=event_streams.MAX_EVENT_ID)]


def _handoff(call: Call) -> HandoffService:
    return call.app[app_keys.handoff_key]


def _optional_json(raw: bytes | bytearray) -> Any:
    """A body that may be left out: nothing reads as `{}`."""
    return {} if not raw.strip() else parse_json(raw)


class HandoffBody(RequestModel):
    session_id: SessionId | SkipJsonSchema[None] = Field(
        None, description="the widget session that started the conversation (visitors)"
    )


# What _check_email accepts, stated in the schema so clients (and the fuzzer) know it; the
# check itself stays in code for a message a visitor can read.
# JSON Schema's `\s` (ECMAScript) leaves out U+0085, which Python's isspace() refuses: the
# C1 controls are excluded by name.
_EMAIL_PART = r"[^\s\x00-\x1f\x7f-\x9f<>,;\"'@]+"
EMAIL_PATTERN = rf"^{_EMAIL_PART}@{_EMAIL_PART}\.{_EMAIL_PART}$"


class ContactBody(RequestModel):
    session_id: SessionId | SkipJsonSchema[None] = None
    email: Annotated[
        str,
        Field(
            min_length=3,
            max_length=320,
            json_schema_extra={"pattern": EMAIL_PATTERN},
        ),
    ]


class AssignBody(RequestModel):
    member_id: Annotated[str, Field(min_length=1, max_length=100)] | SkipJsonSchema[None] = Field(
        None, description="a member's memberId or id (GET /team/members); default: the caller"
    )


class ReplyBody(RequestModel):
    content: Annotated[str, Field(min_length=1, max_length=20_000, pattern=NON_BLANK)]


class EventsQuery(QueryModel):
    session_id: SessionId | None = None
    last_event_id: EventId | None = Field(
        None, description="resume after this event id (or send the Last-Event-ID header)"
    )


class InboxQuery(QueryModel):
    last_event_id: EventId | None = None


class ConversationHandoff(ResponseModel):
    conversation_id: str
    status: Status
    assignee: Assignee | None
    online: bool = Field(description="false outside the agent's business hours")
    offline_message: str | None = Field(description="shown to the visitor when not online")


class ContactOut(ResponseModel):
    conversation_id: str
    email: str


class HandoffStats(ResponseModel):
    agent_id: str
    conversations: int
    handoffs: int = Field(description="conversations in which a person was asked for")
    handoff_rate: float = Field(description="handoffs / conversations (0 to 1)")
    median_first_reply_seconds: float | None = Field(
        description="median time from the handoff to the first member's reply"
    )


def _ip(call: Call) -> str:
    return call.request.remote or "unknown"


async def _limit_visitor(call: Call, what: str) -> None:
    per_minute = streaming_of(call).public_chat_per_minute
    await take_token(
        call.request,
        f"{what}-ip:{_ip(call)}",
        per_minute,
        f"Rate limit of {per_minute} requests per minute exceeded",
    )


async def _conversation(call: Call, session_id: str | None) -> Conversation:
    """The team's conversation (key or session), or the visitor's (their session id)."""
    if call.principal is not None:
        return await _handoff(call).for_team(call.team_id, call.params["id"])
    session = session_id or call.request.headers.get(SESSION_HEADER)
    return await _handoff(call).for_visitor(call.params["id"], session)


async def _team_conversation(call: Call) -> Conversation:
    return await _handoff(call).for_team(call.team_id, call.params["id"])


async def _team_state(call: Call, state: HandoffState) -> dict:
    """A member's answer: the state, its assignee with their picture (read back)."""
    body = state.json()
    if state.assignee is not None:
        conv = await _team_conversation(call)
        body["assignee"] = assignee_json(conv, public_origin(call))
    return body


@routes.post(
    "/conversations/{id}/handoff",
    auth="optional",
    cors=True,
    body=HandoffBody,
    parse=_optional_json,
    response=ConversationHandoff,
    envelope=True,
    errors=(400, 403, 404, 429),
)
async def post_handoff(call: Call):
    """Ask for a person (the visitor with the conversation's sessionId, or the team)."""
    if call.principal is None:
        await _limit_visitor(call, "handoff")
    conv = await _conversation(call, call.body.session_id)
    state = await _handoff(call).request_human(conv, by_visitor=call.principal is None)
    return envelope_response(state.json())


def _check_email(email: str) -> str:
    local, at, domain = email.rpartition("@")
    if (
        not at
        or not local
        or "." not in domain
        or any(c.isspace() or ord(c) < 32 or c in "<>,;\"'" for c in email)
    ):
        raise ValidationFailed("email: must be an e-mail address such as ana@example.com")
    return email


@routes.post(
    "/conversations/{id}/contact",
    auth="optional",
    cors=True,
    body=ContactBody,
    response=ContactOut,
    envelope=True,
    errors=(400, 404, 429),
)
async def post_contact(call: Call):
    """Leave an e-mail address for the team's reply (the visitor, outside business hours)."""
    body: ContactBody = call.body
    if call.principal is None:
        await _limit_visitor(call, "contact")
    email = _check_email(body.email)
    conv = await _conversation(call, body.session_id)
    await _handoff(call).leave_contact(conv, email)
    return envelope_response({"conversationId": conv.id, "email": email})


@routes.post(
    "/conversations/{id}/assign",
    body=AssignBody,
    parse=_optional_json,
    response=ConversationHandoff,
    envelope=True,
    errors=(400, 404),
)
async def post_assign(call: Call):
    """Take the conversation (or give it to a member): it is then `human`."""
    body: AssignBody = call.body
    conv = await _team_conversation(call)
    assert call.principal is not None
    member = body.member_id or call.principal.user_id
    state = await _handoff(call).assign(call.team_id, conv, member)
    return envelope_response(await _team_state(call, state))


@routes.post(
    "/conversations/{id}/messages",
    body=ReplyBody,
    response=MessageOut,
    envelope=True,
    status=201,
    errors=(400, 404),
)
async def post_message(call: Call):
    """Reply to the visitor as a member (takes the conversation when nobody has it)."""
    conv = await _team_conversation(call)
    assert call.principal is not None
    message = await _handoff(call).reply(
        call.team_id, conv, call.principal.user_id, call.body.content
    )
    return envelope_response(message_json(message, public_origin(call)), status=201)


@routes.post(
    "/conversations/{id}/release", response=ConversationHandoff, envelope=True, errors=(404,)
)
async def post_release(call: Call):
    """Hand the conversation back to the agent: it is then `bot`."""
    conv = await _team_conversation(call)
    state = await _handoff(call).release(conv)
    return envelope_response(await _team_state(call, state))


@routes.post(
    "/conversations/{id}/close", response=ConversationHandoff, envelope=True, errors=(404,)
)
async def post_close(call: Call):
    """Close the conversation (a visitor's next message reopens it with the agent)."""
    conv = await _team_conversation(call)
    state = await _handoff(call).close(conv)
    return envelope_response(await _team_state(call, state))


@routes.get("/agents/{id}/handoff-stats", response=HandoffStats, envelope=True, errors=(404,))
async def get_handoff_stats(call: Call):
    """The agent's handoff rate and median time to the first human reply."""
    figures = await _handoff(call).stats(call.team_id, call.params["id"])
    return envelope_response(figures)


class WidgetHandoff(ResponseModel):
    enabled: bool
    online: bool
    offline_message: str | None


@routes.get(
    "/widget/handoff/{agentId}",
    auth="public",
    cors=True,
    response=WidgetHandoff,
    response_headers=("Cache-Control",),
    errors=(404,),
)
async def get_widget_handoff(call: Call):
    """Whether the widget offers "Talk to a person", and whether the team is in (public)."""
    found = await _handoff(call).widget(call.params["agentId"])
    response = json_response(found)
    response.headers["Cache-Control"] = "public, max-age=60"
    return response


# ── live events ─────────────────────────────────────────────────────────────────────


def _visitor_message(msg: StoredMessage, origin: str) -> dict[str, Any]:
    # What the visitor's widget shows; tool calls and usage stay with the team.
    return {
        "id": msg.id,
        "role": msg.role,
        "content": msg.content,
        "author": author_json(msg, origin),
        "createdAt": msg.created_at,
    }


def _status_json(event: ConversationEvent, origin: str) -> dict[str, Any]:
    assignee = (
        {
            "id": event.assignee_id,
            "name": event.assignee_name or "",
            "avatarUrl": avatar_url(origin, event.assignee_avatar_id),
        }
        if event.assignee_id
        else None
    )
    return {"conversationId": event.conversation_id, "status": event.status, "assignee": assignee}


def _render_for(team: bool, origin: str):
    """Members see every event with whole messages; the visitor sees messages as the widget
    shows them and status changes, and never a private note (their channel does not read
    notes; one that got here all the same is dropped, not sent)."""

    def render(event: ConversationEvent) -> tuple[str, dict[str, Any]] | None:
        if event.kind == "status":
            return "status", {"type": "status", **_status_json(event, origin)}
        if event.kind == "note":
            if not team or event.note is None:
                return None
            return "note", {"type": "note", "note": note_json(event.note, origin)}
        if event.message is None:
            return None
        shaped = (
            message_json(event.message, origin) if team else _visitor_message(event.message, origin)
        )
        return "message", {
            "type": "message",
            "conversationId": event.conversation_id,
            "message": shaped,
        }

    return render


def _render_inbox(origin: str):
    def render(event: ConversationEvent) -> tuple[str, dict[str, Any]] | None:
        data: dict[str, Any] = {
            "type": "conversation",
            "kind": event.kind,
            "conversationId": event.conversation_id,
            "agentId": event.agent_id,
        }
        if event.kind == "status":
            data.update(_status_json(event, origin))
        elif event.message is not None:
            data["message"] = message_json(event.message, origin)
        else:
            return None
        return "conversation", data

    return render


EVENTS_DOC = (
    "Server-Sent Events: `message` {type, conversationId, message} for each new message (any"
    " author), `status` {type, conversationId, status, assignee} for each change and, for"
    " members only, `note` {type, note} for each private note, each with an `id:`; the first"
    " event is the current `status` (without an id). Send Last-Event-ID (or lastEventId) to"
    " resume after a reconnect."
)


@routes.get(
    "/conversations/{id}/events",
    auth="optional",
    cors=True,
    query=EventsQuery,
    stream=True,
    errors=(400, 404, 429),
    extra={"description": EVENTS_DOC},
)
async def get_conversation_events(call: Call):
    """Follow a conversation live (the visitor with its sessionId, or the team)."""
    query: EventsQuery = call.query
    after = event_streams.last_event_id(call, query.last_event_id)
    conv = await _conversation(call, query.session_id)
    handoff = _handoff(call)
    origin = public_origin(call)
    snapshot = sse.frame(
        "status",
        {
            "type": "status",
            "conversationId": conv.id,
            "status": conv.status,
            "assignee": assignee_json(conv, origin),
        },
    )
    if call.principal is not None:
        async with team_stream_slots(call.request, call.principal):
            following = await handoff.follow_conversation(conv.id, after)
            render = _render_for(True, origin)
            return await event_streams.serve(call, following, render, [snapshot])
    streaming = streaming_of(call)
    limiter = streaming.limiter
    slot = f"event-streams:{_ip(call)}"
    settings = streaming.handoff
    cap = settings.max_public_streams_per_ip
    if not await limiter.hold(slot, cap, settings.max_stream_seconds + STREAM_END_MARGIN_SECONDS):
        raise RateLimited(
            f"At most {cap} open event streams per address",
            headers={"Retry-After": str(STREAM_SLOT_RETRY_AFTER_SECONDS)},
        )
    try:
        following = await handoff.follow_conversation(conv.id, after, members=False)
        await handoff.visitor_seen(conv.id, True)

        async def still_here() -> None:
            await handoff.visitor_seen(conv.id, True)

        try:
            return await event_streams.serve(
                call, following, _render_for(False, origin), [snapshot], still_here
            )
        finally:
            await handoff.visitor_seen(conv.id, False)
    finally:
        await limiter.release(slot)


@routes.get(
    "/inbox/events",
    query=InboxQuery,
    stream=True,
    errors=(400, 429),
    extra={
        "description": "Server-Sent Events: `conversation` {type, kind: status|message,"
        " conversationId, agentId, status, assignee | message} for every status change and"
        " every visitor message of the team's conversations, each with an `id:`"
        " (Last-Event-ID resumes)."
    },
)
async def get_inbox_events(call: Call):
    """Follow the team's inbox live: status changes and visitors' messages."""
    after = event_streams.last_event_id(call, call.query.last_event_id)
    async with team_stream_slots(call.request, call.principal):
        following = await _handoff(call).follow_inbox(call.team_id, after)
        return await event_streams.serve(call, following, _render_inbox(public_origin(call)), [])
