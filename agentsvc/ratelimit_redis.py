"""Rate limits shared by several processes through Redis (`[ratelimit] redis_url`).

The buckets run the algorithm of `ratelimit.TokenBuckets` inside Redis, as Lua scripts
(atomic; the clock is Redis's own `TIME`, so processes whose clocks differ agree): a key
holds the time its bucket is full again, and expires then. Concurrent holds are a counter
per key with a cap; every hold pushes the key's expiry to at least the hold's lifetime
(HOLD_TTL_SECONDS unless the caller names a longer one: an event stream lives an hour), so
slots of a process killed while holding them are freed at the latest that long after its
last hold, and a slot still held never outlives its counter.

When Redis does not answer (refused, timed out, down), the request is limited by this
process's own buckets instead, never refused with a 500 nor let through unlimited; a
warning is logged at most every WARN_EVERY_SECONDS, and Redis is tried again after
RETRY_AFTER_SECONDS (so a dead Redis does not add a timeout to every request).
"""

from __future__ import annotations

import hashlib
import logging
import math
import time

import redis.asyncio as aioredis
from redis.exceptions import RedisError

from agentsvc.ratelimit import Decision, LocalLimiter, decision, wait_of

log = logging.getLogger(__name__)

PREFIX = "agentsvc:rl:"
MAX_KEY_LENGTH = 200  # longer keys (a hostile session id) are stored as their SHA-256
SOCKET_TIMEOUT_SECONDS = 0.25
MAX_CONNECTIONS = 16  # to Redis, per process
RETRY_AFTER_SECONDS = 1.0
WARN_EVERY_SECONDS = 30.0
HOLD_TTL_SECONDS = 900  # at least [chat] max_stream_seconds (600 by default)

# KEYS[1]: the bucket; ARGV[1]: per minute. Returns {allowed, ahead} as in TokenBuckets._take
# (ahead as a string: Redis turns Lua numbers into integers).
_TAKE = """
local per_minute = tonumber(ARGV[1])
local interval = 60.0 / per_minute
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
local full_at = tonumber(redis.call('GET', KEYS[1]) or now)
if full_at < now then full_at = now end
local ahead = full_at - now
local wait = ahead - (per_minute - 1) * interval
if wait > 1e-9 then
    return {0, tostring(-wait)}
end
full_at = full_at + interval
redis.call('SET', KEYS[1], string.format('%.6f', full_at),
           'PX', math.ceil((full_at - now) * 1000) + 1000)
return {1, tostring(ahead + interval)}
"""

# KEYS[1]: the counter; ARGV[1]: cap; ARGV[2]: expiry in ms, never shortened (a shorter
# hold must not expire a longer one's count). 1 when a slot was taken.
_HOLD = """
local held = tonumber(redis.call('GET', KEYS[1]) or '0')
if held >= tonumber(ARGV[1]) then return 0 end
redis.call('INCR', KEYS[1])
if redis.call('PTTL', KEYS[1]) < tonumber(ARGV[2]) then
    redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 1
"""

_RELEASE = """
local held = tonumber(redis.call('GET', KEYS[1]) or '0')
if held <= 1 then redis.call('DEL', KEYS[1]) else redis.call('DECR', KEYS[1]) end
return 1
"""


def redis_key(key: str) -> str:
    if len(key) > MAX_KEY_LENGTH:
        key = "sha256:" + hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()
    return PREFIX + key


class RedisLimiter:
    """The `Limiter` on Redis, with this process's `LocalLimiter` when Redis is away."""

    def __init__(self, url: str):
        # A capped pool: checks beyond MAX_CONNECTIONS at once wait (up to the socket
        # timeout) for a free connection instead of opening more (redis-py's default pool
        # has no cap, so a burst of requests opened one connection each, and kept them).
        self._pool = aioredis.BlockingConnectionPool.from_url(
            url,
            max_connections=MAX_CONNECTIONS,
            timeout=SOCKET_TIMEOUT_SECONDS,
            socket_timeout=SOCKET_TIMEOUT_SECONDS,
            socket_connect_timeout=SOCKET_TIMEOUT_SECONDS,
            decode_responses=True,
        )
        self._client = aioredis.Redis(connection_pool=self._pool)
        self._take_script = self._client.register_script(_TAKE)
        self._hold_script = self._client.register_script(_HOLD)
        self._release_script = self._client.register_script(_RELEASE)
        self.local = LocalLimiter()
        self._down_until = 0.0
        self._warned_at = -WARN_EVERY_SECONDS
        self._held_locally: dict[str, int] = {}  # holds taken while Redis was away

    def _available(self) -> bool:
        return time.monotonic() >= self._down_until

    def _failed(self, exc: Exception) -> None:
        now = time.monotonic()
        self._down_until = now + RETRY_AFTER_SECONDS
        if now - self._warned_at >= WARN_EVERY_SECONDS:
            self._warned_at = now
            log.warning(
                "Redis does not answer (%s); rate limits are kept in this process until it does",
                exc or type(exc).__name__,
            )

    async def _ahead(self, key: str, per_minute: int) -> float | None:
        if not self._available():
            return None
        try:
            _, ahead = await self._take_script(keys=[redis_key(key)], args=[per_minute])
        except (RedisError, OSError) as exc:
            self._failed(exc)
            return None
        return float(ahead)

    async def take(self, key: str, per_minute: int) -> Decision:
        ahead = await self._ahead(key, per_minute)
        if ahead is None:
            return await self.local.take(key, per_minute)
        return decision(ahead, per_minute)

    async def retry_after(self, key: str, per_minute: int) -> int:
        ahead = await self._ahead(key, per_minute)
        if ahead is None:
            return await self.local.retry_after(key, per_minute)
        return wait_of(ahead)

    async def hold(self, key: str, cap: int, lifetime: float | None = None) -> bool:
        expiry_ms = math.ceil(max(HOLD_TTL_SECONDS, lifetime or 0) * 1000)
        if self._available():
            try:
                taken = await self._hold_script(keys=[redis_key(key)], args=[cap, expiry_ms])
                return bool(taken)
            except (RedisError, OSError) as exc:
                self._failed(exc)
        if not self.local.hold_now(key, cap):
            return False
        self._held_locally[key] = self._held_locally.get(key, 0) + 1
        return True

    async def release(self, key: str) -> None:
        local = self._held_locally.get(key, 0)
        if local:  # taken from the local slots: given back there
            if local == 1:
                del self._held_locally[key]
            else:
                self._held_locally[key] = local - 1
            self.local.release_now(key)
            return
        try:
            await self._release_script(keys=[redis_key(key)])
        except (RedisError, OSError) as exc:
            self._failed(exc)  # the key's expiry frees the slot

    async def close(self) -> None:
        await self._client.aclose()
        await self._pool.disconnect()
