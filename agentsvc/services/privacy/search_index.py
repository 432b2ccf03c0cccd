"""Erased words leave the conversation search index (see store/search_index.py for why a
deleted row's words stay there until the index is merged or rebuilt)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from dataclasses import dataclass

from agentsvc.db import Database
from agentsvc.store import search_index as store

log = logging.getLogger(__name__)

# Steps at most in one scrub (16 pages each: an index of ~1.3 GB); a merge left unfinished
# goes on with the next scrub and with the index's own automatic merging.
MAX_STEPS = 20_000


@dataclass(frozen=True, slots=True)
class Scrubbed:
    """What a scrub did: steps (SQLite: write transactions), in seconds, and the longest time
    one step held the writer (from its BEGIN to after its COMMIT)."""

    steps: int
    seconds: float
    longest: float


async def scrub_message_index(db: Database) -> Scrubbed:
    """Rewrite the message search index so that no deleted message's words remain in it.

    SQLite: merge every segment into one, a few pages per short write transaction, so other
    tenants' writes go in between. PostgreSQL: rebuild the index concurrently (writes go
    on; a failure is logged, the erasure stands).
    """
    started = time.perf_counter()
    if db.reader.dialect != "sqlite":
        try:
            async with db.maintenance() as tx:
                await store.rebuild_postgres(tx)
        except Exception:  # the rows are gone; only the index keeps their words longer
            log.warning("rebuilding the message search index failed", exc_info=True)
        took = time.perf_counter() - started
        return Scrubbed(1, took, took)
    steps, longest = 0, 0.0
    while steps < MAX_STEPS:
        async with db.write() as tx:
            held_from = time.perf_counter()
            worked = await store.merge_step(tx, first=steps == 0)
        steps += 1
        longest = max(longest, time.perf_counter() - held_from)
        if not worked:
            break
    scrubbed = Scrubbed(steps, time.perf_counter() - started, longest)
    log.debug("message search index merged: %s", scrubbed)
    return scrubbed


class MessageIndexScrubber:
    """Scrubs the message search index after an erasure.

    SQLite merges at once (seconds for 100,000 messages, in short steps). PostgreSQL
    rebuilds the index concurrently, which takes minutes on a large table: that runs in the
    background so the erasure answers at once, one rebuild at a time in this process, and
    an erasure during one asks for one more after it.
    """

    def __init__(self, db: Database) -> None:
        self._db = db
        self._task: asyncio.Task[None] | None = None
        self._again = False

    async def after_erasure(self) -> None:
        """Scrub now (SQLite), or start or queue a background rebuild (PostgreSQL)."""
        if self._db.reader.dialect == "sqlite":
            await scrub_message_index(self._db)
            return
        if self._task is not None and not self._task.done():
            self._again = True
            return
        self._task = asyncio.create_task(self._rebuild(), name="message-index-rebuild")

    async def _rebuild(self) -> None:
        while True:
            self._again = False
            scrubbed = await scrub_message_index(self._db)
            log.debug("message search index rebuilt: %s", scrubbed)
            if not self._again:
                return

    async def idle(self) -> None:
        """Wait until no rebuild is running or queued (tests, shutdown)."""
        while self._task is not None and not self._task.done():
            await asyncio.shield(self._task)

    async def close(self) -> None:
        """Stop a running rebuild: a rebuild cut off leaves an invalid copy of the index,
        which the next one drops first (store.rebuild_postgres)."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
