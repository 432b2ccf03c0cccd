"""Small writes from many concurrent callers, grouped into shared transactions.

Every chat turn writes twice (the user's message before the model is called, the reply at
the end). One transaction and one hop to the writer thread each is fine alone, but with
hundreds of streams starting and ending per second the hops queue up behind the writer
lock, and under CPU contention each wake-up of the writer thread is slow. The batcher
drains whatever is queued into one transaction (no fixed wait: what queued up since the
last batch); the database writes it, each unit in its own savepoint so one failing unit
fails alone, and every caller is answered after the commit. A transaction stops taking
units once it has held the writer `BATCH_HOLD_SECONDS`: the rest go first into the next one,
so a burst (a hundred streams ending at once) never holds the writer for long in one go.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any

log = logging.getLogger(__name__)

Unit = Callable[[Any], Awaitable[Any]]

# How long one batched transaction keeps starting units (a unit is a few statements, well
# under a millisecond each): long enough to share a commit among many, short enough that a
# request waiting for the writer hardly notices.
BATCH_HOLD_SECONDS = 0.020


class Failed:
    """A unit's exception, as its result in a batch (so a unit may return anything)."""

    __slots__ = ("error",)

    def __init__(self, error: Exception):
        self.error = error


# Answers a prefix of the units (at least one), in order; the others were not run.
WriteBatch = Callable[[list[Unit]], Awaitable[list[Any]]]


class WriteBatcher:
    """`await submit(fn)` returns fn's result once it is committed (or raises what it raised)."""

    def __init__(self, write_batch: WriteBatch):
        self._write_batch = write_batch
        self._queue: list[tuple[Unit, asyncio.Future[Any]]] = []
        self._task: asyncio.Task[None] | None = None
        self.batches = 0
        self.writes = 0

    async def submit(self, fn: Unit) -> Any:
        """Queue a unit and wait for its commit."""
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._queue.append((fn, future))
        if self._task is None or self._task.done():
            self._task = asyncio.ensure_future(self._drain())
        # A caller that goes away cancels only its future: its queued write is still made
        # (the batch runs every queued unit and skips answering a cancelled future), so no
        # shield is needed, nor the outer future and callbacks one costs per write.
        return await future

    async def close(self) -> None:
        """Wait for queued writes to be committed (at shutdown, before the database closes)."""
        if self._task is not None:
            await self._task

    async def _drain(self) -> None:
        while self._queue:
            batch, self._queue = self._queue, []
            try:
                results = await self._write_batch([fn for fn, _ in batch])
            except Exception as exc:  # the transaction itself failed: every unit did
                log.exception("writing a batch of %d writes failed", len(batch))
                results = [Failed(exc)] * len(batch)
            if len(results) < len(batch):  # out of time: the rest go first in the next one
                self._queue[:0] = batch[len(results) :]
                batch = batch[: len(results)]
            self.batches += 1
            self.writes += len(batch)
            for (_, future), result in zip(batch, results, strict=True):
                if future.done():
                    continue
                if isinstance(result, Failed):
                    future.set_exception(result.error)
                else:
                    future.set_result(result)
