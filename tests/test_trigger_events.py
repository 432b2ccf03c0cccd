"""Trigger events: validation, exact stats, batching, the flood limit and the SIGTERM flush."""

from __future__ import annotations

import asyncio
import os
import re
import signal
import sqlite3
import subprocess
import time
from pathlib import Path

import aiohttp
import pytest

from agentsvc.api import app_keys
from agentsvc.db.sqlite import SqliteDatabase
from agentsvc.services.triggers.events import EventWriter
from agentsvc.store.trigger_events import TriggerEvent
from tests.support.accounts import bearer, new_api_key
from tests.support.cli import run
from tests.support.errors import assert_error
from tests.support.pg import sqlite_only
from tests.support.triggers import body as trigger_body
from tests.support.triggers import create as create_trigger
from tests.support.triggers import new_agent
from tests.support.warm import WarmProcess

EVENT_URL = "/api/v1/triggers/event"


def event(agent_id: str, trigger: dict | None, **over) -> dict:
    base = {
        "agentId": agent_id,
        "triggerName": trigger["name"] if trigger else "Welcome",
        "triggerType": trigger["triggerType"] if trigger else "time_on_page",
        "actionType": trigger["actionType"] if trigger else "open_chat",
        "eventType": "fired",
        "sessionId": "sess-1",
        "pagePath": "/pricing",
    }
    if trigger:
        base["triggerId"] = trigger["id"]
    return {**base, **over}


async def stats(client, auth, agent_id) -> dict:
    resp = await client.get(f"/api/v1/triggers/stats?agentId={agent_id}", headers=auth)
    assert resp.status == 200
    return await resp.json()


@pytest.fixture
async def setup(client, auth):
    agent_id = await new_agent(client, auth)
    trigger = await create_trigger(client, auth, agent_id)
    return agent_id, trigger


async def test_events_answer_202_and_feed_exact_stats(client, auth, setup):
    agent_id, trigger = setup
    other = await create_trigger(client, auth, agent_id, name="Other")
    for kind in ("fired", "fired", "converted"):
        resp = await client.post(EVENT_URL, json=event(agent_id, trigger, eventType=kind))
        assert resp.status == 202
        assert await resp.json() == {"success": True}
        assert resp.headers["Access-Control-Allow-Origin"] == "*"
    assert await stats(client, auth, agent_id) == {
        trigger["id"]: {"firedCount": 2, "convertedCount": 1},
        other["id"]: {"firedCount": 0, "convertedCount": 0},
    }


async def test_optional_fields_may_be_absent_or_null(client, auth, setup):
    agent_id, trigger = setup
    minimal = event(agent_id, trigger)
    del minimal["sessionId"], minimal["pagePath"]
    assert (await client.post(EVENT_URL, json=minimal)).status == 202
    nulls = event(agent_id, trigger, sessionId=None, pagePath=None)
    assert (await client.post(EVENT_URL, json=nulls)).status == 202
    assert (await stats(client, auth, agent_id))[trigger["id"]]["firedCount"] == 2


async def test_event_without_trigger_id_counts_for_the_oldest_trigger_of_that_name(
    client, auth, setup
):
    agent_id, trigger = setup
    later = await create_trigger(client, auth, agent_id)  # same name, created later
    resp = await client.post(EVENT_URL, json=event(agent_id, None, triggerName=trigger["name"]))
    assert resp.status == 202
    counted = await stats(client, auth, agent_id)
    assert counted[trigger["id"]]["firedCount"] == 1
    assert counted[later["id"]]["firedCount"] == 0
    resp = await client.post(EVENT_URL, json=event(agent_id, None, triggerName="Nope"))
    await assert_error(resp, 404, "NOT_FOUND", "trigger")


async def test_events_naming_no_trigger_of_the_agent_are_refused(client, auth, setup):
    agent_id, trigger = setup
    other_agent = await new_agent(client, auth, "Other")
    foreign = await create_trigger(client, auth, other_agent)
    for bad in (
        event("agt_unknown", trigger),
        event(agent_id, trigger, triggerId="trg_unknown"),
        event(agent_id, foreign),
    ):
        resp = await client.post(EVENT_URL, json=bad)
        await assert_error(resp, 404, "NOT_FOUND")
        assert resp.headers["Access-Control-Allow-Origin"] == "*"
    assert (await stats(client, auth, agent_id))[trigger["id"]]["firedCount"] == 0
    assert (await stats(client, auth, other_agent))[foreign["id"]]["firedCount"] == 0


