"""Stream limits: POST /chat's idle timeout and maximum lifetime, the per-IP cap of public
streams, the per-key and per-team caps of authenticated streams (chat and event streams),
and abrupt client disconnects that leave no stream, slot, task or descriptor."""

from __future__ import annotations

import asyncio
import os
import re
import resource
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import aiohttp
import pytest

from agentsvc.api import app_keys
from tests.support.accounts import bearer, create_user, new_api_key, session, sign_in
from tests.support.chat import Stream, chat, get_conversation, new_agent, user
from tests.support.errors import assert_error
from tests.support.live import open_events
from tests.support.pools import open_every_connection

# It measures the machine (timings, memory, recovery): it runs alone (tests/conftest.py).
pytestmark = pytest.mark.needs_the_machine

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
from bench_disconnects import chat_body, drop_mid_stream  # noqa: E402
from benchlib import api_key, free_port, wait_http  # noqa: E402

from tests.support.warm import popen  # noqa: E402

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


def _fd_targets() -> set[str]:
    """What the open file descriptors point at (named in a failure)."""
    targets = set()
    for fd in os.listdir("/proc/self/fd"):
        try:
            targets.add(os.readlink(f"/proc/self/fd/{fd}"))
        except OSError:  # closed meanwhile (listdir's own)
            pass
    return targets


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

    gate = asyncio.Semaphore(concurrency)

    async def bounded(i: int) -> int:
        async with gate:
            return await drop(i)

    # Warm-up under the same load, so lazily created threads and pools (the database's, and
    # with Redis the rate limiter's connections, which grow with concurrent checks) are part
    # of the baseline.
    assert await asyncio.gather(*(bounded(i) for i in range(100))) == [200] * 100
    await open_every_connection(client.app)
    await _settle(client, None)
    fds, targets, tasks = _fds(), _fd_targets(), len(asyncio.all_tasks())

    statuses = await asyncio.gather(*(bounded(i) for i in range(100)))
    assert statuses == [200] * 100
    await _settle(client, fds)
    assert await open_streams_gauge(client) == 0
    assert _fds() <= fds, f"newly open: {sorted(_fd_targets() - targets)}"
    assert len(client.app[app_keys.chat_streams_key]) == 0
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


async def test_authenticated_streams_are_bounded_per_key_and_per_team(make_client):
    """Issue 29 item 3: streams opened with a key or a member's session hold a slot of the
    key (a member's sessions together) and of the team; past either, 429 with Retry-After."""
    client = await make_client(ratelimit={"max_streams_per_key": 2, "max_streams_per_team": 4})
    await create_user(client, "owner@example.com")
    key1, key2 = bearer(await new_api_key(client)), bearer(await new_api_key(client))
    first_session, second_session = [
        session(await sign_in(client, "owner@example.com")) for _ in range(2)
    ]
    other = bearer(await new_api_key(client, "other@example.com"))
    agent, theirs = await new_agent(client, key1), await new_agent(client, other)
    body = {"agentId": agent["id"], "messages": user("hello")}
    conv_id = (await chat(client, body, key1)).start["conversationId"]
    inbox = "/api/v1/inbox/events"

    held = [await open_events(client, inbox, headers=key1) for _ in range(2)]
    resp = await client.get(inbox, headers=key1)
    await assert_error(resp, 429, "RATE_LIMITED", "At most 2 open streams per API key")
    assert resp.headers["Retry-After"] == "2"
    # Two sign-in sessions of one member are one key; the team has 4 open streams now.
    held += [await open_events(client, inbox, headers=h) for h in (first_session, second_session)]
    resp = await client.get(f"/api/v1/conversations/{conv_id}/events", headers=first_session)
    await assert_error(resp, 429, "RATE_LIMITED", "At most 2 open streams per signed-in member")
    # Another key of the team: the team's cap, for event streams and chat alike.
    resp = await client.get(f"/api/v1/conversations/{conv_id}/events", headers=key2)
    await assert_error(resp, 429, "RATE_LIMITED", "At most 4 open streams per team")
    resp = await client.post("/api/v1/chat", json=body, headers=key2)
    await assert_error(resp, 429, "RATE_LIMITED", "At most 4 open streams per team")
    assert int(resp.headers["Retry-After"]) >= 1
    # Another team streams as usual, and public visitors are not counted against the team.
    other_inbox = await open_events(client, inbox, headers=other)
    stream = await chat(client, {"agentId": theirs["id"], "messages": user("hi")}, other)
    assert stream.names[-1] == "message_stop"
    assert (await chat(client, body)).names[-1] == "message_stop"
    other_inbox.resp.close()

    # A stream that ends gives its slots back (once the server sees the client gone).
    held.pop().resp.close()
    for _ in range(100):
        resp = await client.post("/api/v1/chat", json=body, headers=key2)
        if resp.status == 200:
            break
        await assert_error(resp, 429, "RATE_LIMITED")
        await asyncio.sleep(0.05)
    assert Stream(await resp.read()).names[-1] == "message_stop"
    # Refused and finished streams hold nothing: exactly the freed slot is free again.
    held.append(await open_events(client, inbox, headers=key2))
    resp = await client.get(inbox, headers=key2)
    await assert_error(resp, 429, "RATE_LIMITED", "per team")
    for reader in held:
        reader.resp.close()


