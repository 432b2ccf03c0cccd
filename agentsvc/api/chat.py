"""POST /chat: validate and load, then stream the turn as Server-Sent Events.

A plain `StreamResponse` carries the stream (aiohttp-sse adds a ping task per stream and
its own framing, neither needed here): events are written as `event:` and `data:` lines,
text deltas are grouped into one write per `[chat] flush_interval_ms`, keep-alive comments
flow while tools run, and open streams are registered on the app so shutdown ends them
with an `error` event instead of cutting them. A watchdog ends a stream that stays idle or
lives too long; public callers may hold only a few streams per IP at once, callers with a
key or session a bounded number per key and per team.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Annotated, Any, Literal

import aiohttp
import orjson
from aiohttp import web
from pydantic import Field
from pydantic.json_schema import SkipJsonSchema

from agentsvc.api import app_keys
from agentsvc.api.errors import RateLimited
from agentsvc.api.limits import STREAM_END_MARGIN_SECONDS, take_token, team_stream_slots
from agentsvc.api.models import RequestModel
from agentsvc.api.pipeline import finish_response
from agentsvc.api.routing import Call, RouteTable
from agentsvc.services.agents import identity as identity_service
from agentsvc.services.chat import start as chat_service
from agentsvc.services.chat import turn as turn_service

routes = RouteTable("chat")

SHUTDOWN_GRACE_SECONDS = 5.0
# A full stream slot frees up when a reply ends, typically within seconds.
STREAM_SLOT_RETRY_AFTER_SECONDS = 2


class ChatMessageIn(RequestModel):
    role: Literal["user", "assistant"]
    content: Annotated[str, Field(max_length=100_000)]


class ChatUser(RequestModel):
    nullable = frozenset({"id", "email", "name"})

    id: Annotated[str, Field(max_length=200)] | None = None
    email: Annotated[str, Field(max_length=320)] | None = None
    name: Annotated[str, Field(max_length=200)] | None = None


class ChatBody(RequestModel):
    nullable = frozenset(
        {"conversationId", "sessionId", "user", "userHash", "userToken", "triggerId"}
    )

    agent_id: Annotated[str, Field(min_length=1, max_length=100)]
    messages: Annotated[list[ChatMessageIn], Field(min_length=1, max_length=500)]
    conversation_id: Annotated[str, Field(min_length=1, max_length=100)] | None = None
    session_id: Annotated[str, Field(min_length=1, max_length=200)] | None = None
    user: ChatUser | SkipJsonSchema[None] = None
    trigger_id: Annotated[str, Field(min_length=1, max_length=100)] | None = Field(
        None,
        description="the widget trigger the visitor's chat started from (analytics); kept on"
        " a new conversation when it is one of the agent's triggers",
    )
    user_hash: Annotated[str, Field(max_length=200)] | None = Field(
        None, description="HMAC-SHA256 of user.id with the agent's identity secret (hex)"
    )
    # Not bounded here: an oversized token is refused unread (the caller is anonymous), as
    # every other token that does not verify; the body limit bounds the request.
    user_token: str | None = Field(
        None,
        description="HS256 JWT signed with the agent's identity secret: claims sub (the"
        " user id), email, name, exp; replaces user when sent",
    )


class SseSink:
    """Writes a turn's events to the response, grouping text deltas into timed writes."""

    def __init__(self, response: web.StreamResponse, flush_interval: float):
        self._response = response
        self._interval = flush_interval
        self._loop = asyncio.get_running_loop()
        self._pending: list[str] = []
        self._pending_index = 0
        self._last_flush = 0.0
        self._timer: asyncio.TimerHandle | None = None
        self._timer_task: asyncio.Task | None = None
        self._gone = False
        # When the turn last produced something (event, delta or keep-alive): the watchdog's
        # idle clock.
        self.last_activity = self._loop.time()

    @staticmethod
    def frame(name: str, data: dict[str, Any]) -> bytes:
        """One SSE event: `event:` line, `data:` line, blank line."""
        return b"event: " + name.encode() + b"\ndata: " + orjson.dumps(data) + b"\n\n"

    def _take_pending(self) -> bytes:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if not self._pending:
            return b""
        text = "".join(self._pending)
        self._pending = []
        data = {
            "type": "content_block_delta",
            "index": self._pending_index,
            "delta": {"type": "text_delta", "text": text},
        }
        return self.frame("content_block_delta", data)

    async def _write(self, payload: bytes) -> None:
        if self._gone:
            raise turn_service.ClientGone()
        if not payload:
            return
        try:
            await self._response.write(payload)
        except (ConnectionError, aiohttp.ClientConnectionResetError) as exc:
            self._gone = True
            raise turn_service.ClientGone() from exc

    async def event(self, name: str, data: dict[str, Any]) -> None:
        self.last_activity = self._loop.time()
        await self._write(self._take_pending() + self.frame(name, data))

    async def delta(self, index: int, text: str) -> None:
        self._pending.append(text)
        self._pending_index = index
        now = self.last_activity = self._loop.time()
        if now - self._last_flush >= self._interval:
            self._last_flush = now
            await self._write(self._take_pending())
        elif self._timer is None:
            self._timer = self._loop.call_later(
                self._interval - (now - self._last_flush), self._on_timer
            )

    def _on_timer(self) -> None:
        self._timer = None
        if self._pending and not self._gone:
            self._timer_task = asyncio.ensure_future(self._flush_quietly())

    async def _flush_quietly(self) -> None:
        # The pending text is taken when this task runs, not when it was scheduled: an event
        # written in between has already flushed it, so deltas never overtake events.
        self._last_flush = self._loop.time()
        # A failure here is noticed by the next write of the turn (self._gone).
        with contextlib.suppress(turn_service.ClientGone):
            await self._write(self._take_pending())

    async def keepalive(self) -> None:
        self.last_activity = self._loop.time()
        await self._write(self._take_pending() + b": keep-alive\n\n")

    def close(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None


class OpenStreams:
    """The chat streams in flight, so shutdown can end them cleanly."""

    def __init__(self) -> None:
        self._tasks: set[asyncio.Task] = set()
        self.closing = False

    def add(self, task: asyncio.Task) -> None:
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def __len__(self) -> int:
        return len(self._tasks)

    async def close_all(self) -> None:
        """Stop every turn (each stores what it produced) and wait for the streams to end."""
        self.closing = True
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.wait(tasks, timeout=SHUTDOWN_GRACE_SECONDS)


def _client_ip(call: Call) -> str:
    return call.request.remote or "unknown"


async def _check_public_rate(call: Call) -> None:
    per_minute = call.app[app_keys.settings_key].ratelimit.public_chat_per_minute
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
    errors=(400, 404, 429),
)
async def post_chat(call: Call):
    """Send a message to an agent and stream the reply as Server-Sent Events."""
    if call.principal is not None:
        # A key's or a member's streams are capped per key and per team instead.
        async with team_stream_slots(call.request, call.principal):
            return await _stream_chat(call)
    # Public callers: a slot among the IP's concurrent streams first (refused without
    # spending a message of the rate limit), then the per-minute limit.
    limiter = call.app[app_keys.limiter_key]
    slot = f"chat-streams:{_client_ip(call)}"
    settings = call.app[app_keys.settings_key].chat
    cap = settings.max_public_streams_per_ip
    if not await limiter.hold(slot, cap, settings.max_stream_seconds + STREAM_END_MARGIN_SECONDS):
        raise RateLimited(
            f"At most {cap} open chat streams per address",
            headers={"Retry-After": str(STREAM_SLOT_RETRY_AFTER_SECONDS)},
        )
    try:
        await _check_public_rate(call)
        return await _stream_chat(call)
    finally:
        # Shielded: a stream cancelled at shutdown still gives its slot back.
        await asyncio.shield(limiter.release(slot))