@pytest.mark.parametrize(
    ("over", "field"),
    [
        ({"triggerName": "Someone else"}, "triggerName"),
        ({"triggerType": "exit_intent"}, "triggerType"),
        ({"actionType": "show_bubble"}, "actionType"),
    ],
)
async def test_event_with_a_trigger_id_must_agree_with_that_trigger(
    client, auth, setup, over, field
):
    """Item 7: the name, type and action of an event given its triggerId are the trigger's."""
    agent_id, trigger = setup  # "Welcome", time_on_page, open_chat
    resp = await client.post(EVENT_URL, json=event(agent_id, trigger, **over))
    error = await assert_error(resp, 400, "VALIDATION_ERROR", f"{field}: does not match")
    assert "triggerId" in error["message"]
    assert resp.headers["Access-Control-Allow-Origin"] == "*"
    assert (await stats(client, auth, agent_id))[trigger["id"]]["firedCount"] == 0
    # The same event told truly is counted; a bad one in the same batch changes nothing.
    good, bad = event(agent_id, trigger), event(agent_id, trigger, **over)
    answers = await asyncio.gather(*(client.post(EVENT_URL, json=b) for b in (good, bad, good)))
    assert [r.status for r in answers] == [202, 400, 202]
    assert (await stats(client, auth, agent_id))[trigger["id"]]["firedCount"] == 2


async def test_event_checks_follow_a_renamed_trigger(client, auth, setup):
    agent_id, trigger = setup
    resp = await client.put(
        f"/api/v1/triggers/{trigger['id']}", json={"name": "Hello"}, headers=auth
    )
    assert resp.status == 200
    resp = await client.post(EVENT_URL, json=event(agent_id, trigger))  # the old name
    await assert_error(resp, 400, "VALIDATION_ERROR", "triggerName")
    resp = await client.post(EVENT_URL, json=event(agent_id, trigger, triggerName="Hello"))
    assert resp.status == 202


@pytest.mark.parametrize(
    ("over", "message"),
    [
        ({"eventType": "clicked"}, "eventType"),
        ({"eventType": None}, "eventType"),
        ({"triggerType": "hover"}, "triggerType"),
        ({"actionType": "dance"}, "actionType"),
        ({"agentId": ""}, "agentId"),
        ({"triggerName": 5}, "triggerName"),
        ({"sessionId": "x" * 201}, "sessionId"),
        ({"extra": 1}, "extra: is not a known field"),
    ],
)
async def test_bad_event_bodies(client, auth, setup, over, message):
    agent_id, trigger = setup
    resp = await client.post(EVENT_URL, json=event(agent_id, trigger, **over))
    await assert_error(resp, 400, "VALIDATION_ERROR", message)
    assert resp.headers["Access-Control-Allow-Origin"] == "*"


async def test_missing_fields_and_bad_json(client, setup):
    agent_id, trigger = setup
    for field in ("agentId", "triggerName", "triggerType", "actionType", "eventType"):
        payload = event(agent_id, trigger)
        del payload[field]
        resp = await client.post(EVENT_URL, json=payload)
        await assert_error(resp, 400, "VALIDATION_ERROR", f"{field}: is required")
    resp = await client.post(EVENT_URL, data=b"{nope", headers={"Content-Type": "application/json"})
    await assert_error(resp, 400, "VALIDATION_ERROR", "malformed JSON")


async def test_concurrent_events_are_batched_and_all_counted(make_client):
    client = await make_client(ratelimit={"trigger_events_per_minute": 10_000})
    auth = bearer(await new_api_key(client))
    agent_id = await new_agent(client, auth)
    trigger = await create_trigger(client, auth, agent_id)
    writer = client.app[app_keys.event_writer_key]
    batches_before = writer.batches

    async def send(i: int) -> int:
        kind = "converted" if i % 4 == 0 else "fired"
        resp = await client.post(
            EVENT_URL, json=event(agent_id, trigger, eventType=kind, sessionId=f"s{i}")
        )
        return resp.status

    statuses = await asyncio.gather(*(send(i) for i in range(400)))
    assert statuses == [202] * 400
    assert await stats(client, auth, agent_id) == {
        trigger["id"]: {"firedCount": 300, "convertedCount": 100}
    }
    # Fewer transactions than events: whatever queued during a write went in one batch.
    assert writer.batches - batches_before < 400


@sqlite_only
async def test_events_wait_while_another_process_writes_and_are_all_counted(client, auth, setup):
    # Another process (say `agentsvc apikey create`) holds SQLite's write lock: the batch
    # cannot be written at once on the loop, so it waits on the writer's thread instead,
    # and the server keeps answering meanwhile.
    agent_id, trigger = setup
    db_path = client.app[app_keys.db_key].path
    other = sqlite3.connect(db_path, isolation_level=None)
    other.execute("BEGIN IMMEDIATE")
    try:
        sends = [
            asyncio.ensure_future(client.post(EVENT_URL, json=event(agent_id, trigger)))
            for _ in range(5)
        ]
        await asyncio.sleep(0.3)
        assert not any(s.done() for s in sends)  # waiting for the commit
        resp = await client.get("/healthz")
        assert resp.status == 200  # the loop is free
    finally:
        other.execute("ROLLBACK")
        other.close()
    assert [(await s).status for s in sends] == [202] * 5
    assert (await stats(client, auth, agent_id))[trigger["id"]]["firedCount"] == 5


