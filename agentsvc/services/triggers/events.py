"""The batching writer of trigger events: queued in memory, counted in one transaction each.

Requests put their event on a queue and wait for its commit. One task drains whatever is
queued (no fixed sleep window: what arrived since the last batch) and adds it to the
triggers' counters in one transaction (`Database.write_batched`: at once on the loop
when the writer is free). Replying after the commit means a 202
is a counted event (and is cheaper than replying at once: more replies share each turn of
the event loop); on shutdown the server first lets the in-flight
requests finish, then `close()` drains the queue, so SIGTERM loses nothing.
"""

from __future__ import annotations

import asyncio
import logging
from functools import partial

from agentsvc.db import Database
from agentsvc.ids import now_iso
from agentsvc.store import trigger_events
from agentsvc.store.analytics import day_of
from agentsvc.store.trigger_events import Mismatch, TriggerEvent

log = logging.getLogger(__name__)

_Item = tuple[TriggerEvent, "asyncio.Future[str | Mismatch | None]"]


class WriterClosed(RuntimeError):
    """The writer no longer accepts events (the service is stopping)."""


class EventWriter:
    """Queue of trigger events drained by one task into batched transactions."""

    def __init__(self, db: Database):
        self._db = db
        self._pending: list[_Item] = []
        self._wake = asyncio.Event()
        self._closing = False
        self._task: asyncio.Task[None] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self.batches = 0  # batches written, for logs and tests
        self.written = 0  # events counted

    def start(self) -> None:
        """Start the draining task."""
        self._loop = asyncio.get_running_loop()
        self._task = asyncio.create_task(self._run(), name="trigger-event-writer")

    def record(self, event: TriggerEvent) -> asyncio.Future[str | Mismatch | None]:
        """Queue an event; the future resolves when its batch commits.

        Its result is the id of the trigger the event was counted for, None when it names
        no trigger of its agent, a Mismatch when it contradicts the trigger its triggerId
        names. (A plain function returning the future: one coroutine fewer per event.)
        """
        if self._closing:
            raise WriterClosed("the service is stopping")
        future: asyncio.Future[str | Mismatch | None] = self._loop.create_future()
        self._pending.append((event, future))
        self._wake.set()
        # A request cancelled while waiting cancels only its future: the event stays queued
        # and is counted (the writer skips futures that are already done).
        return future

    async def close(self) -> None:
        """Stop accepting events, write everything still queued, then stop the task."""
        self._closing = True
        self._wake.set()
        if self._task is not None:
            await self._task
        log.info(
            "trigger event writer stopped: %d events in %d batches", self.written, self.batches
        )

    async def _run(self) -> None:
        while True:
            await self._wake.wait()
            self._wake.clear()
            # Events queued while a batch is written form the next batch, at once.
            while self._pending:
                batch, self._pending = self._pending, []
                await self._write(batch)
            if self._closing:
                return

    async def _write(self, batch: list[_Item]) -> None:
        events = [event for event, _ in batch]
        try:
            results = await self._db.write_batched(
                partial(trigger_events.write_batch, events=events, day=day_of(now_iso()))
            )
        except Exception as exc:
            log.exception("writing %d trigger events failed", len(batch))
            for _, future in batch:
                if not future.done():
                    future.set_exception(exc)
            return
        self.batches += 1
        self.written += sum(1 for r in results if isinstance(r, str))
        for (_, future), result in zip(batch, results, strict=True):
            if not future.done():
                future.set_result(result)
