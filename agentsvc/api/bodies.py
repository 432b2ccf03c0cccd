"""Reading request bodies: the size limit, and a cap on how many large ones are in memory.

A JSON body over `[server] max_body_mb` (only the submit and document endpoints take one;
a multipart upload is streamed by its handler and keeps no slot) is read only while it
holds one of `[server] max_large_bodies` slots, so a burst of big requests costs a bounded
amount of memory: the others wait, unread (the socket's flow control stops the sender), up
to `large_body_wait_seconds`, then get `503 SERVER_BUSY`. A slot is held until the handler
lets the body go (`Call.release_body`) or ends, and receiving the body under a slot has a
deadline, so slow senders cannot keep the slots.
"""

from __future__ import annotations

import asyncio
import math
from collections import deque

from aiohttp import StreamReader, web

from agentsvc.api.errors import PayloadTooLarge, RequestTimeout, ServerBusy
from agentsvc.errors import ValidationFailed

# Waiting costs only an unread socket buffer, but the queue is bounded all the same.
WAITERS_PER_SLOT = 8


class BodySlot:
    """A held slot; `release` gives it back once, however often it is called."""

    __slots__ = ("_slots",)

    def __init__(self, slots: BodySlots):
        self._slots: BodySlots | None = slots

    def release(self) -> None:
        """Give the slot back (to the first waiter, if any)."""
        if self._slots is not None:
            self._slots._release()
            self._slots = None


class BodySlots:
    """At most `limit` large bodies held at once; first come, first served."""

    def __init__(self, limit: int, wait_seconds: float):
        self.limit = limit
        self.wait_seconds = wait_seconds
        self.held = 0
        self._waiters: deque[asyncio.Future[None]] = deque()

    def _busy(self) -> ServerBusy:
        retry = max(1, math.ceil(self.wait_seconds))
        return ServerBusy(
            "Too many large requests are being received; try again shortly",
            headers={"Retry-After": str(retry)},
        )

    async def acquire(self) -> BodySlot:
        """Take a slot, waiting up to `wait_seconds`; raise ServerBusy (503) when none frees."""
        if self.held < self.limit and not self._waiters:
            self.held += 1
            return BodySlot(self)
        if len(self._waiters) >= self.limit * WAITERS_PER_SLOT or self.wait_seconds <= 0:
            raise self._busy()
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiters.append(waiter)
        try:
            await asyncio.wait_for(asyncio.shield(waiter), self.wait_seconds)
        except (TimeoutError, asyncio.CancelledError) as exc:
            if waiter.done() and not waiter.cancelled():
                self._release()  # handed over just as the wait ended: pass it on
            else:
                waiter.cancel()
                self._waiters.remove(waiter)
            if isinstance(exc, asyncio.CancelledError):
                raise
            raise self._busy() from None
        return BodySlot(self)

    def _release(self) -> None:
        # Hand the slot straight to the next waiter, so `held` never drops below a waiter.
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_result(None)
                return
        self.held -= 1


def is_large(request: web.Request, limit_bytes: int, general_bytes: int) -> bool:
    """True when a body may exceed the general limit on an endpoint that allows more."""
    if limit_bytes <= general_bytes:
        return False
    length = request.content_length
    return length is None or length > general_bytes


async def read_body(
    request: web.Request, max_mb: float, read_seconds: float | None = None
) -> bytes | bytearray:
    """Read the request body, refusing more than `max_mb` megabytes with 413.

    One buffer only: a declared length is read into a buffer of that size (aiohttp's
    `request.read` gathers the chunks and then copies them). `read_seconds` bounds how long
    receiving may take (408 beyond).
    """
    limit = int(max_mb * 1024 * 1024)
    length = request.content_length
    if length is not None and length > limit:
        raise PayloadTooLarge(f"Request body over {max_mb:g} MB")
    content = request.content
    if length is not None and content.is_eof():
        # The whole (small) body arrived with the headers: take it without awaiting.
        raw: bytes | bytearray = content.read_nowait()
    elif read_seconds is None:
        raw = await _read_chunks(content, length, limit, max_mb)
    else:
        try:
            async with asyncio.timeout(read_seconds):
                raw = await _read_chunks(content, length, limit, max_mb)
        except TimeoutError:
            raise RequestTimeout(
                f"The request body did not arrive within {read_seconds:g} seconds"
            ) from None
    if len(raw) > limit:
        raise PayloadTooLarge(f"Request body over {max_mb:g} MB")
    return raw


async def _read_chunks(
    content: StreamReader, length: int | None, limit: int, max_mb: float
) -> bytearray:
    if length is not None:
        buf = bytearray(length)
        view = memoryview(buf)
        filled = 0
        while filled < length:
            chunk = await content.read(min(length - filled, 1 << 20))
            if not chunk:
                raise ValidationFailed("body: shorter than its Content-Length")
            view[filled : filled + len(chunk)] = chunk
            filled += len(chunk)
        view.release()
        return buf
    buf = bytearray()
    while chunk := await content.readany():
        buf += chunk
        if len(buf) > limit:
            raise PayloadTooLarge(f"Request body over {max_mb:g} MB")
    return buf