@sqlite_only
async def test_the_wal_is_checkpointed_in_the_background(client, auth, setup):
    agent_id, trigger = setup
    for _ in range(20):
        resp = await client.post(EVENT_URL, json=event(agent_id, trigger))
        assert resp.status == 202
    db = client.app[app_keys.db_key]
    deadline = time.monotonic() + 5
    while db.commits_since_checkpoint and time.monotonic() < deadline:
        await asyncio.sleep(0.1)
    assert db.commits_since_checkpoint == 0
    # Everything committed is in the database file: a fresh reader outside the WAL sees it.
    # (A reader or a background write of the app may hold the WAL for a moment: busy is
    # then 1, and a later look sees the pages copied.)
    probe = sqlite3.connect(db.path)
    deadline = time.monotonic() + 5
    try:
        while True:
            busy, wal_pages, copied = probe.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
            if (busy == 0 and wal_pages == copied) or time.monotonic() >= deadline:
                break
            await asyncio.sleep(0.05)
        assert busy == 0 and wal_pages == copied
    finally:
        probe.close()


async def test_deleting_a_trigger_drops_its_counts(client, auth, setup):
    agent_id, trigger = setup
    assert (await client.post(EVENT_URL, json=event(agent_id, trigger))).status == 202
    resp = await client.delete(f"/api/v1/triggers/{trigger['id']}", headers=auth)
    assert resp.status == 200
    assert await stats(client, auth, agent_id) == {}
    resp = await client.post(EVENT_URL, json=event(agent_id, trigger))
    await assert_error(resp, 404, "NOT_FOUND")


async def test_flood_limit_per_ip(make_client):
    client = await make_client(ratelimit={"trigger_events_per_minute": 5})
    auth = bearer(await new_api_key(client))
    agent_id = await new_agent(client, auth)
    trigger = await create_trigger(client, auth, agent_id)
    for i in range(5):
        resp = await client.post(EVENT_URL, json=event(agent_id, trigger, sessionId=f"s{i}"))
        assert resp.status == 202
    # A new session id from the same address is still refused: the address is limited too.
    resp = await client.post(EVENT_URL, json=event(agent_id, trigger, sessionId="fresh"))
    await assert_error(resp, 429, "RATE_LIMITED", "5 trigger events per minute")
    assert int(resp.headers["Retry-After"]) >= 1
    assert resp.headers["Access-Control-Allow-Origin"] == "*"
    assert (await stats(client, auth, agent_id))[trigger["id"]]["firedCount"] == 5


async def test_flood_limit_per_session_across_addresses(make_client):
    """One session id is limited even when its events come from several addresses."""
    client = await make_client(ratelimit={"trigger_events_per_minute": 3})
    auth = bearer(await new_api_key(client))
    agent_id = await new_agent(client, auth)
    trigger = await create_trigger(client, auth, agent_id)
    url = str(client.make_url(EVENT_URL))

    async def post_from(address: str, session_id: str) -> aiohttp.ClientResponse:
        connector = aiohttp.TCPConnector(local_addr=(address, 0))
        async with aiohttp.ClientSession(connector=connector) as session:
            payload = event(agent_id, trigger, sessionId=session_id)
            async with session.post(url, json=payload) as resp:
                await resp.read()
                return resp

    for address in ("127.0.0.2", "127.0.0.3", "127.0.0.4"):
        assert (await post_from(address, "shared")).status == 202
    resp = await post_from("127.0.0.5", "shared")
    assert resp.status == 429
    assert int(resp.headers["Retry-After"]) >= 1
    # The fifth address itself is not exhausted: another session from it passes.
    assert (await post_from("127.0.0.5", "other")).status == 202
    assert (await stats(client, auth, agent_id))[trigger["id"]]["firedCount"] == 4


