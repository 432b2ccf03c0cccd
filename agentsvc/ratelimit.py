"""In-memory token buckets for per-team, per-IP and per-session rate limits."""

from __future__ import annotations

import math
import time
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Decision:
    allowed: bool
    limit: int
    remaining: int
    reset_epoch: int  # when the bucket is full again
    retry_after: int  # seconds until one more request is allowed (0 when allowed)

    def headers(self) -> dict[str, str]:
        """The X-RateLimit-* headers (and Retry-After when refused)."""
        headers = {
            "X-RateLimit-Limit": str(self.limit),
            "X-RateLimit-Remaining": str(self.remaining),
            "X-RateLimit-Reset": str(self.reset_epoch),
        }
        if not self.allowed:
            headers["Retry-After"] = str(self.retry_after)
        return headers


class TokenBuckets:
    """Buckets of `per_minute` tokens keyed by any string, refilled continuously.

    Each bucket is kept as one number, the monotonic time at which it is full again (the
    generic cell rate algorithm): taking a token moves that time one refill interval on,
    and a request is refused while it lies more than `per_minute - 1` intervals ahead. A
    float per key allocates no tuple and is never tracked by the garbage collector, which
    counts when a flood brings a new session id with every request.
    """

    def __init__(self, max_keys: int = 100_000):
        self._full_at: dict[str, float] = {}
        self._max_keys = max_keys

    def _take(self, key: str, per_minute: int, now: float) -> float:
        """Take a token if there is one; return how many seconds ahead the bucket is full
        again, negative when the request is refused (then minus the seconds to wait)."""
        interval = 60.0 / per_minute
        full_at = self._full_at.get(key)
        if full_at is None:
            if len(self._full_at) >= self._max_keys:
                self._evict(now)
            full_at = now
        elif full_at < now:
            full_at = now
        ahead = full_at - now
        # A whisker of slack: `interval` added many times may round up past the limit.
        wait = ahead - (per_minute - 1) * interval
        if wait > 1e-9:
            return -wait
        self._full_at[key] = full_at + interval
        return ahead + interval

    def take(self, key: str, per_minute: int) -> Decision:
        """Take one token from the key's bucket of capacity `per_minute`."""
        now = time.monotonic()
        ahead = self._take(key, per_minute, now)
        interval = 60.0 / per_minute
        wall = time.time()
        if ahead < 0:
            full_in = -ahead + (per_minute - 1) * interval
            remaining = 0
            retry_after = max(1, math.ceil(-ahead))
        else:
            full_in = ahead
            remaining = int(per_minute - ahead / interval + 1e-9)
            retry_after = 0
        reset = math.ceil(wall + full_in)
        return Decision(ahead >= 0, per_minute, remaining, reset, retry_after)

    def retry_after(self, key: str, per_minute: int) -> int:
        """Take one token like `take`, without building a Decision (for hot public paths).

        Returns 0 when allowed, else the seconds until one more request is allowed.
        """
        ahead = self._take(key, per_minute, time.monotonic())
        return 0 if ahead >= 0 else max(1, math.ceil(-ahead))

    def _evict(self, now: float) -> None:
        # A bucket full again is the same as no bucket: drop those, and everything when
        # that is not enough (a flood of new keys).
        self._full_at = {k: v for k, v in self._full_at.items() if v > now}
        if len(self._full_at) >= self._max_keys:
            self._full_at.clear()
