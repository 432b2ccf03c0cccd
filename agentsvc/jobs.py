"""The in-process scheduler. It only wakes jobs; pending work lives in the database.

`Jobs` wraps APScheduler's AsyncIOScheduler in the three things the service needs: a job
every N seconds (registered by `runtime.py`), a wake-up at a time (services that keep work
in the database, like the delivery outbox, ask to be woken when a row comes due), and
removal. Services receive a `Jobs`, never the scheduler or the application.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import Any

from apscheduler.schedulers.asyncio import AsyncIOScheduler


class Jobs:
    """Periodic jobs and wake-ups on one AsyncIOScheduler (UTC)."""

    def __init__(self, ready: Callable[[], bool] = lambda: True) -> None:
        self.scheduler = AsyncIOScheduler(timezone="UTC")
        # False while the database does not answer: periodic runs are skipped (each would
        # fail and log its traceback, every period, for as long as it is away).
        self._ready = ready
        self._runs: set[asyncio.Task[Any]] = set()
        self._stopping = False

    @property
    def running(self) -> bool:
        return bool(self.scheduler.running)

    def start(self) -> None:
        self.scheduler.start()

    async def stop(self) -> None:
        """Wake nothing more and end the runs in flight (cancelled, as the service stops:
        not an error), before the database and clients they use close. Idempotent."""
        self._stopping = True
        if self.scheduler.running:
            self.scheduler.shutdown(wait=False)
        runs = list(self._runs)
        for run in runs:
            run.cancel()
        await asyncio.gather(*runs, return_exceptions=True)

    def _tracked(
        self, fn: Callable[..., Awaitable[Any]], periodic: bool = False
    ) -> Callable[..., Awaitable[Any]]:
        """`fn` as a run `stop` can end: known while it runs, quiet when stopped; a
        periodic one skipped while the database is away (the next period runs it)."""

        @functools.wraps(fn)
        async def run(*args: Any) -> Any:
            if periodic and not self._ready():
                return None
            task = asyncio.current_task()
            assert task is not None
            self._runs.add(task)
            try:
                return await fn(*args)
            except asyncio.CancelledError:
                if self._stopping:
                    return None
                raise
            finally:
                self._runs.discard(task)

        return run

    def every(
        self,
        job_id: str,
        seconds: float,
        fn: Callable[..., Awaitable[Any]],
        *args: Any,
        run_now: bool = False,
    ) -> None:
        """Run `fn(*args)` every `seconds` (and at once with run_now); runs never overlap."""
        extra: dict[str, Any] = {"next_run_time": datetime.now(UTC)} if run_now else {}
        self.scheduler.add_job(
            self._tracked(fn, periodic=True),
            "interval",
            seconds=seconds,
            args=list(args),
            id=job_id,
            max_instances=1,
            coalesce=True,
            **extra,
        )

    def wake(self, job_id: str, at: datetime, fn: Callable[[], Awaitable[Any]]) -> None:
        """Run `fn` at `at`, unless the job is already due no later than that."""
        if not self.running:
            return
        job = self.scheduler.get_job(job_id)
        if job is not None and job.next_run_time is not None and job.next_run_time <= at:
            return
        self.scheduler.add_job(
            self._tracked(fn),
            "date",
            run_date=max(at, datetime.now(UTC)),
            id=job_id,
            replace_existing=True,
            misfire_grace_time=None,
            coalesce=True,
            max_instances=1000,  # overlapping runs are the job's own business
        )

    def has(self, job_id: str) -> bool:
        return self.scheduler.get_job(job_id) is not None

    def interval_of(self, job_id: str) -> float | None:
        """Seconds between runs of a periodic job (None when there is no such job)."""
        job = self.scheduler.get_job(job_id)
        interval = getattr(job.trigger, "interval", None) if job is not None else None
        return interval.total_seconds() if interval is not None else None

    def cancel(self, job_id: str) -> None:
        if self.scheduler.get_job(job_id) is not None:
            self.scheduler.remove_job(job_id)
