"""Claims on runs of periodic jobs shared by several processes (PostgreSQL's `job_runs`)."""

from __future__ import annotations

from agentsvc.db import Tx


async def claim(tx: Tx, name: str, now: str, last_run_before: str) -> bool:
    """Record a run of `name` at `now` unless one ran at or after `last_run_before`;
    True when this caller got the run."""
    row = await tx.fetchone(
        "INSERT INTO job_runs (name, ran_at) VALUES (?, ?) ON CONFLICT (name) DO UPDATE"
        " SET ran_at = excluded.ran_at WHERE job_runs.ran_at < ? RETURNING name",
        (name, now, last_run_before),
    )
    return row is not None
