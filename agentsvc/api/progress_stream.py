"""A long job's progress as Server-Sent Events (an evaluation run, a source's sync):
`progress` with the job as its GET shows it, each time it moves on, then `end` with the
last one. The stream ends after `[chat] max_stream_seconds` however long the job takes;
the client reconnects (the job itself goes on)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

import aiohttp

from agentsvc.api.pipeline import finish_response
from agentsvc.api.routing import Call
from agentsvc.api.sse import EventStream, frame
from agentsvc.api.streams import streaming_of

PING_SECONDS = 15.0
WRITE_TIMEOUT_SECONDS = 10.0


async def progress_stream(
    call: Call,
    updates: AsyncIterator[dict[str, Any]],
    name: str = "progress",
    max_seconds: float | None = None,
) -> EventStream:
    """Stream `updates` (the job's JSON each time it moves on, as events `name`) to the
    client; the caller has answered 404 already when the job is not the team's. The stream
    ends after `max_seconds` (default `[chat] max_stream_seconds`)."""
    response = EventStream(ping_interval=PING_SECONDS, send_timeout=WRITE_TIMEOUT_SECONDS)
    finish_response(call.request, response)
    await response.prepare(call.request)
    streaming = streaming_of(call)
    pump = asyncio.ensure_future(
        _pump(response, updates, max_seconds or streaming.chat.max_stream_seconds, name)
    )
    streaming.event_streams.watch(pump, call.request)
    try:
        await asyncio.wait({pump})
    finally:
        pump.cancel()
        await response.stop()
    with contextlib.suppress(ConnectionError, aiohttp.ClientConnectionResetError, TimeoutError):
        async with asyncio.timeout(WRITE_TIMEOUT_SECONDS):
            await response.write_eof()
    return response


async def _pump(
    response: EventStream, updates: AsyncIterator[dict[str, Any]], seconds: float, name: str
) -> None:
    last = None
    with contextlib.suppress(ConnectionError, TimeoutError):
        async with asyncio.timeout(seconds):
            async for last in updates:
                await response.send_framed(frame(name, last))
        if last is not None:
            await response.send_framed(frame("end", last))
