"""Live conversation events: a visitor's conversation and a team's inbox, as they happen.

Every change is first written to the event log (store/conversation_events.py) and then
announced through the database (`changes.conversation`): in this process at once, and on
PostgreSQL to every process by NOTIFY. Here each followed conversation or inbox has one
channel per process; an announcement makes the channel read the new events once and hand
them to each of its followers, so a thousand followers cost one query, not a thousand.

A follower that arrives with a Last-Event-ID first reads what it missed from the log,
then takes the channel's events, skipping any it has already seen: nothing is lost and
nothing is sent twice.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable

from agentsvc.db import RESYNC, Database
from agentsvc.services import changes
from agentsvc.store import conversation_events as events_store
from agentsvc.store.conversation_events import PAGE, ConversationEvent

log = logging.getLogger(__name__)

# Batches waiting for one follower; beyond this the follower is dropped (it reconnects
# with its Last-Event-ID and reads the rest from the log).
MAX_BACKLOG = 1000

Fetch = Callable[[int], Awaitable[list[ConversationEvent]]]


class FollowerTooSlow(Exception):
    """The follower fell too far behind; it should reconnect and resume."""


class _Channel:
    """One followed conversation (or inbox) in this process."""

    def __init__(self, fetch: Fetch):
        self.fetch = fetch
        self.last = 0
        self.ready = asyncio.Event()
        self.followers: set[asyncio.Queue[list[ConversationEvent] | None]] = set()
        self._task: asyncio.Task | None = None
        self._again = False

    def poke(self) -> None:
        """New events may be in the log: read them (once, however often poked meanwhile)."""
        if self._task is not None:
            self._again = True
            return
        self._task = asyncio.get_running_loop().create_task(self._pump())

    async def _pump(self) -> None:
        try:
            await self.ready.wait()
            while True:
                self._again = False
                while True:
                    batch = await self.fetch(self.last)
                    if batch:
                        self.last = batch[-1].id
                        self._hand_out(batch)
                    if len(batch) < PAGE:
                        break
                if not self._again:
                    break
        except Exception:
            log.exception("reading conversation events failed")
        finally:
            self._task = None

    def _hand_out(self, batch: list[ConversationEvent]) -> None:
        for queue in list(self.followers):
            if queue.qsize() >= MAX_BACKLOG:
                self.followers.discard(queue)
                queue.put_nowait(None)  # tells the follower it was dropped
            else:
                queue.put_nowait(batch)

    def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()


class Following:
    """One follower: `next()` gives the events after the last one it gave."""

    def __init__(self, hub: LiveEvents, key: str, channel: _Channel, after: int | None):
        self._hub = hub
        self._key = key
        self._channel = channel
        self._queue: asyncio.Queue[list[ConversationEvent] | None] = asyncio.Queue()
        self._after = after
        self.last = 0
        self._caught_up = False

    async def start(self) -> None:
        await self._channel.ready.wait()
        self._channel.followers.add(self._queue)
        if self._after is None:
            self.last = self._channel.last
            self._caught_up = True
        else:
            self.last = self._after

    async def next(self, timeout: float) -> list[ConversationEvent]:  # noqa: ASYNC109
        """The next events (empty after `timeout` seconds without any)."""
        if not self._caught_up:
            batch = await self._channel.fetch(self.last)
            if len(batch) < PAGE:
                self._caught_up = True
            if batch:
                self.last = batch[-1].id
                return batch
        try:
            async with asyncio.timeout(timeout):
                while True:
                    batch = await self._queue.get()
                    if batch is None:
                        raise FollowerTooSlow()
                    fresh = [e for e in batch if e.id > self.last]
                    if fresh:
                        self.last = fresh[-1].id
                        return fresh
        except TimeoutError:
            return []

    def close(self) -> None:
        self._hub._leave(self._key, self._channel, self._queue)


class LiveEvents:
    """The channels of this process, kept up to date by the database's announcements."""

    def __init__(self, db: Database):
        self._db = db
        self._channels: dict[str, _Channel] = {}
        db.subscribe(self._on_change)

    def _on_change(self, topic: str) -> None:
        if topic == RESYNC:
            for channel in self._channels.values():
                channel.poke()
            return
        found = changes.parse_conversation(topic)
        if found is None:
            return
        team_id, conversation_id = found
        for key in ("c:" + conversation_id, "v:" + conversation_id, "t:" + team_id):
            channel = self._channels.get(key)
            if channel is not None:
                channel.poke()

    async def follow_conversation(
        self, conversation_id: str, after: int | None, *, members: bool = True
    ) -> Following:
        """Follow one conversation's events after `after` (None: from now): all of them for
        members, and for the visitor (`members` false) all but the private notes, which
        their channel never reads."""
        db = self._db

        async def fetch(last: int) -> list[ConversationEvent]:
            return await events_store.for_conversation(
                db.reader, conversation_id, last, members=members
            )

        async def newest() -> int:
            return await events_store.last_of_conversation(db.reader, conversation_id)

        key = ("c:" if members else "v:") + conversation_id
        return await self._follow(key, fetch, newest, after)

    async def follow_inbox(self, team_id: str, after: int | None) -> Following:
        """Follow a team's inbox events (status changes, visitors' messages)."""
        db = self._db

        async def fetch(last: int) -> list[ConversationEvent]:
            return await events_store.for_inbox(db.reader, team_id, last)

        async def newest() -> int:
            return await events_store.last_of_inbox(db.reader, team_id)

        return await self._follow("t:" + team_id, fetch, newest, after)

    async def _follow(
        self, key: str, fetch: Fetch, newest: Callable[[], Awaitable[int]], after: int | None
    ) -> Following:
        channel = self._channels.get(key)
        if channel is None:
            channel = self._channels[key] = _Channel(fetch)
            try:
                # Before any follower reads its backlog: the channel hands out every event
                # after this one, the backlog covers the rest.
                channel.last = await newest()
            except BaseException:
                self._channels.pop(key, None)
                channel.ready.set()
                raise
            channel.ready.set()
        following = Following(self, key, channel, after)
        await following.start()
        return following

    def _leave(self, key: str, channel: _Channel, queue: asyncio.Queue) -> None:
        channel.followers.discard(queue)
        if not channel.followers and self._channels.get(key) is channel:
            del self._channels[key]
            channel.stop()

    def followers(self) -> int:
        """How many followers this process has (for metrics and tests)."""
        return sum(len(c.followers) for c in self._channels.values())

    def close(self) -> None:
        for channel in self._channels.values():
            channel.stop()
            for queue in channel.followers:
                with contextlib.suppress(asyncio.QueueFull):
                    queue.put_nowait(None)
        self._channels.clear()
