"""Rate limits shared by several processes through Redis (`[ratelimit] redis_url`).

The buckets run the algorithm of `ratelimit.TokenBuckets` inside Redis, as Lua scripts
(atomic; the clock is Redis's own `TIME`, so processes whose clocks differ agree): a key
holds the time its bucket is full again, and expires then. Concurrent holds are a counter
per key with a cap; every hold pushes the key's expiry to at least the hold's lifetime
(HOLD_TTL_SECONDS unless the caller names a longer one: an event stream lives an hour), so
slots of a process killed while holding them are freed at the latest that long after its
last hold, and a slot still held never outlives its counter.

Tokens are leased in small batches (`lease_size`): one ask takes up to a fiftieth of a
bucket's capacity (at most MAX_LEASE tokens) for this process, which hands them out for
at most LEASE_SECONDS; what is left then is dropped, never given back. Every token handed
out was first taken from the shared bucket, so across N processes a limit admits at most
N x lease_size requests more than its rate in any window (leased just before the window,
spent in it), and never more over time; small limits (under 100 a minute) lease one token
at a time, exactly as before. A refusal is remembered until Redis said a token would be
free: nothing can free one earlier, so refused callers cost no round trip either. The asks
of every request waiting at the same moment (each of its own bucket: new visitors' sessions)
go to Redis in one script call, up to MAX_BATCH at a time, so a round trip's cost is shared
too; this takes one Redis server (or a primary), not Redis Cluster.

When Redis does not answer (refused, timed out, down), the request is limited by this
process's own buckets instead, never refused with a 500 nor let through unlimited; a
warning is logged at most every WARN_EVERY_SECONDS, and Redis is tried again after
RETRY_AFTER_SECONDS (so a dead Redis does not add a timeout to every request).
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import math
import time
from dataclasses import dataclass

import redis.asyncio as aioredis
from redis.exceptions import RedisError

from agentsvc.ratelimit import Decision, LocalLimiter, decision

log = logging.getLogger(__name__)

PREFIX = "agentsvc:rl:"
MAX_KEY_LENGTH = 200  # longer keys (a hostile session id) are stored as their SHA-256
SOCKET_TIMEOUT_SECONDS = 0.25
MAX_CONNECTIONS = 16  # to Redis, per process
RETRY_AFTER_SECONDS = 1.0
WARN_EVERY_SECONDS = 30.0
HOLD_TTL_SECONDS = 900  # at least [chat] max_stream_seconds (600 by default)
LEASE_SHARE = 50  # a lease takes at most 1/50 of a bucket's capacity...
MAX_LEASE = 20  # ...and at most this many tokens
LEASE_SECONDS = 1.0  # leased tokens not handed out by then are dropped
MAX_LEASED_KEYS = 100_000  # leases and remembered refusals kept (a flood of new keys)
MAX_BATCH = 200  # buckets asked for in one round trip (bounded work inside Redis)

# KEYS: buckets; ARGV: each one's per minute and tokens wanted, in turn. Takes as many of
# them as each bucket holds (`ratelimit.TokenBuckets._take`, `granted` times at once) and
# returns {granted, ahead, granted, ahead, ...}: ahead as after the take, or minus the
# seconds to wait when none was granted. One call serves every request waiting at once.
_LEASE = """
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
local out = {}
for i, key in ipairs(KEYS) do
    local per_minute = tonumber(ARGV[2 * i - 1])
    local wanted = tonumber(ARGV[2 * i])
    local interval = 60.0 / per_minute
    local full_at = tonumber(redis.call('GET', key) or now)
    if full_at < now then full_at = now end
    local ahead = full_at - now
    local free = math.floor(per_minute - ahead / interval + 1e-9)
    if free < 1 then
        out[2 * i - 1] = 0
        out[2 * i] = tostring(-(ahead - (per_minute - 1) * interval))
    else
        local granted = math.min(free, wanted)
        full_at = full_at + granted * interval
        redis.call('SET', key, string.format('%.6f', full_at),
                   'PX', math.ceil((full_at - now) * 1000) + 1000)
        out[2 * i - 1] = granted
        out[2 * i] = tostring(ahead + granted * interval)
    end
end
return out
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


