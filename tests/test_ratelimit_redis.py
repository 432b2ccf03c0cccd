"""Limits shared through Redis (`[ratelimit] redis_url`): two apps here stand for two
processes. A real `redis-server` (Debian's) is started by these tests on a free port, on
both sides of the suite; without one the tests fail when TEST_REQUIRE_REDIS is set (as in
scripts/test.sh's PostgreSQL run) and are skipped otherwise."""

from __future__ import annotations

import asyncio
import logging
import time

import redis

from agentsvc.ratelimit_redis import PREFIX, RedisLimiter
from tests.support.accounts import bearer, new_api_key
from tests.support.chat import chat, new_agent, user
from tests.support.errors import assert_error
from tests.support.redis_server import free_port
from tests.support.settings import make_settings


async def two_apps(make_client, tmp_path, url: str, **limits):
    """Two apps on one database (the same data directory), limits through one Redis."""
    ratelimit = {"redis_url": url, **limits}
    first = await make_client(make_settings(tmp_path, ratelimit=ratelimit))
    second = await make_client(make_settings(tmp_path, ratelimit=ratelimit))
    return first, second


async def test_a_public_limit_is_shared_by_two_processes(make_client, tmp_path, redis_server):
    url = redis_server.url
    first, second = await two_apps(make_client, tmp_path, url, public_chat_per_minute=3)
    agent = await new_agent(first, bearer(await new_api_key(first)))
    body = {"agentId": agent["id"], "messages": user("hi")}
    statuses = []
    for client in (first, second, first, second, first, second):
        resp = await client.post("/api/v1/chat", json=body)
        await resp.read()
        statuses.append(resp.status)
    assert statuses.count(200) == 3 and statuses.count(429) == 3, statuses


async def test_plan_limit_headers_are_the_same_as_in_memory(make_client, tmp_path, redis_server):
    url = redis_server.url
    first, second = await two_apps(make_client, tmp_path, url)
    key = await new_api_key(first, plan="free")  # 20 requests a minute
    seen = []
    for n in range(22):
        client = (first, second)[n % 2]
        resp = await client.get("/api/v1/agents", headers=bearer(key))
        seen.append((resp.status, resp.headers.get("X-RateLimit-Remaining")))
        assert resp.headers["X-RateLimit-Limit"] == "20"
        assert int(resp.headers["X-RateLimit-Reset"]) >= int(time.time())
        if resp.status == 429:
            assert int(resp.headers["Retry-After"]) >= 1
            await assert_error(resp, 429, "RATE_LIMITED")
    assert [s for s, _ in seen].count(200) == 20
    assert [r for _, r in seen[:3]] == ["19", "18", "17"]
    # The same figures from an in-memory app.
    local = await make_client(make_settings(tmp_path / "local", ratelimit={"redis_url": ""}))
    key = await new_api_key(local, email="other@example.com", plan="free")
    resp = await local.get("/api/v1/agents", headers=bearer(key))
    assert resp.headers["X-RateLimit-Remaining"] == "19"


async def test_concurrent_stream_slots_are_shared_and_expire(redis_server):
    one, two = RedisLimiter(redis_server.url), RedisLimiter(redis_server.url)
    try:
        assert await one.hold("chat-streams:203.0.113.1", 2)
        assert await two.hold("chat-streams:203.0.113.1", 2)
        assert not await one.hold("chat-streams:203.0.113.1", 2)
        assert await one.hold("chat-streams:203.0.113.2", 2)  # another address
        await two.release("chat-streams:203.0.113.1")
        assert await one.hold("chat-streams:203.0.113.1", 2)
        client = redis.Redis(port=redis_server.port)
        ttl = client.pttl(PREFIX + "chat-streams:203.0.113.1")
        client.close()
        assert 0 < ttl <= 900_000  # a killed process's slots are freed after 15 minutes
    finally:
        await one.close()
        await two.close()


async def test_a_long_lived_stream_slot_outlives_its_stream_in_redis(redis_server):
    """An inbox stream lives up to an hour: its team's shared count must not expire first
    (then the cap would count from zero again), and a chat's shorter hold never shortens it."""
    limiter = RedisLimiter(redis_server.url)
    client = redis.Redis(port=redis_server.port)
    try:
        assert await limiter.hold("streams-team:team_1", 200, 3660)
        assert await limiter.hold("streams-team:team_1", 200)  # a chat: 15 minutes would do
        assert 3_600_000 < client.pttl(PREFIX + "streams-team:team_1") <= 3_660_000
        assert await limiter.hold("chat-streams:203.0.113.9", 10)
        assert 0 < client.pttl(PREFIX + "chat-streams:203.0.113.9") <= 900_000
    finally:
        client.close()
        await limiter.close()


async def test_a_hostile_long_key_is_stored_hashed(redis_server):
    limiter = RedisLimiter(redis_server.url)
    try:
        for n in range(3):
            await limiter.retry_after(f"trigger-events:session:a:{'x' * 10_000}{n}", 10)
        stored = redis_server.keys()
        assert len(stored) == 3 and all(len(k) < 100 for k in stored)
    finally:
        await limiter.close()


async def test_without_redis_limits_fall_back_to_the_process(make_client, tmp_path, caplog):
    url = f"redis://127.0.0.1:{free_port()}/0"  # nothing listens there
    client = await make_client(
        make_settings(tmp_path, ratelimit={"redis_url": url, "public_chat_per_minute": 2})
    )
    agent = await new_agent(client, bearer(await new_api_key(client)))
    body = {"agentId": agent["id"], "messages": user("hi")}
    with caplog.at_level(logging.WARNING, logger="agentsvc.ratelimit_redis"):
        for _ in range(2):
            await chat(client, body)
        refused = await client.post("/api/v1/chat", json=body)
        await assert_error(refused, 429, "RATE_LIMITED")
    warnings = [r for r in caplog.records if "Redis does not answer" in r.getMessage()]
    assert len(warnings) == 1  # once, not per request


async def test_redis_stopping_mid_way_never_fails_a_request(make_client, tmp_path, redis_server):
    client = await make_client(
        make_settings(
            tmp_path, ratelimit={"redis_url": redis_server.url, "public_chat_per_minute": 1000}
        )
    )
    agent = await new_agent(client, bearer(await new_api_key(client)))
    body = {"agentId": agent["id"], "messages": user("hi")}
    await chat(client, body)
    redis_server.stop()
    started = time.monotonic()
    for _ in range(5):
        await chat(client, body)  # answered from the local buckets
    assert time.monotonic() - started < 3  # one timeout at most, not one per request
    redis_server.start()
    await asyncio.sleep(1.1)  # the retry pause
    await chat(client, body)
    assert redis_server.keys()  # back on Redis