async def _stream_chat(call: Call) -> web.StreamResponse:
    body: ChatBody = call.body
    app = call.app
    # With an identity secret set, only a signed user stands for a public caller.
    user = await identity_service.verify_end_user(
        app[app_keys.db_key],
        app[app_keys.secret_box_key],
        body.agent_id,
        identity_service.EndUserClaim(
            body.user.model_dump() if body.user else None,
            body.user_hash,
            body.user_token,
            trusted=call.principal is not None,
        ),
        app[app_keys.settings_key].identity.max_token_lifetime_hours,
    )
    chat = chat_service.ChatInput(
        agent_id=body.agent_id,
        messages=tuple((m.role, m.content) for m in body.messages),
        conversation_id=body.conversation_id,
        session_id=body.session_id,
        user=user,
        team_id=call.principal.team_id if call.principal else None,
        trigger_id=body.trigger_id,
    )
    turn = await app[app_keys.chat_turns_key].start(chat)

    response = web.StreamResponse(
        headers={
            "Content-Type": "text/event-stream; charset=utf-8",
            "Cache-Control": "no-cache",
            "X-Accel-Buffering": "no",  # nginx: do not buffer the stream
        }
    )
    finish_response(call.request, response)
    await response.prepare(call.request)
    if isinstance(turn, turn_service.HeldTurn):
        await _held_stream(call, response, turn)
        return response
    gauge = app[app_keys.metrics_key].open_streams
    gauge.inc()
    try:
        await _run_stream(call, response, turn)
    finally:
        gauge.dec()
    return response


async def _held_stream(call: Call, response: web.StreamResponse, turn: turn_service.HeldTurn):
    """A person has the conversation: the message is stored; no model reply follows."""
    sink = SseSink(response, 0.0)
    with contextlib.suppress(
        turn_service.ClientGone, ConnectionError, aiohttp.ClientConnectionResetError
    ):
        await call.app[app_keys.chat_turns_key].play(turn, sink, people_can_answer=True)
        await response.write_eof()
    sink.close()


async def _run_stream(call: Call, response: web.StreamResponse, turn: turn_service.Turn) -> None:
    app = call.app
    settings = app[app_keys.settings_key].chat
    sink = SseSink(response, settings.flush_interval_ms / 1000.0)
    # The visitor's widget shows a person's replies: the model may hand the chat over.
    runner = app[app_keys.chat_turns_key].runner(turn, sink, people_can_answer=True)
    streams = app[app_keys.chat_streams_key]
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
