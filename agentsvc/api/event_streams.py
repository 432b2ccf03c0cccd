"""Serving live events as Server-Sent Events: framing, keep-alives, a bounded life, and
shutdown.

Each stream writes the events a `Following` gives (services/handoff/live.py) as `id:`,
`event:` and `data:` lines. A client that stops reading is dropped after a bounded wait;
a stream ends after `[handoff] max_stream_seconds` (the client reconnects with its
Last-Event-ID) and at shutdown.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from typing import Any

import aiohttp
import orjson
from aiohttp import web

from agentsvc.api import app_keys
from agentsvc.api.chat import OpenStreams
from agentsvc.api.pipeline import finish_response
from agentsvc.api.routing import Call
from agentsvc.errors import ValidationFailed
from agentsvc.services.handoff.live import FollowerTooSlow, Following
from agentsvc.store.conversation_events import ConversationEvent

# A client that cannot take a write within this long is gone.
WRITE_TIMEOUT_SECONDS = 10.0
RECONNECT_MS = 2000
MAX_EVENT_ID = 2**63 - 1
SSE_HEADERS = {
    "Content-Type": "text/event-stream; charset=utf-8",
    "Cache-Control": "no-cache",
    "X-Accel-Buffering": "no",  # nginx: do not buffer the stream
}

Render = Callable[[ConversationEvent], tuple[str, dict[str, Any]]]
# How often closed connections are looked for (an idle stream writes nothing for a while).
GONE_CHECK_SECONDS = 1.0


class EventStreams(OpenStreams):
    """The open event streams: ended at shutdown, and soon after their client has gone.

    An idle stream only learns that its client left when it next writes; one task looks
    at every stream's connection each second instead, so a visitor who closed the page
    counts as gone (their replies go by e-mail) within a second, not a keep-alive later.
    """

    def __init__(self) -> None:
        super().__init__()
        self._watched: dict[asyncio.Task, web.BaseRequest] = {}
        self._watcher: asyncio.Task | None = None

    def watch(self, task: asyncio.Task, request: web.BaseRequest) -> None:
        self.add(task)
        self._watched[task] = request
        task.add_done_callback(lambda t: self._watched.pop(t, None))
        if self._watcher is None:
            self._watcher = asyncio.get_running_loop().create_task(self._look())

    async def _look(self) -> None:
        try:
            while self._watched:
                await asyncio.sleep(GONE_CHECK_SECONDS)
                for task, request in list(self._watched.items()):
                    transport = request.transport
                    if transport is None or transport.is_closing():
                        task.cancel()
        finally:
            self._watcher = None

    async def close_all(self) -> None:
        if self._watcher is not None:
            self._watcher.cancel()
        await super().close_all()


def frame(name: str, data: dict[str, Any], event_id: int | None = None) -> bytes:
    """One SSE event, with its id when it has one (resuming starts after it)."""
    head = b"" if event_id is None else b"id: %d\n" % event_id
    return head + b"event: " + name.encode() + b"\ndata: " + orjson.dumps(data) + b"\n\n"


def last_event_id(call: Call, from_query: int | None) -> int | None:
    """The Last-Event-ID header (EventSource sends it on reconnect) or the query's
    `lastEventId`; None when neither is sent."""
    header = call.request.headers.get("Last-Event-ID")
    if header is None or not header.strip():
        return from_query
    value = header.strip()
    if not value.isdigit() or len(value) > 19 or int(value) > MAX_EVENT_ID:
        raise ValidationFailed("Last-Event-ID: must be an event id (a whole number)")
    return int(value)


async def serve(
    call: Call,
    following: Following,
    render: Render,
    first: list[bytes],
    on_keepalive: Callable[[], Awaitable[None]] | None = None,
) -> web.StreamResponse:
    """Stream the followed events until the client leaves, the stream's time is up, or the
    server stops."""
    app = call.app
    settings = app[app_keys.settings_key].handoff
    response = web.StreamResponse(headers=SSE_HEADERS)
    finish_response(call.request, response)
    try:
        await response.prepare(call.request)
    except BaseException:
        following.close()
        raise
    streams = app[app_keys.event_streams_key]
    pump = asyncio.ensure_future(_pump(response, following, render, first, on_keepalive, settings))
    streams.watch(pump, call.request)
    try:
        await asyncio.wait({pump})
    except asyncio.CancelledError:
        pump.cancel()
        await asyncio.wait({pump})
        raise
    finally:
        following.close()
    if not pump.cancelled() and pump.exception() is not None:
        raise pump.exception()  # type: ignore[misc]
    with contextlib.suppress(ConnectionError, aiohttp.ClientConnectionResetError, TimeoutError):
        async with asyncio.timeout(WRITE_TIMEOUT_SECONDS):
            await response.write_eof()
    return response


async def _pump(
    response: web.StreamResponse,
    following: Following,
    render: Render,
    first: list[bytes],
    on_keepalive: Callable[[], Awaitable[None]] | None,
    settings: Any,
) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + settings.max_stream_seconds

    async def write(payload: bytes) -> None:
        async with asyncio.timeout(WRITE_TIMEOUT_SECONDS):
            await response.write(payload)

    try:
        await write(b"retry: %d\n\n" % RECONNECT_MS + b"".join(first))
        while (left := deadline - loop.time()) > 0:
            batch = await following.next(min(settings.keepalive_seconds, left))
            if batch:
                await write(b"".join(frame(*render(e), e.id) for e in batch))
            else:
                await write(b": keep-alive\n\n")
                if on_keepalive is not None:
                    await on_keepalive()
    except (ConnectionError, aiohttp.ClientConnectionResetError, TimeoutError, FollowerTooSlow):
        return  # gone, stuck or too far behind: the client reconnects with Last-Event-ID
