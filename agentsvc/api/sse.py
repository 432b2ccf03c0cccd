"""Server-Sent Events: the one framing and the headers of every stream, and its two writers.

An event is `id:` (when it has one), `event:` and `data:` lines (compact JSON) and a blank
line; keep-alives are comment lines. The GET event streams (a conversation's live events,
the team's inbox) are `EventStream`s: aiohttp-sse's `EventSourceResponse` with our headers,
its ping as the keep-alive and its send timeout against clients that stop reading.
`POST /chat` writes through `SseSink` on a plain `StreamResponse`: text deltas grouped into
one write per flush interval, keep-alives only while a tool runs, and an idle clock for its
watchdog, none of which the library has (and its ping task per stream would add nothing).
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import aiohttp
import orjson
from aiohttp import web
from aiohttp_sse import EventSourceResponse

from agentsvc.services.chat import turn as turn_service

HEADERS = {
    "Content-Type": "text/event-stream; charset=utf-8",
    "Cache-Control": "no-cache",
    "X-Accel-Buffering": "no",  # nginx: do not buffer the stream
}
KEEPALIVE = b": keep-alive\n\n"
LINE_END = "\n"  # the library's default is CRLF; every client reads either


def frame(name: str, data: dict[str, Any], event_id: int | None = None) -> bytes:
    """One SSE event, with its id when it has one (resuming starts after it)."""
    head = b"" if event_id is None else b"id: %d\n" % event_id
    return head + b"event: " + name.encode() + b"\ndata: " + orjson.dumps(data) + b"\n\n"


def reconnect_after(milliseconds: int) -> bytes:
    """The `retry:` field alone: how long a client waits before reconnecting."""
    return b"retry: %d\n\n" % milliseconds


def chat_response() -> web.StreamResponse:
    """The response a chat turn streams into (see `SseSink`)."""
    return web.StreamResponse(headers=HEADERS)


class EventStream(EventSourceResponse):
    """A GET event stream: aiohttp-sse's response with our headers and line ends.

    The library pings every `ping_interval` (a `: ping` comment), gives the socket a send
    timeout (TCP_USER_TIMEOUT) and aborts a connection whose write stalls longer.
    """

    def __init__(self, *, ping_interval: float, send_timeout: float):
        super().__init__(
            sep=LINE_END,
            send_timeout=send_timeout,
            ping_interval=ping_interval,
            allow_all_methods=True,  # the route table decides the methods
        )
        # Its own set adds `Connection: keep-alive` and drops the charset: ours stay as
        # every client has always received them.
        self.headers.clear()
        self.headers.update(HEADERS)

    async def send_framed(self, payload: bytes) -> None:
        """Write events already framed under the library's send timeout: a client that
        cannot take them in time is disconnected (TimeoutError).

        The library's `send()` takes one event as text; ours are framed once (`frame`) and a
        batch goes out in one write, as the `retry:` field with the first events does."""
        try:
            async with asyncio.timeout(self._send_timeout):
                await self.write(payload)
        except ConnectionResetError:
            self.stop_streaming()
            raise
        except TimeoutError:
            self.stop_streaming()
            self._abort_transport()
            raise

    async def stop(self) -> None:
        """Stop the library's ping and wait for it: the stream's writes are over (a ping that
        found the client gone is no error of the stream)."""
        self.stop_streaming()
        with contextlib.suppress(ConnectionError):
            await self.wait()


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
        return frame("content_block_delta", data)

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
        await self._write(self._take_pending() + frame(name, data))

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
        await self._write(self._take_pending() + KEEPALIVE)

    def close(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
