"""Stream limits of POST /chat: idle timeout, maximum lifetime, the per-IP cap of public
streams, and abrupt client disconnects that leave no stream, slot, task or descriptor."""

from __future__ import annotations

import asyncio
import os
import re
import sys
import time
from pathlib import Path

from agentsvc import keys
from tests.chat_helpers import Stream, get_conversation, new_agent, user
from tests.conftest import assert_error, bearer, new_api_key

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
from bench_disconnects import chat_body, drop_mid_stream  # noqa: E402

LONG_PROMPT = "Bikes " + "bikes are great and bikes are fast. " * 40


async def _setup(make_client, **chat):
    client = await make_client(chat=chat, ratelimit={"public_chat_per_minute": 1_000_000})
    auth = bearer(await new_api_key(client))
    agent = await new_agent(client, auth, systemPrompt=LONG_PROMPT)
    return client, auth, agent["id"]


async def _open_stream(client, agent_id: str, headers: dict | None = None):
    """Start a chat and read until its first text delta; return (response, bytes read)."""
    resp = await client.post(
        "/api/v1/chat", json={"agentId": agent_id, "messages": user("bikes")}, headers=headers
    )
    assert resp.status == 200, await resp.text()
    seen = b""
    while b"content_block_delta" not in seen:
        seen += await resp.content.readany()
    return resp, seen


async def _stored_reply(client, auth, conversation_id: str) -> dict:
    for _ in range(100):
        conv = await get_conversation(client, auth, conversation_id)
        replies = [m for m in conv["messages"] if m["role"] == "assistant"]
        if replies:
            return replies[0]
        await asyncio.sleep(0.02)
    raise AssertionError("the assistant message was never stored")


async def open_streams_gauge(client) -> float:
    resp = await client.get("/metrics")
    assert resp.status == 200
    match = re.search(r"^agentsvc_open_streams (\S+)$", await resp.text(), re.MULTILINE)
    assert match, "agentsvc_open_streams missing from /metrics"
    return float(match.group(1))


async def test_idle_stream_ends_with_an_error_event_and_keeps_what_was_produced(make_client):
    client, auth, agent_id = await _setup(
        make_client, builtin_chunk_delay_ms=5000, idle_timeout_seconds=0.3
    )
    started = time.monotonic()
    resp = await client.post(
        "/api/v1/chat", json={"agentId": agent_id, "messages": user("bikes")}, headers=auth
    )
    stream = Stream(await resp.read())
    assert time.monotonic() - started < 3
    assert stream.names[0] == "message_start"
    assert stream.names[-1] == "error"
    error = stream.of("error")[0]["error"]
    assert error["code"] == "STREAM_IDLE_TIMEOUT"
    assert "0.3 seconds" in error["message"]
    reply = await _stored_reply(client, auth, stream.start["conversationId"])
    assert reply["status"] == "interrupted"
    assert reply["content"] == stream.text and stream.text.startswith("Bikes")
    assert await open_streams_gauge(client) == 0


async def test_keepalives_and_deltas_keep_a_stream_from_idling(make_client):
    # Eight chunks, 50 ms apart, against a 0.3 s idle timeout: the reply completes.
    client, auth, agent_id = await _setup(
        make_client, builtin_chunk_delay_ms=50, idle_timeout_seconds=0.3
    )
    resp = await client.post(
        "/api/v1/chat", json={"agentId": agent_id, "messages": user("bikes")}, headers=auth
    )
    stream = Stream(await resp.read())
    assert stream.names[-1] == "message_stop"


async def test_stream_ends_at_its_maximum_lifetime(make_client):
    client, auth, agent_id = await _setup(
        make_client, builtin_chunk_delay_ms=150, max_stream_seconds=0.4
    )
    started = time.monotonic()
    resp = await client.post(
        "/api/v1/chat", json={"agentId": agent_id, "messages": user("bikes")}, headers=auth
    )
    stream = Stream(await resp.read())
    elapsed = time.monotonic() - started
    assert 0.4 <= elapsed < 3
    assert stream.names[-1] == "error"
    assert stream.of("error")[0]["error"]["code"] == "STREAM_TOO_LONG"
    assert len(stream.of("content_block_delta")) >= 2  # it streamed until then
    reply = await _stored_reply(client, auth, stream.start["conversationId"])
    assert reply["status"] == "interrupted" and reply["content"] == stream.text


