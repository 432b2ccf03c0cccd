"""Shared limits lease their tokens from Redis in small batches (issue 37): one round trip
serves several requests, a limit never admits more than its tokens plus one lease per
process, and a bucket Redis called empty is refused without asking again until a token is
due. Real `redis-server` (tests/support/redis_server.py), two limiters for two processes."""

from __future__ import annotations

import asyncio

import redis

from agentsvc.ratelimit_redis import LEASE_SECONDS, RedisLimiter, lease_size


def round_trips(port: int) -> int:
    """Scripts Redis has run so far (each lease, hold or release is one)."""
    client = redis.Redis(port=port)
    try:
        stats = client.info("commandstats")
    finally:
        client.close()
    return sum(stats.get(name, {}).get("calls", 0) for name in ("cmdstat_evalsha", "cmdstat_eval"))


async def warmed(url: str) -> RedisLimiter:
    """A limiter whose script Redis has loaded (the first call of a script costs two)."""
    limiter = RedisLimiter(url)
    await limiter.take("warm-up", 10)
    return limiter


def test_lease_sizes_follow_the_limit():
    assert lease_size(10) == 1 and lease_size(99) == 1  # small limits: exact, as before
    assert lease_size(600) == 12
    assert lease_size(1_000_000) == 20  # capped


async def test_one_round_trip_serves_a_lease_of_requests(redis_server):
    limiter = await warmed(redis_server.url)
    try:
        before = round_trips(redis_server.port)
        decisions = [await limiter.take("team:t1", 6000) for _ in range(100)]
        assert all(d.allowed for d in decisions)
        assert round_trips(redis_server.port) - before == 5  # 100 requests, leases of 20
        remaining = [d.remaining for d in decisions[:3]]
        assert remaining == [5999, 5998, 5997]  # the headers count down as before
    finally:
        await limiter.close()


async def test_concurrent_requests_share_one_round_trip(redis_server):
    limiter = await warmed(redis_server.url)
    try:
        before = round_trips(redis_server.port)
        waits = await asyncio.gather(*(limiter.retry_after("team:t2", 6000) for _ in range(20)))
        assert waits == [0] * 20
        assert round_trips(redis_server.port) - before == 1
    finally:
        await limiter.close()


async def test_two_processes_never_admit_more_than_the_limit(redis_server):
    """600 a minute, leases of 12: alternate two processes until both are refused; the
    admitted count is the bucket's 600 (plus what refilled meanwhile), never a lease more."""
    one, two = RedisLimiter(redis_server.url), RedisLimiter(redis_server.url)
    try:
        admitted = refused_in_a_row = 0
        loop = asyncio.get_running_loop()
        started = loop.time()
        while refused_in_a_row < 4:
            decision = await (one if admitted % 2 else two).take("team:t3", 600)
            admitted += decision.allowed
            refused_in_a_row = 0 if decision.allowed else refused_in_a_row + 1
        refilled = (loop.time() - started) * 10 + 1  # 10 tokens a second
        assert 600 - 2 * lease_size(600) <= admitted <= 600 + refilled
        before = round_trips(redis_server.port)
        for _ in range(50):  # an exhausted bucket: refused from memory, no round trip
            assert (await one.take("team:t3", 600)).retry_after >= 1
        assert round_trips(redis_server.port) - before <= 1
    finally:
        await one.close()
        await two.close()


async def test_unused_leased_tokens_are_dropped_after_a_second(redis_server):
    limiter = await warmed(redis_server.url)
    try:
        assert (await limiter.take("team:t4", 6000)).allowed
        before = round_trips(redis_server.port)
        await asyncio.sleep(LEASE_SECONDS + 0.05)
        assert (await limiter.take("team:t4", 6000)).allowed  # a new lease, not the old one
        assert round_trips(redis_server.port) - before == 1
    finally:
        await limiter.close()


async def test_new_buckets_asked_for_at_once_share_one_round_trip(redis_server):
    """Each visitor's session has a bucket of its own, new to this process: what 50 of them
    ask at the same moment goes to Redis in one script call, each answered as if alone."""
    limiter = await warmed(redis_server.url)
    try:
        before = round_trips(redis_server.port)
        keys = [f"trigger-events:session:agt_1:s-{n}" for n in range(50)]
        decisions = await asyncio.gather(*(limiter.take(key, 100) for key in keys))
        assert round_trips(redis_server.port) - before == 1
        assert all(d.allowed and d.remaining == 99 for d in decisions)
        assert len(redis_server.keys()) == 51  # each bucket kept on its own (and the warm-up)
        for _ in range(99):  # lease size 2 at 100 a minute: every bucket still holds exactly
            await limiter.take(keys[0], 100)
        assert not (await limiter.take(keys[0], 100)).allowed
        assert (await limiter.take(keys[1], 100)).allowed
    finally:
        await limiter.close()


async def test_a_request_that_goes_away_does_not_strand_the_others(redis_server):
    limiter = await warmed(redis_server.url)
    try:
        first = asyncio.ensure_future(limiter.take("team:t5", 6000))
        others = [asyncio.ensure_future(limiter.take("team:t5", 6000)) for _ in range(5)]
        await asyncio.sleep(0)
        first.cancel()  # its request was cancelled while the lease was asked for
        assert all(d.allowed for d in await asyncio.gather(*others))
    finally:
        await limiter.close()
