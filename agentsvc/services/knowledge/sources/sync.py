"""Syncs of sources: each taken under a lease, renewed while it works, as evaluation runs
are (services/evals/runs.py). A process that dies leaves its lease to run out; another
process's sweep then takes the sync and goes on with the same sync's pages. The sweep also
queues the scheduled sources whose time has come; one statement does it, so with several
processes each source is queued once and synced by the one process that claims it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from agentsvc.config import SourceSettings
from agentsvc.ids import iso, now_iso
from agentsvc.services.knowledge.sources.crawl import Crawl, SyncFailed, SyncTools
from agentsvc.store import sources as store

log = logging.getLogger(__name__)
SWEEP_BATCH = 20


def later(seconds: float) -> str:
    return iso(datetime.now(UTC) + timedelta(seconds=seconds))


def next_sync_at(settings: SourceSettings, schedule: str) -> str | None:
    """When a source on this schedule syncs next, counted from now; None when off."""
    period = {
        "hourly": settings.hourly_seconds,
        "daily": settings.daily_seconds,
        "weekly": settings.weekly_seconds,
    }.get(schedule)
    return later(period) if period else None


@dataclass(frozen=True, slots=True)
class SyncerDeps:
    tools: SyncTools
    settings: SourceSettings


class SourceSyncer:
    """The syncs this process works on: a task each, at most `syncs_at_once` at a time."""

    def __init__(self, deps: SyncerDeps) -> None:
        self._tools = deps.tools
        self._db = deps.tools.db
        self._settings = deps.settings
        self._slots = asyncio.Semaphore(deps.settings.syncs_at_once)
        self._tasks: dict[str, asyncio.Task[None]] = {}

    def start(self, source_id: str) -> None:
        """Sync the source, unless this process does already."""
        if source_id in self._tasks:
            return
        task = asyncio.ensure_future(self._run(source_id))
        self._tasks[source_id] = task
        task.add_done_callback(lambda _: self._tasks.pop(source_id, None))

    async def wait(self, source_id: str) -> None:
        """Until this process's sync of the source ends (at once when it has none)."""
        task = self._tasks.get(source_id)
        if task is not None:
            await asyncio.shield(task)

    async def sweep(self) -> None:
        """Queue the sources due a scheduled sync; take those nobody syncs (queued, or left
        by a process that stopped)."""
        if await store.any_due(self._db.reader, now_iso()):  # the writer only when needed
            async with self._db.write() as tx:
                await store.queue_due(tx, now_iso())
        for source_id in await store.abandoned(self._db.reader, now_iso(), SWEEP_BATCH):
            self.start(source_id)

    async def close(self) -> None:
        """Stop: the syncs under way are left to their leases (and resumed)."""
        tasks = list(self._tasks.values())
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    async def _run(self, source_id: str) -> None:
        async with self._slots:
            lease = self._settings.lease_seconds
            async with self._db.write() as tx:
                if not await store.claim(tx, source_id, now_iso(), later(lease)):
                    return  # another process has it, or it was deleted
            source = await store.get(self._db.reader, source_id)
            if source is None:
                return
            renewing = asyncio.ensure_future(self._renew(source_id, lease))
            try:
                limit = min(source.max_pages, self._settings.max_pages)
                await Crawl(self._tools, source, limit).run()
                error = None
            except SyncFailed as exc:
                error = exc.message
            except asyncio.CancelledError:
                raise
            except Exception:  # noqa: BLE001 (a sync ends with a reason, never silently)
                log.exception("sync of source %s failed", source_id)
                error = "The sync stopped on a fault of the server (its log has the details)"
            finally:
                renewing.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await renewing
            now = await store.get(self._db.reader, source_id)  # its schedule may have changed
            next_at = next_sync_at(self._settings, now.schedule) if now else None
            async with self._db.write() as tx:
                await store.finish(tx, source_id, error, now_iso(), next_at)

    async def _renew(self, source_id: str, lease: float) -> None:
        while True:
            await asyncio.sleep(lease / 3)
            async with self._db.write() as tx:
                await store.renew(tx, source_id, later(lease))