async def test_public_streams_are_capped_per_ip(make_client):
    client, auth, agent_id = await _setup(
        make_client, builtin_chunk_delay_ms=200, max_public_streams_per_ip=2
    )
    first, _ = await _open_stream(client, agent_id)
    second, _ = await _open_stream(client, agent_id)
    assert await open_streams_gauge(client) == 2

    body = {"agentId": agent_id, "messages": user("bikes")}
    refused = await client.post("/api/v1/chat", json=body)
    await assert_error(refused, 429, "RATE_LIMITED", "At most 2 open chat streams")
    assert int(refused.headers["Retry-After"]) >= 1

    # A caller with an API key is not a public caller: no cap.
    keyed, _ = await _open_stream(client, agent_id, headers=auth)
    keyed.close()

    # Closing a stream frees its slot (once the server notices, at its next write).
    first.close()
    for _ in range(100):
        resp = await client.post("/api/v1/chat", json=body)
        if resp.status == 200:
            break
        await assert_error(resp, 429, "RATE_LIMITED")
        await asyncio.sleep(0.05)
    assert resp.status == 200
    resp.close()
    second.close()


async def test_refused_chats_do_not_hold_slots(make_client):
    client, _, agent_id = await _setup(make_client, max_public_streams_per_ip=2)
    for _ in range(3):
        resp = await client.post(
            "/api/v1/chat", json={"agentId": "agt_missing", "messages": user("hi")}
        )
        await assert_error(resp, 404, "NOT_FOUND")
    for _ in range(3):
        resp = await client.post("/api/v1/chat", json={"agentId": agent_id, "messages": []})
        await assert_error(resp, 400, "VALIDATION_ERROR", "messages")
    resp = await client.post("/api/v1/chat", json={"agentId": agent_id, "messages": user("bikes")})
    assert resp.status == 200
    assert Stream(await resp.read()).names[-1] == "message_stop"


def _fds() -> int:
    return len(os.listdir("/proc/self/fd"))


async def _settle(client, fds: int | None) -> None:
    for _ in range(200):
        if await open_streams_gauge(client) == 0 and (fds is None or _fds() <= fds):
            return
        await asyncio.sleep(0.02)


async def test_abrupt_disconnects_leave_nothing_behind(make_client):
    concurrency = 10
    client, auth, agent_id = await _setup(
        make_client, builtin_chunk_delay_ms=20, max_public_streams_per_ip=concurrency
    )
    host, port = client.server.host, client.server.port

    async def drop(i: int) -> int:
        while True:
            status = await drop_mid_stream(host, port, chat_body(agent_id, f"s{i}"), i % 2 == 0)
            if status != 429:  # the slot of a just-dropped stream frees at its next write
                return status
            await asyncio.sleep(0.02)

    # Warm-up, so lazily created threads and pools are part of the baseline.
    assert await asyncio.gather(*(drop(i) for i in range(concurrency))) == [200] * concurrency
    pool = getattr(client.app[keys.db_key], "_pool", None)
    if pool is not None:  # PostgreSQL: its pool opens connections as load needs, up to its size
        held = [await pool.acquire() for _ in range(pool.get_max_size())]
        for connection in held:
            await pool.release(connection)
    await _settle(client, None)
    fds, tasks = _fds(), len(asyncio.all_tasks())

    gate = asyncio.Semaphore(concurrency)

    async def bounded(i: int) -> int:
        async with gate:
            return await drop(i)

    statuses = await asyncio.gather(*(bounded(i) for i in range(100)))
    assert statuses == [200] * 100
    await _settle(client, fds)
    assert await open_streams_gauge(client) == 0
    assert _fds() <= fds
    assert len(client.app[keys.chat_streams_key]) == 0
    assert len(asyncio.all_tasks()) <= tasks

    # Every slot is free again: the cap's worth of public streams open at once.
    barrier = asyncio.Barrier(concurrency)
    held = await asyncio.gather(
        *(
            drop_mid_stream(host, port, chat_body(agent_id, f"c{i}"), True, barrier)
            for i in range(concurrency)
        )
    )
    assert held == [200] * concurrency
