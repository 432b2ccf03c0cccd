"""MCP sessions kept open between tool calls: one pool for the app.

A call on a new session pays a connection, the protocol's handshake (`server/discover`, or
`initialize` and its notification on a 2025 server) and, on its first call, a listing of the
server's tools (the SDK checks each result against the tool's declared output schema): more
than 100 ms before the tool runs. So a session that ended a call cleanly is kept, with its
connections, for `idle_seconds`, and the next call of the same key takes it.

The key is the team, the URL and every header sent (credentials included): a session never
serves another team or other credentials, and a changed URL or header opens a new one, with
its connections checked by the outbound guards again. A session serves one call at a time
(concurrent calls open more; at most MAX_IDLE_PER_KEY of one key are kept), so a call's
failure, deadline or byte budget never touches another call. At most `max_idle` sessions are
kept; the least recently used is closed first.

The SDK's client must be entered and left in one task, so each session lives in a task of
its own and calls are handed to it; cancelling that task ends every request of the session.
The sessions live on the app's event loop, where calls ran before: a kept session leaves
the loop less work per call than a new one did (no handshake, no listing to validate).
Listings, whose validation is CPU-heavy, still open a session of their own on a loop in a
worker thread (`McpClient.list_tools`).
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Hashable
from contextlib import AbstractAsyncContextManager
from typing import Any, TypeVar

T = TypeVar("T")

MAX_IDLE_PER_KEY = 4  # idle sessions kept for one key (a burst of calls opens more)
CLOSE_SECONDS = 2.0  # a polite close (the SDK tells the server) waits this long, then cancels

Job = tuple[Callable[[Any], Awaitable[Any]], asyncio.Future]


class SessionEnded(Exception):
    """The session was ended (the service stopping) before the call's answer came."""


class Session:
    """One initialized session of the SDK's client, in a task of its own."""

    def __init__(
        self, key: Hashable, opened: Callable[[], AbstractAsyncContextManager[Any]], link: Any
    ):
        self.key = key
        # What the session's transport counts against (mcp_transport.Link); its `ended`
        # stops every request once the session is given up.
        self.link = link
        self.expiry: asyncio.TimerHandle | None = None
        self._jobs: asyncio.Queue[Job | None] = asyncio.Queue()
        self._ready: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        # A fresh context: the session outlives the call (and the span) that opened it.
        self._task = asyncio.create_task(self._serve(opened), context=contextvars.Context())

    @property
    def alive(self) -> bool:
        return not self._task.done()

    async def run(self, fn: Callable[[Any], Awaitable[T]]) -> T:
        """`fn(client)` on this session, once it is open; what it raises, or what ended the
        session meanwhile (the SDK's task group, as one exception group)."""
        await self._ready
        future: asyncio.Future[T] = asyncio.get_running_loop().create_future()
        self._jobs.put_nowait((fn, future))
        return await future

    async def _serve(self, opened: Callable[[], AbstractAsyncContextManager[Any]]) -> None:
        job: Job | None = None
        try:
            async with opened() as client:
                _settle(self._ready, None)
                while (job := await self._jobs.get()) is not None:
                    fn, future = job
                    try:
                        _settle(future, await fn(client))
                    except Exception as exc:  # noqa: BLE001 - the caller judges it
                        _fail(future, exc)
                    job = None
        except asyncio.CancelledError:
            self._cancel_waiters(job)
            raise
        except BaseException as exc:  # noqa: BLE001 - handed to whoever waits
            _fail(self._ready, exc)
            if job is not None:
                _fail(job[1], exc)
        self._cancel_waiters(job)

    def _cancel_waiters(self, job: Job | None) -> None:
        # An exception, not a cancellation: the waiting call itself was not cancelled.
        _fail(self._ready, SessionEnded())
        if job is not None:
            _fail(job[1], SessionEnded())

    def abort(self) -> asyncio.Task:
        """End the session now: its requests in flight are cancelled, nothing more is sent."""
        self.link.ended = True
        self._task.cancel()
        return self._task

    def close(self) -> asyncio.Task:
        """Start a polite close (the SDK ends the session with the server); see `closed`."""
        self._jobs.put_nowait(None)
        return self._task


def _settle(future: asyncio.Future, value: Any) -> None:
    if not future.done():
        future.set_result(value)


def _fail(future: asyncio.Future, exc: BaseException) -> None:
    if not future.done():
        future.set_exception(exc)


async def _closed(session: Session, polite: bool) -> None:
    task = session.close() if polite else session.abort()
    done, _ = await asyncio.wait({task}, timeout=CLOSE_SECONDS)
    if not done:
        task.cancel()
    with contextlib.suppress(BaseException):
        await task


class SessionPool:
    """Idle sessions by key, the least recently used closed first (see the module's doc)."""

    def __init__(self, idle_seconds: float, max_idle: int):
        self.idle_seconds = idle_seconds
        self.max_idle = max_idle
        self._idle: OrderedDict[Session, None] = OrderedDict()  # oldest first
        self._by_key: dict[Hashable, list[Session]] = {}
        self._open: set[Session] = set()
        self._closing: set[asyncio.Task] = set()
        self._closed = False

    def __len__(self) -> int:
        """Sessions open (idle or serving a call)."""
        return len(self._open)

    def take(self, key: Hashable) -> Session | None:
        """An idle session of `key` (the most recently used), or None."""
        while sessions := self._by_key.get(key):
            session = sessions[-1]
            self._unidle(session)
            if session.alive:
                return session
            self.discard(session)
        return None

    def open(
        self, key: Hashable, opened: Callable[[], AbstractAsyncContextManager[Any]], link: Any
    ) -> Session:
        """A new session of `key`; `opened()` enters the SDK's client."""
        session = Session(key, opened, link)
        self._open.add(session)
        return session

    def give_back(self, session: Session) -> None:
        """Keep a session whose call ended cleanly for the next call of its key."""
        if self._closed or self.idle_seconds <= 0 or not session.alive:
            self._end(session, polite=True)
            return
        same = self._by_key.setdefault(session.key, [])
        same.append(session)
        self._idle[session] = None
        loop = asyncio.get_running_loop()
        session.expiry = loop.call_later(self.idle_seconds, self._expire, session)
        if len(same) > MAX_IDLE_PER_KEY:
            self._expire(same[0])
        while len(self._idle) > self.max_idle:
            self._expire(next(iter(self._idle)))

    def discard(self, session: Session) -> None:
        """End a session that failed, timed out or was left by a cancelled call."""
        self._end(session, polite=False)

    def _expire(self, session: Session) -> None:
        self._unidle(session)
        self._end(session, polite=True)

    def _unidle(self, session: Session) -> None:
        if session in self._idle:
            del self._idle[session]
            same = self._by_key[session.key]
            same.remove(session)
            if not same:
                del self._by_key[session.key]
        if session.expiry is not None:
            session.expiry.cancel()
            session.expiry = None

    def _end(self, session: Session, polite: bool) -> None:
        if session not in self._open:
            return
        self._open.discard(session)
        task = asyncio.get_running_loop().create_task(_closed(session, polite))
        self._closing.add(task)
        task.add_done_callback(self._closing.discard)

    async def close(self) -> None:
        """End every session (app shutdown): idle ones politely, the others now."""
        self._closed = True
        for session in list(self._idle):
            self._expire(session)
        for session in list(self._open):
            self.discard(session)
        if self._closing:
            await asyncio.gather(*self._closing, return_exceptions=True)
