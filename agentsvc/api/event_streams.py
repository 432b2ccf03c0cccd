"""Serving live events as Server-Sent Events (aiohttp-sse): resuming, a bounded life, and
shutdown.

Each stream is an `sse.EventStream` writing the events a `Following` gives
(services/handoff/live.py) as `id:`, `event:` and `data:` lines; the library pings while
nothing happens and disconnects a client that stops reading (its send timeout). A stream
ends after `[handoff] max_stream_seconds` (the client reconnects with its Last-Event-ID)
and at shutdown.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from typing import Any

import aiohttp
from aiohttp import web
from aiohttp_sse import EventSourceResponse

from agentsvc.api.pipeline import finish_response
from agentsvc.api.routing import Call
from agentsvc.api.sse import EventStream, frame, reconnect_after
from agentsvc.api.streams import streaming_of
from agentsvc.errors import ValidationFailed
from agentsvc.services.handoff.live import FollowerTooSlow, Following
from agentsvc.store.conversation_events import ConversationEvent

# A client that cannot take a write within this long is gone.
WRITE_TIMEOUT_SECONDS = 10.0
RECONNECT_MS = 2000
MAX_EVENT_ID = 2**63 - 1

# An event's name and data, or None for an event this stream does not send.
Render = Callable[[ConversationEvent], tuple[str, dict[str, Any]] | None]


def last_event_id(call: Call, from_query: int | None) -> int | None:
    """The Last-Event-ID header (EventSource sends it on reconnect) or the query's
    `lastEventId`; None when neither is sent.

    Read before the stream starts (aiohttp-sse's `last_event_id` needs a prepared
    response), so a malformed id is still a 400."""
    header = call.request.headers.get(EventSourceResponse.DEFAULT_LAST_EVENT_HEADER)
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
    streaming = streaming_of(call)
    settings = streaming.handoff
    response = EventStream(
        ping_interval=settings.keepalive_seconds, send_timeout=WRITE_TIMEOUT_SECONDS
    )
    finish_response(call.request, response)
    try:
        await response.prepare(call.request)
    except BaseException:
        following.close()
        raise
    pump = asyncio.ensure_future(_pump(response, following, render, first, on_keepalive, settings))
    streaming.event_streams.watch(pump, call.request)
    try:
        await asyncio.wait({pump})
    except asyncio.CancelledError:
        pump.cancel()
        await asyncio.wait({pump})
        raise
    finally:
        following.close()
        await response.stop()
    if not pump.cancelled() and pump.exception() is not None:
        raise pump.exception()  # type: ignore[misc]
    with contextlib.suppress(ConnectionError, aiohttp.ClientConnectionResetError, TimeoutError):
        async with asyncio.timeout(WRITE_TIMEOUT_SECONDS):
            await response.write_eof()
    return response


async def _pump(
    response: EventStream,
    following: Following,
    render: Render,
    first: list[bytes],
    on_keepalive: Callable[[], Awaitable[None]] | None,
    settings: Any,
) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + settings.max_stream_seconds
    try:
        await response.send_framed(reconnect_after(RECONNECT_MS) + b"".join(first))
        while (left := deadline - loop.time()) > 0:
            batch = await following.next(min(settings.keepalive_seconds, left))
            shown = [(r, e.id) for e in batch if (r := render(e)) is not None]
            if shown:
                await response.send_framed(b"".join(frame(*r, event_id) for r, event_id in shown))
            elif batch:
                continue
            elif not response.is_connected():
                return  # the library's ping found the client gone
            elif on_keepalive is not None:
                await on_keepalive()
    except (ConnectionError, aiohttp.ClientConnectionResetError, TimeoutError, FollowerTooSlow):
        return  # gone, stuck or too far behind: the client reconnects with Last-Event-ID
