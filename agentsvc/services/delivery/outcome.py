"""What one delivery attempt came to, and the row's next state after it (the retry
schedule)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from agentsvc.ids import iso


@dataclass(frozen=True, slots=True)
class Outcome:
    """What one attempt came to."""

    success: bool
    status_code: int | None = None
    error: str | None = None
    body: str | None = None
    stop: bool = False  # no further attempts (410 Gone)
    # Seconds the receiver asked to wait (a 429 or 503 with Retry-After): the next attempt
    # waits at least this long, at most RETRY_AFTER_CAP_SECONDS.
    retry_after: float | None = None


RETRY_AFTER_CAP_SECONDS = 3600.0


def next_state(
    attempts_before: int,
    cycle_start: int,
    res: Outcome,
    schedule: list[float],
    now_dt: datetime,
) -> tuple[dict[str, Any], datetime | None]:
    """A row's columns after an attempt (success, retry at a time, or failed for good) and
    when it is due again (None when it is done)."""
    now = iso(now_dt)
    attempts = attempts_before + 1
    made = attempts - cycle_start
    fields: dict[str, Any] = {"attempts": attempts, "lease_until": None}
    if res.success:
        fields |= {"status": "success", "last_error": None, "next_attempt_at": None}
        fields["completed_at"] = now
        return fields, None
    fields["last_error"] = res.error
    if res.stop or made >= len(schedule):
        fields |= {"status": "failed", "next_attempt_at": None, "completed_at": now}
        return fields, None
    delay = schedule[made]
    if res.retry_after is not None:
        delay = max(delay, min(res.retry_after, RETRY_AFTER_CAP_SECONDS))
    next_at = now_dt + timedelta(seconds=delay)
    fields["next_attempt_at"] = iso(next_at)
    return fields, next_at
