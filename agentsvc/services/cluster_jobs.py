"""Periodic jobs that run once for all the processes sharing a database.

Every process schedules the job; when the database is shared (PostgreSQL), a run first
claims the period in `job_runs`, and the processes that lose the claim skip it. A job
whose process dies is run by another one in the next period. With SQLite (one process)
the job simply runs.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from agentsvc.db import Database
from agentsvc.ids import iso
from agentsvc.store import job_runs

# A claim is refused while the last run is younger than this share of the period: the
# processes' timers drift apart, but never by most of a period.
CLAIM_SHARE = 0.5


def once_for_all(
    db: Database, name: str, seconds: float, fn: Callable[..., Awaitable[Any]]
) -> Callable[..., Awaitable[Any]]:
    """`fn`, run only by the process that claims the current period (shared databases)."""
    if not db.shared:
        return fn

    async def run(*args: Any) -> Any:
        now = datetime.now(UTC)
        before = iso(now - timedelta(seconds=seconds * CLAIM_SHARE))
        async with db.write() as tx:
            claimed = await job_runs.claim(tx, name, iso(now), before)
        return await fn(*args) if claimed else None

    return run
