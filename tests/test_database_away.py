"""A process whose PostgreSQL goes away (issue 37): it notices within PROBE_SECONDS +
PROBE_TIMEOUT_SECONDS (at once when a request loses its connection), its /readyz and its
API answer 503 meanwhile (the API's with nothing done, so a load balancer passes the
request on), and it serves again once the database answers. A chat reply that could not
be stored ends with an `error` event, never with `message_stop`.

The app reaches PostgreSQL through a TCP proxy the test cuts (tests/support/tcp_proxy.py);
tests/test_hosts.py does the same to a host of a cluster with a blackhole route.
"""

from __future__ import annotations

import asyncio
import time
from urllib.parse import urlsplit, urlunsplit

import pytest

from agentsvc.services.chat.turn import UNSTORED_REPLY
from tests.support import pg
from tests.support.accounts import bearer, new_api_key
from tests.support.chat import Stream, user
from tests.support.errors import assert_error
from tests.support.fakes import openai_server as oai
from tests.support.tcp_proxy import TcpProxy

pytestmark = pg.postgres_only


@pytest.fixture
async def proxy(tmp_path):
    url = urlsplit(pg.database_url_for(tmp_path))
    started = await TcpProxy(url.hostname, url.port).start()
    yield started
    await started.close()


@pytest.fixture
async def away_client(make_client, tmp_path, proxy, openai_fake):
    url = urlsplit(pg.database_url_for(tmp_path))
    proxied = urlunsplit(url._replace(netloc=f"{url.username}@127.0.0.1:{proxy.port}"))
    return await make_client(
        database={"url": proxied},
        webhooks={"poll_seconds": 0.1},  # a periodic job (several processes' outbox poll)
        providers={"oai": {"kind": "openai", "base_url": openai_fake.base_url, "api_key": "k"}},
    )


async def _status(client, path: str) -> int:
    resp = await client.get(path)
    await resp.read()
    return resp.status


async def _within(seconds: float, check) -> float:
    started = time.monotonic()
    while not await check():
        assert time.monotonic() - started < seconds, f"not within {seconds} s"
        await asyncio.sleep(0.05)
    return time.monotonic() - started


async def test_an_unreachable_database_answers_503_then_serves_again(away_client, proxy, caplog):
    auth = bearer(await new_api_key(away_client))
    assert await _status(away_client, "/readyz") == 200
    proxy.cut()

    async def not_ready() -> bool:
        return await _status(away_client, "/readyz") == 503

    await _within(3, not_ready)
    noticed = time.time()
    resp = await away_client.get("/api/v1/agents", headers=auth)
    await assert_error(resp, 503, "SERVER_BUSY", "cannot reach its database")
    assert resp.headers["Retry-After"] == "1"
    resp = await away_client.post("/api/v1/agents", json={"name": "Lost"}, headers=auth)
    await assert_error(resp, 503, "SERVER_BUSY", "nothing was done")
    assert await _status(away_client, "/healthz") == 200  # alive: only not ready
    await asyncio.sleep(1)
    # Periodic jobs wait for the database rather than fail (and log) every period (a run
    # already under way at the cut may fail: it was in flight).
    failed = [r for r in caplog.records if r.name.startswith("apscheduler")]
    assert not [r for r in failed if r.created > noticed + 0.2], caplog.text
    proxy.mend()

    async def ready() -> bool:
        return await _status(away_client, "/readyz") == 200

    await _within(3, ready)
    resp = await away_client.get("/api/v1/agents", headers=auth)
    assert resp.status == 200, await resp.text()
    names = [a["name"] for a in (await resp.json())["data"]]
    assert "Lost" not in names  # the refused write was not done


async def test_a_reply_the_database_could_not_keep_ends_with_an_error(
    away_client, proxy, openai_fake
):
    auth = bearer(await new_api_key(away_client))
    resp = await away_client.post(
        "/api/v1/agents", json={"name": "Shop", "model": "oai/gpt-4o-mini"}, headers=auth
    )
    agent_id = (await resp.json())["data"]["id"]
    openai_fake.script(oai.stream(oai.text_events(["Your ", "parcel ", "is ", "here"]), pause=0.3))
    body = {"agentId": agent_id, "messages": user("Where is my parcel?")}
    turn = asyncio.ensure_future(away_client.post("/api/v1/chat", json=body, headers=auth))
    await _within(5, _async(lambda: len(openai_fake.requests) == 1))  # the model answers
    proxy.cut()  # while the reply streams: it cannot be stored
    resp = await turn
    assert resp.status == 200
    stream = Stream(await resp.read())
    assert "message_stop" not in stream.names, stream.names
    assert stream.of("error") == [
        {"type": "error", "error": {"code": "INTERNAL_ERROR", "message": UNSTORED_REPLY}}
    ]
    proxy.mend()


def _async(check):
    async def checked() -> bool:
        return check()

    return checked