def lease_size(per_minute: int) -> int:
    """Tokens taken from Redis in one round trip for a bucket of `per_minute`."""
    return max(1, min(MAX_LEASE, per_minute // LEASE_SHARE))


@dataclass(slots=True)
class _Lease:
    """Tokens this process took from a shared bucket and hands out until `until`."""

    per_minute: int
    tokens: int
    remaining: int  # what the shared bucket held once they were taken
    reset_epoch: int
    until: float  # monotonic


@dataclass(frozen=True, slots=True)
class _Refusal:
    """A bucket Redis said was empty, until `until` (monotonic)."""

    per_minute: int
    until: float
    reset_epoch: int


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
        self._lease_script = self._client.register_script(_LEASE)
        self._hold_script = self._client.register_script(_HOLD)
        self._release_script = self._client.register_script(_RELEASE)
        self.local = LocalLimiter()
        self._down_until = 0.0
        self._warned_at = -WARN_EVERY_SECONDS
        self._held_locally: dict[str, int] = {}  # holds taken while Redis was away
        self._leases: dict[str, _Lease] = {}
        self._refusals: dict[str, _Refusal] = {}
        self._leasing: dict[str, asyncio.Future[Decision | None]] = {}  # one ask per key at once
        self._queued: list[tuple[str, int, asyncio.Future[Decision | None]]] = []
        self._flusher: asyncio.Future[None] | None = None

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

    def _from_lease(self, key: str, per_minute: int, now: float) -> Decision | None:
        """A token of this process's lease, or its remembered refusal; None: ask Redis."""
        lease = self._leases.get(key)
        if lease is not None and lease.tokens and lease.until > now:
            if lease.per_minute == per_minute:
                lease.tokens -= 1
                return Decision(
                    True, per_minute, lease.remaining + lease.tokens, lease.reset_epoch, 0
                )
        refusal = self._refusals.get(key)
        if refusal is not None and refusal.until > now and refusal.per_minute == per_minute:
            wait = max(1, math.ceil(refusal.until - now))
            return Decision(False, per_minute, 0, refusal.reset_epoch, wait)
        return None

    async def _lease(self, key: str, per_minute: int) -> Decision | None:
        """A lease of the key's tokens, asked for with every other key waiting at the same
        moment in one round trip; None when Redis does not answer."""
        done: asyncio.Future[Decision | None] = asyncio.get_running_loop().create_future()
        self._leasing[key] = done
        self._queued.append((key, per_minute, done))
        if self._flusher is None:
            self._flusher = asyncio.ensure_future(self._flush())
        # Shielded: a request that goes away does not cancel what others wait for.
        return await asyncio.shield(done)

    async def _flush(self) -> None:
        """Ask Redis for what is queued, a batch per round trip, until nothing is."""
        try:
            while self._queued:
                batch, self._queued = self._queued[:MAX_BATCH], self._queued[MAX_BATCH:]
                granted: list[Decision | None] = [None] * len(batch)
                try:
                    answers = await self._ask(batch)
                    if answers is not None:
                        now = time.monotonic()
                        granted = [
                            self._settle(
                                key, per_minute, int(answers[2 * i]), float(answers[2 * i + 1]), now
                            )
                            for i, (key, per_minute, _) in enumerate(batch)
                        ]
                finally:  # whatever happened, nobody is left waiting (None: limit locally)
                    for (key, _, done), decided in zip(batch, granted, strict=True):
                        self._leasing.pop(key, None)
                        if not done.done():
                            done.set_result(decided)
        finally:
            self._flusher = None

    async def _ask(self, batch: list[tuple[str, int, asyncio.Future[Decision | None]]]):
        keys = [redis_key(key) for key, _, _ in batch]
        args = [n for _, per_minute, _ in batch for n in (per_minute, lease_size(per_minute))]
        try:
            return await self._lease_script(keys=keys, args=args)
        except (RedisError, OSError) as exc:
            self._failed(exc)
            return None

    def _settle(
        self, key: str, per_minute: int, granted: int, ahead: float, now: float
    ) -> Decision:
        """Keep what Redis granted as the key's lease (or its refusal); the asker's token."""
        taken = decision(ahead, per_minute)
        if len(self._leases) >= MAX_LEASED_KEYS or len(self._refusals) >= MAX_LEASED_KEYS:
            self._leases.clear()
            self._refusals.clear()
        if granted:
            self._refusals.pop(key, None)
            # The asker takes one; the others wait in the lease.
            lease = _Lease(
                per_minute, granted - 1, taken.remaining, taken.reset_epoch, now + LEASE_SECONDS
            )
            self._leases[key] = lease
            return Decision(True, per_minute, taken.remaining + lease.tokens, taken.reset_epoch, 0)
        self._refusals[key] = _Refusal(per_minute, now - ahead, taken.reset_epoch)
        return taken

    async def _grant(self, key: str, per_minute: int) -> Decision | None:
        """Take a token (from this process's lease when it has one); None: Redis is away."""
        while True:
            granted = self._from_lease(key, per_minute, time.monotonic())
            if granted is not None:
                return granted
            pending = self._leasing.get(key)
            if pending is None:
                break
            await asyncio.shield(pending)  # another request's ask: share what it brings back
        if not self._available():
            return None
        return await self._lease(key, per_minute)

    async def take(self, key: str, per_minute: int) -> Decision:
        granted = await self._grant(key, per_minute)
        if granted is None:
            return await self.local.take(key, per_minute)
        return granted

    async def retry_after(self, key: str, per_minute: int) -> int:
        granted = await self._grant(key, per_minute)
        if granted is None:
            return await self.local.retry_after(key, per_minute)
        return granted.retry_after

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
        if self._flusher is not None:
            self._flusher.cancel()
            await asyncio.gather(self._flusher, return_exceptions=True)
        for _, _, done in self._queued:  # asked for during shutdown: limited locally
            if not done.done():
                done.set_result(None)
        self._queued.clear()
        await self._client.aclose()
        await self._pool.disconnect()