async def test_close_writes_everything_still_queued(tmp_path):
    db = SqliteDatabase(tmp_path / "events.db")
    await db.open()
    try:
        now = "2026-01-01T00:00:00.000Z"
        async with db.write() as conn:
            await conn.execute(
                "INSERT INTO users (id, email, created_at, updated_at) VALUES ('u', 'u@x', ?, ?)",
                (now, now),
            )
            await conn.execute("INSERT INTO teams VALUES ('t', 'T', 'u', 'pro', ?, ?)", (now, now))
            await conn.execute(
                "INSERT INTO agents (id, team_id, name, slug, model, temperature, created_at,"
                " updated_at) VALUES ('a', 't', 'A', 'a', 'builtin', 0, ?, ?)",
                (now, now),
            )
            await conn.execute(
                "INSERT INTO triggers (id, agent_id, team_id, name, trigger_type, conditions,"
                " action_type, action_config, created_at, updated_at) VALUES"
                " ('trg', 'a', 't', 'T', 'exit_intent', '{}', 'open_chat', '{}', ?, ?)",
                (now, now),
            )
        writer = EventWriter(db)
        writer.start()
        ev = TriggerEvent("a", "trg", "T", "fired")
        pending = [asyncio.ensure_future(writer.record(ev)) for _ in range(250)]
        await asyncio.sleep(0)  # every record() has queued its event
        await writer.close()
        assert [await p for p in pending] == ["trg"] * 250
        rows = await db.reader.fetchall("SELECT fired_count FROM triggers")
        assert rows[0][0] == 250
    finally:
        await db.close()


# ── a real `agentsvc serve` stopped with SIGTERM while events are in flight ──────────────


class Serve:
    """`agentsvc serve` in a process of its own on a temporary data directory and a free
    port (forked with the package loaded: tests/support/warm.py)."""

    def __init__(self, data_dir: Path):
        self.env = {"AGENTSVC_RATELIMIT_TRIGGER_EVENTS_PER_MINUTE": "1000000"}
        self.data_dir = data_dir
        self.proc = WarmProcess(
            ["serve", "--port", "0", "--data-dir", str(data_dir)],
            cwd=data_dir.parent,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, **self.env},
        )
        deadline = time.monotonic() + 30
        self.log = ""
        while time.monotonic() < deadline:
            line = self.proc.stderr.readline()
            self.log += line
            match = re.search(r"listening on (http://\S+)", line)
            if match:
                self.url = match.group(1)
                return
            if not line:
                break
        raise AssertionError("server did not start: " + self.log)

    def api_key(self) -> str:
        args = ["apikey", "create", "--email", "sig@example.com", "--data-dir", str(self.data_dir)]
        out = run(args, self.data_dir.parent, **self.env)
        assert out.returncode == 0, out.stderr
        return out.stdout.strip()

    def wait(self) -> int:
        _, rest = self.proc.communicate(timeout=60)
        self.log += rest
        return self.proc.returncode


async def test_sigterm_loses_no_accepted_event(tmp_path):
    server = Serve(tmp_path / "data")
    try:
        auth = bearer(server.api_key())
        async with aiohttp.ClientSession(server.url) as http:
            resp = await http.post("/api/v1/agents", json={"name": "Sig"}, headers=auth)
            agent_id = (await resp.json())["data"]["id"]
            resp = await http.post(
                f"/api/v1/triggers?agentId={agent_id}", json=trigger_body(), headers=auth
            )
            trigger = await resp.json()
            accepted = 0
            failed = 0
            signalled = asyncio.Event()

            async def sender(worker: int) -> None:
                nonlocal accepted, failed
                # Keep sending after the signal until the server refuses connections.
                for i in range(10_000):
                    payload = event(agent_id, trigger, sessionId=f"w{worker}-{i}")
                    try:
                        async with http.post(EVENT_URL, json=payload) as resp:
                            await resp.read()
                            if resp.status == 202:
                                accepted += 1
                            else:
                                failed += 1
                    except aiohttp.ClientError:
                        return
                    if accepted >= 300 and not signalled.is_set():
                        signalled.set()
                        server.proc.send_signal(signal.SIGTERM)

            await asyncio.wait_for(asyncio.gather(*(sender(w) for w in range(32))), 60)
        assert signalled.is_set()
        assert server.wait() == 0, server.log
        assert "agentsvc stopped" in server.log
    finally:
        if server.proc.poll() is None:
            server.proc.kill()
            server.proc.wait()

    # Start again on the same data and read the stats through the API.
    again = Serve(tmp_path / "data")
    try:
        async with aiohttp.ClientSession(again.url) as http:
            resp = await http.get(f"/api/v1/triggers/stats?agentId={agent_id}", headers=auth)
            counted = (await resp.json())[trigger["id"]]["firedCount"]
    finally:
        again.proc.send_signal(signal.SIGTERM)
        again.wait()
    assert failed == 0
    assert accepted >= 300
    # Every 202 was counted; at most the requests whose reply the shutdown cut off on top.
    assert accepted <= counted <= accepted + 32, (accepted, counted)
