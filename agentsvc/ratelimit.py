"""Rate limits: token buckets per team, IP and session, and caps on concurrent holds.

`LocalLimiter` keeps them in this process's memory (the default: one process).
`ratelimit_redis.RedisLimiter` shares them between processes through Redis, with this
module's algorithm, and falls back to a LocalLimiter when Redis does not answer. The HTTP
layer sees only the `Limiter` interface.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Protocol


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
        return decision(self._take(key, per_minute, time.monotonic()), per_minute)

    def retry_after(self, key: str, per_minute: int) -> int:
        """Take one token like `take`, without building a Decision (for hot public paths).

        Returns 0 when allowed, else the seconds until one more request is allowed.
        """
        return wait_of(self._take(key, per_minute, time.monotonic()))

    def _evict(self, now: float) -> None:
        # A bucket full again is the same as no bucket: drop those, and everything when
        # that is not enough (a flood of new keys).
        self._full_at = {k: v for k, v in self._full_at.items() if v > now}
        if len(self._full_at) >= self._max_keys:
            self._full_at.clear()


def decision(ahead: float, per_minute: int) -> Decision:
    """The Decision for a take that left the bucket full again `ahead` seconds from now
    (negative: refused, minus the seconds to wait)."""
    interval = 60.0 / per_minute
    if ahead < 0:
        full_in = -ahead + (per_minute - 1) * interval
        remaining = 0
        retry_after = max(1, math.ceil(-ahead))
    else:
        full_in = ahead
        remaining = int(per_minute - ahead / interval + 1e-9)
        retry_after = 0
    reset = math.ceil(time.time() + full_in)
    return Decision(ahead >= 0, per_minute, remaining, reset, retry_after)


def wait_of(ahead: float) -> int:
    """Seconds until one more request is allowed (0: allowed)."""
    return 0 if ahead >= 0 else max(1, math.ceil(-ahead))


class Limiter(Protocol):
    """What the HTTP layer asks of the rate limits."""

    async def take(self, key: str, per_minute: int) -> Decision: ...

    async def retry_after(self, key: str, per_minute: int) -> int: ...

    async def hold(self, key: str, cap: int, lifetime: float | None = None) -> bool:
        """Take one of `cap` concurrent slots of `key`; False when all are held.

        `lifetime`: the longest the slot may be held (seconds), for limits shared between
        processes, which free the slots of a process killed while holding them after that.
        """
        ...

    async def release(self, key: str) -> None:
        """Give back a slot taken by `hold`."""
        ...

    async def close(self) -> None: ...


class LocalLimiter:
    """The limits in this process's memory."""

    def __init__(self) -> None:
        self.buckets = TokenBuckets()
        self._held: dict[str, int] = {}

    async def take(self, key: str, per_minute: int) -> Decision:
        return self.buckets.take(key, per_minute)

    async def retry_after(self, key: str, per_minute: int) -> int:
        return self.buckets.retry_after(key, per_minute)

    async def hold(self, key: str, cap: int, lifetime: float | None = None) -> bool:
        return self.hold_now(key, cap)

    def hold_now(self, key: str, cap: int) -> bool:
        held = self._held.get(key, 0)
        if held >= cap:
            return False
        self._held[key] = held + 1
        return True

    async def release(self, key: str) -> None:
        self.release_now(key)

    def release_now(self, key: str) -> None:
        held = self._held.pop(key, 0) - 1
        if held > 0:
            self._held[key] = held

    async def close(self) -> None:
        return None
