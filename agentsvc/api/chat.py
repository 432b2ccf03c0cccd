"""POST /chat: validate and load, then stream the turn as Server-Sent Events.

The turn is written through `sse.SseSink` (the framing of every stream; text deltas grouped
into one write per `[chat] flush_interval_ms`, keep-alive comments while tools run), and
open streams are registered on the app so shutdown ends them with an `error` event instead
of cutting them. A watchdog ends a stream that stays idle or lives too long; public callers
may hold only a few streams per IP at once, callers with a key or session a bounded number
per key and per team.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Annotated, Any, Literal

import aiohttp
from aiohttp import web
from pydantic import Field
from pydantic.json_schema import SkipJsonSchema

from agentsvc.api import app_keys
from agentsvc.api.errors import RateLimited
from agentsvc.api.limits import STREAM_END_MARGIN_SECONDS, take_token, team_stream_slots
from agentsvc.api.models import RequestModel
from agentsvc.api.pipeline import finish_response
from agentsvc.api.routing import Call, RouteTable
from agentsvc.api.sse import SseSink, chat_response
from agentsvc.api.streams import SHUTDOWN_GRACE_SECONDS, StreamingDeps, streaming_of
from agentsvc.errors import Forbidden
from agentsvc.services.agents.identity import EndUserClaim
from agentsvc.services.chat import start as chat_service
from agentsvc.services.chat import turn as turn_service
from agentsvc.services.chat.turns import ChatTurns
from agentsvc.services.desk.visitor_context import VisitorContext, visitor_context

routes = RouteTable("chat")

# A full stream slot frees up when a reply ends, typically within seconds.
STREAM_SLOT_RETRY_AFTER_SECONDS = 2


class ChatMessageIn(RequestModel):
    role: Literal["user", "assistant"]
    content: Annotated[str, Field(max_length=100_000)]


ATTRIBUTES_SCHEMA = {
    "type": "object",
    "maxProperties": 30,
    "propertyNames": {"minLength": 1, "maxLength": 40},
    "additionalProperties": {
        "anyOf": [{"type": "string", "maxLength": 500}, {"type": "number"}, {"type": "boolean"}]
    },
}


class ChatUser(RequestModel):
    nullable = frozenset({"id", "email", "name", "attributes"})

    id: Annotated[str, Field(max_length=200)] | None = None
    email: Annotated[str, Field(max_length=320)] | None = None
    name: Annotated[str, Field(max_length=200)] | None = None
    attributes: dict[str, Any] | None = Field(
        None,
        description="what the site gave AgentWidget.identify: at most 30 names of 1 to 40"
        " characters, each a string (at most 500 characters), a number or true/false; shown"
        " to the team as declared, the latest ones kept",
        json_schema_extra=ATTRIBUTES_SCHEMA,
    )


PageText = Annotated[str, Field(max_length=2_000)]


class ChatContext(RequestModel):
    """Where the visitor is: kept on a new conversation, shown to the team as declared."""

    nullable = frozenset({"pageUrl", "referrer", "language"})

    page_url: PageText | None = Field(None, description="the page (http(s) only, else dropped)")
    referrer: PageText | None = Field(
        None, description="document.referrer (http(s) only, else dropped)"
    )
    language: PageText | None = Field(None, description="navigator.language")


class ChatBody(RequestModel):
    nullable = frozenset(
        {
            "conversationId",
            "sessionId",
            "user",
            "userHash",
            "userToken",
            "triggerId",
            "context",
            "version",
        }
    )

    agent_id: Annotated[str, Field(min_length=1, max_length=100)]
    messages: Annotated[list[ChatMessageIn], Field(min_length=1, max_length=500)]
    conversation_id: Annotated[str, Field(min_length=1, max_length=100)] | None = None
    session_id: Annotated[str, Field(min_length=1, max_length=200)] | None = None
    user: ChatUser | SkipJsonSchema[None] = None
    context: ChatContext | None = None
    trigger_id: Annotated[str, Field(min_length=1, max_length=100)] | None = Field(
        None,
        description="the widget trigger the visitor's chat started from (analytics); kept on"
        " a new conversation when it is one of the agent's triggers",
    )
    user_hash: Annotated[str, Field(max_length=200)] | None = Field(
        None, description="HMAC-SHA256 of user.id with the agent's identity secret (hex)"
    )
    version: Literal["draft"] | Annotated[int, Field(ge=1, le=999_999_999)] | None = Field(
        None,
        description="the team only (a key or a session): talk to the agent's draft or to an"
        " earlier version, a preview; visitors always talk to the live version",
    )
    # Not bounded here: an oversized token is refused unread (the caller is anonymous), as
    # every other token that does not verify; the body limit bounds the request.
    user_token: str | None = Field(
        None,
        description="HS256 JWT signed with the agent's identity secret: claims sub (the"
        " user id), email, name, exp; replaces user when sent",
    )


def _turns(call: Call) -> ChatTurns:
    return call.app[app_keys.chat_turns_key]


def _client_ip(call: Call) -> str:
    return call.request.remote or "unknown"


async def _check_public_rate(call: Call, per_minute: int) -> None:
    await take_token(
        call.request,
        f"chat-ip:{_client_ip(call)}",
        per_minute,
        f"Chat rate limit of {per_minute} messages per minute exceeded",
        report=True,
    )


@routes.post(
    "/chat",
    auth="optional",
    cors=True,
    body=ChatBody,
    stream=True,
    errors=(400, 403, 404, 429),
)
async def post_chat(call: Call):
    """Send a message to an agent and stream the reply as Server-Sent Events."""
    if call.principal is not None:
        # A key's or a member's streams are capped per key and per team instead.
        async with team_stream_slots(call.request, call.principal):
            return await _stream_chat(call)
    # Public callers: a slot among the IP's concurrent streams first (refused without
    # spending a message of the rate limit), then the per-minute limit.
    streaming = streaming_of(call)
    limiter = streaming.limiter
    slot = f"chat-streams:{_client_ip(call)}"
    settings = streaming.chat
    cap = settings.max_public_streams_per_ip
    if not await limiter.hold(slot, cap, settings.max_stream_seconds + STREAM_END_MARGIN_SECONDS):
        raise RateLimited(
            f"At most {cap} open chat streams per address",
            headers={"Retry-After": str(STREAM_SLOT_RETRY_AFTER_SECONDS)},
        )
    try:
        await _check_public_rate(call, streaming.public_chat_per_minute)
        return await _stream_chat(call)
    finally:
        # Shielded: a stream cancelled at shutdown still gives its slot back.
        await asyncio.shield(limiter.release(slot))


async def _stream_chat(call: Call) -> web.StreamResponse:
    body: ChatBody = call.body
    if body.version is not None and call.principal is None:
        raise Forbidden(
            "Only the agent's team can talk to its draft or an earlier version: sign in, or"
            " send the team's API key"
        )
    streaming = streaming_of(call)
    visitor = _visitor(body)
    # With an identity secret set, only a signed user stands for a public caller.
    user = await streaming.verify_end_user(
        body.agent_id,
        EndUserClaim(
            body.user.model_dump(exclude={"attributes"}) if body.user else None,
            body.user_hash,
            body.user_token,
            trusted=call.principal is not None,
        ),
    )
    chat = chat_service.ChatInput(
        agent_id=body.agent_id,
        messages=tuple((m.role, m.content) for m in body.messages),
        conversation_id=body.conversation_id,
        session_id=body.session_id,
        user=user,
        team_id=call.principal.team_id if call.principal else None,
        trigger_id=body.trigger_id,
        visitor=visitor,
        version=body.version,
    )
    turn = await _turns(call).start(chat)

    response = chat_response()
    finish_response(call.request, response)
    await response.prepare(call.request)
    if isinstance(turn, turn_service.HeldTurn):
        await _held_stream(call, response, turn)
        return response
    gauge = streaming.open_streams
    gauge.inc()
    try:
        await _run_stream(call, streaming, response, turn)
    finally:
        gauge.dec()
    return response


def _visitor(body: ChatBody) -> VisitorContext | None:
    """What the widget tells of the visitor (ValidationFailed for bad attributes)."""
    context = body.context
    attributes = body.user.attributes if body.user is not None else None
    if context is None and attributes is None:
        return None
    return visitor_context(
        context.page_url if context else None,
        context.referrer if context else None,
        context.language if context else None,
        attributes,
    )


async def _held_stream(call: Call, response: web.StreamResponse, turn: turn_service.HeldTurn):
    """A person has the conversation: the message is stored; no model reply follows."""
    sink = SseSink(response, 0.0)
    with contextlib.suppress(
        turn_service.ClientGone, ConnectionError, aiohttp.ClientConnectionResetError
    ):
        await _turns(call).play(turn, sink, people_can_answer=True)
        await response.write_eof()
    sink.close()


async def _run_stream(
    call: Call, streaming: StreamingDeps, response: web.StreamResponse, turn: turn_service.Turn
) -> None:
    settings = streaming.chat
    sink = SseSink(response, settings.flush_interval_ms / 1000.0)
    # The visitor's widget shows a person's replies: the model may hand the chat over.
    runner = _turns(call).runner(turn, sink, people_can_answer=True)
    streams = streaming.chat_streams
    task = asyncio.ensure_future(runner.run())
    streams.add(task)
    try:
        error = await _watch(task, sink, settings)
    except asyncio.CancelledError:
        task.cancel()
        await asyncio.wait({task})
        raise
    finally:
        sink.close()
    if task.cancelled():
        if error is None and streams.closing:
            error = {"code": "SHUTTING_DOWN", "message": "The server is shutting down"}
    elif isinstance(task.exception(), turn_service.ClientGone):
        return
    elif task.exception() is not None:
        raise task.exception()  # type: ignore[misc]
    try:
        # Bounded: a client that stopped reading must not hold the connection open.
        async with asyncio.timeout(SHUTDOWN_GRACE_SECONDS):
            if error is not None:
                with contextlib.suppress(turn_service.ClientGone):
                    await sink.event("error", {"type": "error", "error": error})
            with contextlib.suppress(ConnectionError, aiohttp.ClientConnectionResetError):
                await response.write_eof()
    except TimeoutError:
        if call.request.transport is not None:
            call.request.transport.abort()


async def _watch(task: asyncio.Task, sink: SseSink, settings) -> dict[str, str] | None:
    """Wait for the turn; stop it when idle or too old and return the error to send."""
    loop = asyncio.get_running_loop()
    lifetime, idle = settings.max_stream_seconds, settings.idle_timeout_seconds
    deadline = loop.time() + lifetime
    while True:
        wake = min(deadline, sink.last_activity + idle)
        done, _ = await asyncio.wait({task}, timeout=max(0.0, wake - loop.time()))
        if done:
            return None
        now = loop.time()
        if now >= deadline:
            error = {
                "code": "STREAM_TOO_LONG",
                "message": f"The stream reached its maximum duration of {lifetime:g} seconds",
            }
        elif now - sink.last_activity >= idle:
            error = {
                "code": "STREAM_IDLE_TIMEOUT",
                "message": f"The reply produced nothing for {idle:g} seconds",
            }
        else:
            continue
        task.cancel()
        await asyncio.wait({task})
        # The turn may have finished on its own meanwhile: then it has already ended.
        return error if task.cancelled() else None
