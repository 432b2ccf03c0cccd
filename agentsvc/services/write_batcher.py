"""Small writes from many concurrent streams, grouped into shared transactions.

Every chat turn writes twice (the user's message before the model is called, the reply at
the end). One transaction and one hop to the writer thread each is fine alone, but with
hundreds of streams starting and ending per second the hops queue up behind the writer
lock, and under CPU contention each wake-up of the writer thread is slow. The batcher
drains whatever is queued into one transaction (no fixed wait: what queued up since the
last batch), written at once on the loop when the writer is free (`Database.write_now`)
or else on the writer's thread, each write in its own savepoint so one failing write
fails alone, and answers every caller after the commit.
"""

from __future__ import annotations

import asyncio
import logging
import sqlite3
from collections.abc import Callable
from functools import partial

from agentsvc.db import Database, WriterBusy

log = logging.getLogger(__name__)

Write = Callable[[sqlite3.Connection], None]


class WriteBatcher:
    """`await run_sync(fn)` returns once `fn` is committed (or raises what it raised)."""

    def __init__(self, db: Database):
        self._db = db
        self._queue: list[tuple[Write, asyncio.Future[None]]] = []
        self._task: asyncio.Task[None] | None = None
        self.batches = 0
        self.writes = 0

    async def run_sync(self, fn: Write) -> None:
        """Queue a write and wait for its commit."""
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._queue.append((fn, future))
        if self._task is None or self._task.done():
            self._task = asyncio.ensure_future(self._drain())
        # Shielded: a caller that goes away does not take its queued write with it.
        await asyncio.shield(future)

    async def close(self) -> None:
        """Wait for queued writes to be committed (at shutdown, before the database closes)."""
        if self._task is not None:
            await self._task

    async def _drain(self) -> None:
        while self._queue:
            batch, self._queue = self._queue, []
            write = partial(_write_all, batch=batch)
            try:
                try:
                    results = self._db.write_now(write)  # no thread hop: see db.py
                except WriterBusy:
                    results = await self._db.run_sync(write)
            except Exception as exc:  # the transaction itself failed: every write did
                log.exception("writing a batch of %d chat writes failed", len(batch))
                results = [exc] * len(batch)
            self.batches += 1
            self.writes += len(batch)
            for (_, future), error in zip(batch, results, strict=True):  # type: ignore[arg-type]
                if future.done():
                    continue
                if error is None:
                    future.set_result(None)
                else:
                    future.set_exception(error)


def _write_all(
    raw: sqlite3.Connection, batch: list[tuple[Write, asyncio.Future[None]]]
) -> list[Exception | None]:
    results: list[Exception | None] = []
    for fn, _ in batch:
        raw.execute("SAVEPOINT chat_write")
        try:
            fn(raw)
        except Exception as exc:
            raw.execute("ROLLBACK TO chat_write")
            results.append(exc)
        else:
            results.append(None)
        raw.execute("RELEASE chat_write")
    return results
