"""A process killed while a tool call waits for approval (issue 36): `agentsvc serve`
stopped with SIGKILL (nothing is let go, no shutdown runs) while the visitor's stream holds
the paused turn; another process on the same database lists the call, takes its decision,
and once the dead process's lease has run out takes the turn up: the tool runs once. And a
decision taken in one process reaches the stream open in another."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import aiohttp
import pytest

from tests.support import pg
from tests.support.accounts import bearer, new_api_key
from tests.support.approvals import (
    FAST,
    ORDER_SCHEMA,
    OpenStream,
    agent_with_refund,
    ask_refund,
    data_of,
    decide,
    pending_of,
)
from tests.support.chat import user
from tests.support.fakes.webhook_receiver import WebhookReceiver
from tests.support.settings import make_settings, with_new_database
from tests.support.warm import popen

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
from benchlib import ServerProcess, api_key, free_port  # noqa: E402


@pytest.fixture
async def hits():
    receiver = await WebhookReceiver().start()
    yield receiver
    await receiver.close()


def _config(tmp_path: Path, port: int) -> Path:
    lines = [
        f'[server]\ndata_dir = "{tmp_path / "data"}"\nport = {port}',
        "[outbound]\nallow_private = true",
        "[approvals]\nlease_seconds = 1\nsweep_seconds = 0.2",
        "[chat]\nkeepalive_seconds = 0.2",
    ]
    if pg.SERVER_URL:  # every process on the run's PostgreSQL
        url = pg.database_url_for(tmp_path / "data")
        lines[0] += '\nsecret_key = "test-secret-shared-by-every-process"'
        lines.append(f'[database]\nurl = "{url}"')
    config = tmp_path / "agentsvc.toml"
    config.write_text("\n".join(lines) + "\n")
    return config


async def _post(http, path: str, auth: dict, body: dict) -> dict:
    async with http.post("/api/v1" + path, json=body, headers=auth) as resp:
        assert resp.status in (200, 201), await resp.text()
        return await resp.json()


async def test_a_killed_process_leaves_its_call_to_another(tmp_path, hits):
    port = free_port()
    config = _config(tmp_path, port)
    first = ServerProcess(config, port, spawn=popen)
    await asyncio.to_thread(first.start)
    auth = bearer(await asyncio.to_thread(api_key, config, "owner@example.com", popen))
    try:
        async with aiohttp.ClientSession(first.base) as http:
            agent = (await _post(http, "/agents", auth, {"name": "Shop"}))["data"]
            tool = {
                "agentId": agent["id"],
                "name": "refund",
                "description": "Refund an order",
                "executionType": "http",
                "httpMethod": "POST",
                "httpUrl": hits.url("/refunds"),
                "inputSchema": ORDER_SCHEMA,
                "requiresApproval": True,
            }
            await _post(http, "/tools", auth, tool)
            body = {"agentId": agent["id"], "messages": user('/tool refund {"order": "A4"}')}
            stream = await OpenStream.start(http, body)
            conversation_id, approval_id = await pending_of(http, auth, stream)
            await asyncio.to_thread(first.kill)  # the stream's process dies holding the turn
    finally:
        await asyncio.to_thread(first.kill)
    second = ServerProcess(config, port, spawn=popen)
    await asyncio.to_thread(second.start)
    try:
        async with aiohttp.ClientSession(second.base) as http:
            async with http.get("/api/v1/approvals?status=pending", headers=auth) as resp:
                assert [a["id"] for a in await data_of(resp)] == [approval_id]
            async with http.post(
                f"/api/v1/approvals/{approval_id}/approve", json={}, headers=auth
            ) as resp:
                assert (await data_of(resp))["status"] == "approved"
            answer = None
            for _ in range(200):  # the dead process's lease runs out (1 s), then a sweep
                async with http.get(f"/api/v1/conversations/{conversation_id}", headers=auth) as r:
                    messages = (await data_of(r))["messages"]
                answer = next((m for m in messages if m["role"] == "assistant"), None)
                if answer is not None:
                    break
                await asyncio.sleep(0.05)
            assert answer is not None and '"status":200' in answer["content"], messages
            await asyncio.sleep(0.6)
            assert [h.json for h in hits.at("/refunds")] == [{"order": "A4"}]
    finally:
        await asyncio.to_thread(second.stop)


async def test_a_decision_in_another_process_reaches_the_open_stream(make_client, tmp_path):
    settings = with_new_database(make_settings(tmp_path, **FAST))
    first = await make_client(settings)
    second = await make_client(settings)
    auth = bearer(await new_api_key(first))
    agent_id = await agent_with_refund(first, auth)
    stream = await ask_refund(first, agent_id)
    _, approval_id = await pending_of(first, auth, stream)
    pending = await data_of(await second.get("/api/v1/approvals?status=pending", headers=auth))
    assert [a["id"] for a in pending] == [approval_id]
    await data_of(await decide(second, auth, approval_id, "approve"))
    decided = await stream.until("approval_decided", timeout=5)
    assert decided["status"] == "approved"
    result = await stream.until("tool_result")
    assert result["output"] == {"refunded": True}
    await stream.rest()