def _open_files_limit(soft: int, hard: int):
    """A preexec_fn giving the child process `ulimit -Sn soft -Hn hard`."""

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))

    return limit


async def _try_streams(base: str, keys_: list[str], attempts: int, in_flight: int):
    """Open `attempts` inbox streams with the keys in turn, `in_flight` at a time; keep the
    ones that open. Return (the session to close, its open streams, a Counter of (status,
    error) and the Retry-After values seen)."""
    gate = asyncio.Semaphore(in_flight)
    held: list[aiohttp.ClientResponse] = []
    outcomes: Counter = Counter()
    retry_afters: set[str | None] = set()
    http = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=attempts + 100))

    async def attempt(n: int) -> None:
        headers = {"Authorization": f"Bearer {keys_[n % len(keys_)]}"}
        async with gate:
            resp = await http.get(f"{base}/api/v1/inbox/events", headers=headers)
            if resp.status == 200:
                while b"retry:" not in await resp.content.readany():
                    pass
                held.append(resp)
                outcomes[200, ""] += 1
                return
            error = (await resp.json())["error"]
            outcomes[resp.status, f"{error['code']}: {error['message']}"] += 1
            retry_afters.add(resp.headers.get("Retry-After"))

    try:
        async with asyncio.timeout(60):
            await asyncio.gather(*(attempt(n) for n in range(attempts)))
    except BaseException:
        await http.close()
        raise
    return http, held, outcomes, retry_afters


async def test_one_team_trying_1000_streams_under_ulimit_1024_leaves_others_working(tmp_path):
    """Issue 29 item 3, on a real `agentsvc serve` whose open-file limit is 1,024: one team
    tries 1,000 inbox streams with three keys, the default caps hold it to 200, and /healthz
    and another team's chat keep working. The server raised its soft limit and said so."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < hard:  # this process holds a few hundred streams too
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    port = free_port()
    config = tmp_path / "agentsvc.toml"
    config.write_text(
        f'[server]\ndata_dir = "{tmp_path / "data"}"\nport = {port}\n'
        "[plans.pro]\nrequests_per_minute = 1000000\n"  # the stream caps are under test
    )
    env = {**os.environ, "AGENTSVC_CONFIG": str(config), "AGENTSVC_LOG_LEVEL": "INFO"}
    log_path = tmp_path / "server.log"
    key_a = api_key(config, "a@example.com", popen)  # creates the database first
    with log_path.open("wb") as log_file:
        server = subprocess.Popen(
            [sys.executable, "-m", "agentsvc", "serve"],
            env=env,
            stderr=log_file,
            preexec_fn=_open_files_limit(512, 1024),  # noqa: PLW1509 - no threads run then
        )
    base = f"http://127.0.0.1:{port}"
    try:
        key_b, _ = await asyncio.gather(
            asyncio.to_thread(api_key, config, "b@example.com", popen),
            asyncio.to_thread(wait_http, f"{base}/healthz"),
        )
        limits = Path(f"/proc/{server.pid}/limits").read_text()
        assert re.search(r"Max open files\s+1024\s+1024", limits), limits
        assert "open files: soft limit 512 raised to the hard limit 1024" in log_path.read_text()

        async with aiohttp.ClientSession(base_url=base) as http:
            auth_a = {"Authorization": f"Bearer {key_a}"}
            more = []
            for name in ("second", "third"):
                async with http.post("/api/v1/api-keys", json={"name": name}, headers=auth_a) as r:
                    assert r.status == 201, await r.text()
                    more.append((await r.json())["data"]["key"])
            auth_b = {"Authorization": f"Bearer {key_b}"}
            async with http.post("/api/v1/agents", json={"name": "B"}, headers=auth_b) as r:
                agent_b = (await r.json())["data"]["id"]

        started = time.monotonic()
        # The first key tries two streams in three: it meets its own cap, the others the team's.
        attackers = [key_a] * 4 + more
        attack, held, outcomes, retry_afters = await _try_streams(base, attackers, 1000, 100)
        try:
            assert outcomes[200, ""] == 200, outcomes
            assert sum(n for (status, _), n in outcomes.items() if status == 429) == 800, outcomes
            assert {m for s, m in outcomes if s == 429} == {
                "RATE_LIMITED: At most 100 open streams per API key; close one or try again"
                " shortly",
                "RATE_LIMITED: At most 200 open streams per team; close one or try again shortly",
            }
            assert retry_afters == {"2"}
            # With the team's 200 streams open: /healthz, and another team's chat and inbox.
            async with aiohttp.ClientSession(base_url=base) as http:
                async with http.get("/healthz") as r:
                    assert r.status == 200 and (await r.json())["status"] == "ok"
                body = {"agentId": agent_b, "messages": user("hello")}
                async with http.post("/api/v1/chat", json=body, headers=auth_b) as r:
                    assert r.status == 200
                    assert Stream(await r.read()).names[-1] == "message_stop"
                async with http.get("/api/v1/inbox/events", headers=auth_b) as r:
                    assert r.status == 200
            assert time.monotonic() - started < 20
        finally:
            for resp in held:
                resp.close()
            await attack.close()
    finally:
        server.terminate()
        try:
            server.wait(15)
        except subprocess.TimeoutExpired:  # a server brought down does not stop cleanly
            server.kill()
            server.wait(15)
