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
    """Buckets of `per_minute` tokens keyed by any string, refilled continuously."""

    def __init__(self, max_keys: int = 100_000):
        self._buckets: dict[str, tuple[float, float]] = {}  # key -> (tokens, last monotonic)
        self._max_keys = max_keys

    def take(self, key: str, per_minute: int) -> Decision:
        """Take one token from the key's bucket of capacity `per_minute`."""
        now = time.monotonic()
        rate = per_minute / 60.0
        tokens, last = self._buckets.get(key, (float(per_minute), now))
        tokens = min(float(per_minute), tokens + (now - last) * rate)
        allowed = tokens >= 1.0
        if allowed:
            tokens -= 1.0
        if len(self._buckets) >= self._max_keys and key not in self._buckets:
            self._evict(now)
        self._buckets[key] = (tokens, now)
        wall = time.time()
        reset = math.ceil(wall + (per_minute - tokens) / rate)
        retry_after = 0 if allowed else max(1, math.ceil((1.0 - tokens) / rate))
        return Decision(allowed, per_minute, int(tokens), reset, retry_after)

    def retry_after(self, key: str, per_minute: int) -> int:
        """Take one token like `take`, without building a Decision (for hot public paths).

        Returns 0 when allowed, else the seconds until one more request is allowed.
        """
        now = time.monotonic()
        rate = per_minute / 60.0
        entry = self._buckets.get(key)
        if entry is None:
            if len(self._buckets) >= self._max_keys:
                self._evict(now)
            tokens = float(per_minute)
        else:
            tokens = min(float(per_minute), entry[0] + (now - entry[1]) * rate)
        if tokens >= 1.0:
            self._buckets[key] = (tokens - 1.0, now)
            return 0
        self._buckets[key] = (tokens, now)
        return max(1, math.ceil((1.0 - tokens) / rate))

    def _evict(self, now: float) -> None:
        # Drop buckets idle for a minute or more: they would be full again anyway.
        self._buckets = {k: v for k, v in self._buckets.items() if now - v[1] < 60.0}
        if len(self._buckets) >= self._max_keys:
            self._buckets.clear()
