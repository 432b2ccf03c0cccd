"""MCP tools: listing a real MCP server's tools, naming, limits, refresh, calls from chat,
secrets, failures (errors, hangs, huge answers, endless streams) and the outbound guards."""

from __future__ import annotations

import socket
import sqlite3
import time

import pytest
from aiohttp.abc import AbstractResolver, ResolveResult

from agentsvc.api import app_keys
from agentsvc.services.tools.mcp import exposed_names
from tests.support import pg
from tests.support.accounts import bearer, new_api_key
from tests.support.chat import chat, get_conversation, user
from tests.support.errors import assert_error
from tests.support.fakes import openai_server as oai
from tests.support.fakes.mcp_server import FakeMcpServer
from tests.support.mcp_tools import create, mcp_body, new_agent, run_call
from tests.support.settings import make_settings

ALL_TOOLS = 7  # the fake server's default list


@pytest.fixture
async def mcp_server():
    server = await FakeMcpServer().start()
    yield server
    await server.close()


@pytest.fixture
async def mclient(make_client, openai_fake):
    return await make_client(
        providers={"oai": {"kind": "openai", "base_url": openai_fake.base_url, "api_key": "k"}},
        tools={"mcp_timeout_seconds": 2},
    )


@pytest.fixture
async def mauth(mclient):
    return bearer(await new_api_key(mclient))


def names(tool: dict) -> list[str]:
    return [f["name"] for f in tool["mcpServerTools"]]


# ── naming ─────────────────────────────────────────────────────────────────────────────


def test_exposed_names_follow_the_tool_name_rules():
    mapped = exposed_names("shop", ["get_order", "Search-Docs", "Get Order", "x" * 80, "été"])
    assert mapped["get_order"] == "shop__get_order"
    assert mapped["Search-Docs"] == "shop__search_docs"
    # "Get Order" would meet get_order: it keeps its slug and gains a digest of its name.
    assert mapped["Get Order"].startswith("shop__get_order_") and len(mapped["Get Order"]) == 22
    assert len(mapped["x" * 80]) == 64
    assert mapped["été"] == "shop__t"
    assert len(set(mapped.values())) == 5
    assert exposed_names("shop", ["Get Order"]) == {"Get Order": "shop__get_order"}


# ── create, limits, selection ──────────────────────────────────────────────────────────


async def test_create_lists_and_stores_the_servers_tools(mclient, mauth, mcp_server):
    agent_id = await new_agent(mclient, mauth)
    tool = await create(mclient, mauth, mcp_body(agent_id, mcp_server.url))
    assert tool["executionType"] == "mcp"
    assert tool["inputSchema"] == {"type": "object", "properties": {}}
    assert tool["mcpTools"] is None and tool["mcpListedAt"]
    assert names(tool)[:2] == ["shop__get_order", "shop__search_docs"]
    order = tool["mcpServerTools"][0]
    assert order["serverName"] == "get_order"
    assert order["description"] == "Look up an order by id"
    assert order["inputSchema"]["required"] == ["id"]
    resp = await mclient.get(f"/api/v1/tools/limits?agentId={agent_id}", headers=mauth)
    assert (await resp.json())["current"] == ALL_TOOLS
    again = await mclient.get(f"/api/v1/tools/{tool['id']}", headers=mauth)
    assert (await again.json())["mcpServerTools"] == tool["mcpServerTools"]


async def test_mcp_tools_selects_and_refuses_unknown_names(mclient, mauth, mcp_server):
    agent_id = await new_agent(mclient, mauth)
    body = mcp_body(agent_id, mcp_server.url, mcpTools=["Search-Docs", "get_order"])
    tool = await create(mclient, mauth, body)
    assert names(tool) == ["shop__search_docs", "shop__get_order"]
    bad = mcp_body(agent_id, mcp_server.url, name="other", mcpTools=["get_ordr"])
    resp = await mclient.post("/api/v1/tools", json=bad, headers=mauth)
    await assert_error(resp, 400, "VALIDATION_ERROR", "mcpTools: the server lists no tool named")
    for field, value, message in [
        ("mcpTools", [], "mcpTools"),
        ("mcpTools", ["a", "a"], "mcpTools"),
        ("inputSchema", {"type": "object", "properties": {"q": {}}}, "inputSchema: an mcp tool"),
        ("httpUrl", "https://example.com", "httpUrl"),
        ("mcpHeaders", {"X": "a\nb"}, "mcpHeaders"),
    ]:
        resp = await mclient.post(
            "/api/v1/tools", json={**bad, "mcpTools": None, field: value}, headers=mauth
        )
        await assert_error(resp, 400, "VALIDATION_ERROR", message)


async def test_plan_limit_counts_each_exposed_tool(mclient, mcp_server):
    auth = bearer(await new_api_key(mclient, "free@example.com", plan="free"))
    agent_id = await new_agent(mclient, auth)
    resp = await mclient.post(
        "/api/v1/tools", json=mcp_body(agent_id, mcp_server.url), headers=auth
    )
    error = await assert_error(resp, 403, "TOOL_LIMIT_REACHED", "would expose 7")
    assert "mcpTools" in error["message"]
    two = mcp_body(agent_id, mcp_server.url, mcpTools=["get_order", "whoami"])
    tool = await create(mclient, auth, two)
    resp = await mclient.get(f"/api/v1/tools/limits?agentId={agent_id}", headers=auth)
    assert await resp.json() == {"current": 2, "limit": 3, "planId": "free", "canCreate": True}
    mock = {
        "agentId": agent_id,
        "name": "note",
        "description": "A note",
        "executionType": "mock",
        "inputSchema": {"type": "object", "properties": {}},
        "mockResponse": "ok",
    }
    await create(mclient, auth, mock)
    resp = await mclient.post("/api/v1/tools", json={**mock, "name": "note2"}, headers=auth)
    await assert_error(resp, 403, "TOOL_LIMIT_REACHED")
    # A selection that grows past the limit is refused, and nothing changes.
    resp = await mclient.put(
        f"/api/v1/tools/{tool['id']}",
        json={"mcpTools": ["get_order", "whoami", "fail"]},
        headers=auth,
    )
    await assert_error(resp, 403, "TOOL_LIMIT_REACHED")
    still = await (await mclient.get(f"/api/v1/tools/{tool['id']}", headers=auth)).json()
    assert names(still) == ["shop__get_order", "shop__whoami"]


async def test_exposed_names_are_unique_per_agent(mclient, mauth, mcp_server):
    agent_id = await new_agent(mclient, mauth)
    mock = {
        "agentId": agent_id,
        "name": "shop__whoami",
        "description": "Taken",
        "executionType": "mock",
        "inputSchema": {"type": "object", "properties": {}},
        "mockResponse": "ok",
    }
    await create(mclient, mauth, mock)
    resp = await mclient.post(
        "/api/v1/tools", json=mcp_body(agent_id, mcp_server.url), headers=mauth
    )
    await assert_error(resp, 400, "DUPLICATE_NAME", "shop__whoami is already offered")
    tool = await create(mclient, mauth, mcp_body(agent_id, mcp_server.url, mcpTools=["fail"]))
    resp = await mclient.post("/api/v1/tools", json={**mock, "name": "shop__fail"}, headers=mauth)
    await assert_error(resp, 400, "DUPLICATE_NAME", "shop__fail is already offered")
    # Renaming the tool renames what it offers, without asking the server again.
    before = mcp_server.requests
    resp = await mclient.put(f"/api/v1/tools/{tool['id']}", json={"name": "store"}, headers=mauth)
    assert resp.status == 200, await resp.text()
    assert names(await resp.json()) == ["store__fail"]
    assert mcp_server.requests == before


async def test_a_schema_the_rules_refuse_is_named_and_can_be_left_out(mclient, mauth, mcp_server):
    remote = {"type": "object", "properties": {"a": {"$ref": "https://example.com/s.json"}}}
    mcp_server.tools["remote"] = ("Uses a remote schema", remote)
    agent_id = await new_agent(mclient, mauth)
    resp = await mclient.post(
        "/api/v1/tools", json=mcp_body(agent_id, mcp_server.url), headers=mauth
    )
    await assert_error(
        resp, 400, "VALIDATION_ERROR", "the server's tool 'remote' cannot be offered"
    )
    resp = await mclient.post(
        "/api/v1/tools/mcp-preview", json={"mcpUrl": mcp_server.url, "name": "shop"}, headers=mauth
    )
    assert resp.status == 200, await resp.text()
    listed = {t["name"]: t for t in await resp.json()}
    assert listed["Search-Docs"]["exposedName"] == "shop__search_docs"
    assert listed["get_order"]["problem"] is None
    assert "remote" in listed and listed["remote"]["problem"]
    chosen = [n for n in listed if n != "remote"]
    tool = await create(mclient, mauth, mcp_body(agent_id, mcp_server.url, mcpTools=chosen))
    assert len(names(tool)) == ALL_TOOLS


# ── refresh ────────────────────────────────────────────────────────────────────────────


async def test_refresh_follows_a_changed_tool_list(mclient, mauth, mcp_server, openai_fake):
    agent_id = await new_agent(mclient, mauth)
    tool = await create(mclient, mauth, mcp_body(agent_id, mcp_server.url))
    del mcp_server.tools["get_order"]
    mcp_server.tools["track_parcel"] = ("Track a parcel", {"type": "object", "properties": {}})
    resp = await mclient.post(f"/api/v1/tools/{tool['id']}/refresh", headers=mauth)
    assert resp.status == 200, await resp.text()
    refreshed = await resp.json()
    assert "shop__get_order" not in names(refreshed)
    assert "shop__track_parcel" in names(refreshed)
    assert refreshed["mcpListedAt"] >= tool["mcpListedAt"]
    # The model is offered exactly the stored functions.
    openai_fake.script(oai.stream(oai.text_events(["Hi"])))
    await chat(mclient, {"agentId": agent_id, "messages": user("hello")}, mauth)
    offered = [t["function"]["name"] for t in openai_fake.requests[-1]["json"]["tools"]]
    assert offered == names(refreshed)
    # Another team cannot refresh it; a tool of another type cannot be refreshed.
    other = bearer(await new_api_key(mclient, "other@example.com"))
    resp = await mclient.post(f"/api/v1/tools/{tool['id']}/refresh", headers=other)
    await assert_error(resp, 404, "NOT_FOUND")


async def test_a_refresh_past_the_plan_limit_changes_nothing(mclient, mcp_server):
    auth = bearer(await new_api_key(mclient, "free@example.com", plan="free"))
    agent_id = await new_agent(mclient, auth)
    mcp_server.tools = {k: v for k, v in list(mcp_server.tools.items())[:2]}
    tool = await create(mclient, auth, mcp_body(agent_id, mcp_server.url))
    mcp_server.tools["one_more"] = ("x", {"type": "object"})
    mcp_server.tools["and_more"] = ("y", {"type": "object"})
    resp = await mclient.post(f"/api/v1/tools/{tool['id']}/refresh", headers=auth)
    await assert_error(resp, 403, "TOOL_LIMIT_REACHED", "would expose 4")
    same = await (await mclient.get(f"/api/v1/tools/{tool['id']}", headers=auth)).json()
    assert names(same) == names(tool)


async def test_only_mcp_tools_refresh(mclient, mauth):
    agent_id = await new_agent(mclient, mauth)
    mock = {
        "agentId": agent_id,
        "name": "note",
        "description": "A note",
        "executionType": "mock",
        "inputSchema": {"type": "object", "properties": {}},
        "mockResponse": "ok",
    }
    tool = await create(mclient, mauth, mock)
    resp = await mclient.post(f"/api/v1/tools/{tool['id']}/refresh", headers=mauth)
    await assert_error(resp, 400, "VALIDATION_ERROR", "only mcp tools can be refreshed")


# ── calls from chat ────────────────────────────────────────────────────────────────────


async def test_the_model_calls_an_mcp_tool(mclient, mauth, mcp_server, openai_fake):
    agent_id = await new_agent(mclient, mauth)
    await create(mclient, mauth, mcp_body(agent_id, mcp_server.url))
    result = await run_call(mclient, mauth, openai_fake, agent_id, "shop__get_order", '{"id":"7"}')
    assert result["isError"] is False
    assert result["output"] == "Order 7: shipped\n[image image/png, about 6 bytes, not shown]"
    assert mcp_server.calls[-1][:2] == ("get_order", {"id": "7"})
    # The model got the text; the conversation keeps the call as a chat does.
    sent = openai_fake.requests[-1]["json"]["messages"]
    assert sent[-1]["content"].startswith("Order 7: shipped")
    resp = await mclient.get(f"/api/v1/conversations?agentId={agent_id}", headers=mauth)
    conv = await get_conversation(mclient, mauth, (await resp.json())["data"][0]["id"])
    assert conv["messages"][-1]["toolCalls"][0]["toolName"] == "shop__get_order"


async def test_invalid_input_is_refused_before_sending(mclient, mauth, mcp_server, openai_fake):
    agent_id = await new_agent(mclient, mauth)
    await create(mclient, mauth, mcp_body(agent_id, mcp_server.url))
    result = await run_call(mclient, mauth, openai_fake, agent_id, "shop__get_order", '{"id":7}')
    assert result["isError"] is True
    assert result["output"].startswith("Invalid input for tool shop__get_order")
    assert mcp_server.calls == []


@pytest.mark.parametrize(
    ("name", "args", "message"),
    [
        ("shop__fail", "{}", "The order system is down"),
        ("shop__crash", "{}", "MCP call failed: the MCP server answered an error"),
        ("shop__hang", "{}", "MCP call failed: timed out after 2 s"),
        ("shop__huge", '{"size": 3000000}', "MCP call failed: the server sent more than 1048576"),
    ],
)
async def test_failures_are_tool_errors(
    mclient, mauth, mcp_server, openai_fake, name, args, message
):
    agent_id = await new_agent(mclient, mauth)
    await create(mclient, mauth, mcp_body(agent_id, mcp_server.url))
    started = time.monotonic()
    result = await run_call(mclient, mauth, openai_fake, agent_id, name, args)
    assert result["isError"] is True
    assert result["output"].startswith(message), result["output"]
    assert time.monotonic() - started < 10


async def test_a_tool_that_vanished_is_a_tool_error(mclient, mauth, mcp_server, openai_fake):
    agent_id = await new_agent(mclient, mauth)
    await create(mclient, mauth, mcp_body(agent_id, mcp_server.url))
    del mcp_server.tools["get_order"]  # gone from the server, still stored until a refresh
    result = await run_call(mclient, mauth, openai_fake, agent_id, "shop__get_order", '{"id":"1"}')
    assert result["isError"] is True
    assert "Unknown tool" in result["output"]
    # A name the model makes up is no tool at all.
    result = await run_call(mclient, mauth, openai_fake, agent_id, "shop__nothing", "{}")
    assert result["isError"] is True and result["output"].startswith("Unknown tool")


# ── secrets ────────────────────────────────────────────────────────────────────────────


async def test_header_secrets_are_filled_and_never_shown(mclient, mauth, mcp_server, openai_fake):
    agent_id = await new_agent(mclient, mauth)
    headers = {"Authorization": "Bearer {{SHOP_TOKEN}}"}
    body = mcp_body(agent_id, mcp_server.url, mcpHeaders=headers)
    resp = await mclient.post("/api/v1/tools", json=body, headers=mauth)
    await assert_error(resp, 400, "VALIDATION_ERROR", "mcpHeaders: missing secret(s) SHOP_TOKEN")
    assert mcp_server.requests == 0
    resp = await mclient.put("/api/v1/secrets/SHOP_TOKEN", json={"value": "tok-123"}, headers=mauth)
    assert resp.status == 200
    tool = await create(mclient, mauth, body)
    assert tool["mcpHeaders"] == headers  # as written: the value never comes back
    result = await run_call(mclient, mauth, openai_fake, agent_id, "shop__whoami", "{}")
    assert mcp_server.calls[-1][2] == "Bearer tok-123"
    assert result["output"] == "Authorization: Bearer {{SHOP_TOKEN}}"
    # A secret deleted since: the call fails before anything is sent.
    await mclient.delete("/api/v1/secrets/SHOP_TOKEN", headers=mauth)
    calls = len(mcp_server.calls)
    result = await run_call(mclient, mauth, openai_fake, agent_id, "shop__whoami", "{}")
    assert result["isError"] is True and "missing secret(s) SHOP_TOKEN" in result["output"]
    assert len(mcp_server.calls) == calls


# ── the outbound guards ────────────────────────────────────────────────────────────────


class LoopbackResolver(AbstractResolver):
    """Every name resolves to 127.0.0.1 (a DNS answer pointing inside)."""

    async def resolve(self, host, port=0, family=socket.AF_INET) -> list[ResolveResult]:
        return [
            ResolveResult(
                hostname=host, host="127.0.0.1", port=port, family=socket.AF_INET, proto=0, flags=0
            )
        ]

    async def close(self) -> None:
        pass


async def test_a_name_resolving_to_loopback_is_refused(aiohttp_client, tmp_path, mcp_server):
    from agentsvc.app import create_app

    app = create_app(make_settings(tmp_path, outbound={"allow_private": False}))
    app[app_keys.outbound_resolver_key] = LoopbackResolver()
    client = await aiohttp_client(app)
    auth = bearer(await new_api_key(client))
    resp = await client.post("/api/v1/agents", json={"name": "A"}, headers=auth)
    agent_id = (await resp.json())["data"]["id"]
    url = f"http://mcp.example:{mcp_server.port}/mcp"
    resp = await client.post("/api/v1/tools", json=mcp_body(agent_id, url), headers=auth)
    await assert_error(resp, 400, "VALIDATION_ERROR", "mcp.example resolves to 127.0.0.1")
    resp = await client.post("/api/v1/tools", json=mcp_body(agent_id, mcp_server.url), headers=auth)
    await assert_error(resp, 400, "VALIDATION_ERROR", "mcpUrl: points to a private address")
    resp = await client.post("/api/v1/tools/mcp-preview", json={"mcpUrl": url}, headers=auth)
    await assert_error(resp, 400, "VALIDATION_ERROR", "resolves to 127.0.0.1, which is loopback")
    assert mcp_server.requests == 0


@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("/redirect", "the server answered 307 (a redirect to /mcp); redirects are not followed"),
        ("/endless", "the server sent more than 1048576 bytes"),
        ("/trickle", "timed out after 2 s"),
        ("/status/500", "the MCP server answered an error"),
    ],
)
async def test_misbehaving_servers_are_refused_with_a_reason(
    mclient, mauth, mcp_server, path, message
):
    agent_id = await new_agent(mclient, mauth)
    body = mcp_body(agent_id, mcp_server.address(path))
    resp = await mclient.post("/api/v1/tools", json=body, headers=mauth)
    await assert_error(resp, 400, "VALIDATION_ERROR", "mcpUrl: could not list the MCP server's")
    resp = await mclient.post("/api/v1/tools", json=body, headers=mauth)
    await assert_error(resp, 400, "VALIDATION_ERROR", message)
    before = mcp_server.requests
    assert before == 0  # nothing reached the MCP endpoint itself


async def test_an_unreachable_server_is_a_clear_error(mclient, mauth, unused_tcp_port):
    agent_id = await new_agent(mclient, mauth)
    url = f"http://127.0.0.1:{unused_tcp_port}/mcp"
    resp = await mclient.post("/api/v1/tools", json=mcp_body(agent_id, url), headers=mauth)
    said = "could not connect to 127.0.0.1: the connection was refused"
    await assert_error(resp, 400, "VALIDATION_ERROR", said)


async def test_a_json_response_server_works_too(mclient, mauth, openai_fake):
    server = await FakeMcpServer(json_response=True).start()
    try:
        agent_id = await new_agent(mclient, mauth)
        await create(mclient, mauth, mcp_body(agent_id, server.url, mcpTools=["huge", "get_order"]))
        result = await run_call(
            mclient, mauth, openai_fake, agent_id, "shop__huge", '{"size": 2000000}'
        )
        assert result["isError"] and "more than 1048576 bytes" in result["output"]
        result = await run_call(
            mclient, mauth, openai_fake, agent_id, "shop__get_order", '{"id":"2"}'
        )
        assert result["output"].startswith("Order 2: shipped")
    finally:
        await server.close()


# ── schema upgrade ─────────────────────────────────────────────────────────────────────


@pg.sqlite_only
async def test_a_database_from_before_mcp_tools_keeps_its_tools(aiohttp_client, tmp_path):
    from agentsvc.app import create_app
    from agentsvc.db.migrations import schema_at, schema_version

    path = tmp_path / "old" / "data" / "agentsvc.db"
    path.parent.mkdir(parents=True)
    conn = sqlite3.connect(path)
    conn.executescript(schema_at(schema_version() - 1))
    with conn:
        conn.execute(
            "INSERT INTO users (id, email, created_at, updated_at)"
            " VALUES ('u_1', 'a@b.c', 't', 't')"
        )
        conn.execute(
            "INSERT INTO teams (id, name, owner_user_id, plan, created_at, updated_at)"
            " VALUES ('team_1', 'T', 'u_1', 'pro', 't', 't')"
        )
        conn.execute(
            "INSERT INTO agents (id, team_id, name, slug, model, temperature, created_at,"
            " updated_at) VALUES ('agt_1', 'team_1', 'A', 'a', 'builtin', 0.5, 't', 't')"
        )
        conn.execute(
            "INSERT INTO tools (id, agent_id, team_id, name, description, execution_type,"
            " input_schema, mock_response, created_at, updated_at)"
            " VALUES ('tool_1', 'agt_1', 'team_1', 'note', 'A note', 'mock', '{}', 'ok', 't', 't')"
        )
    conn.close()
    client = await aiohttp_client(create_app(make_settings(tmp_path / "old")))
    rows = await client.app[app_keys.db_key].reader.fetchall(
        "SELECT name, mock_response, counts_as, mcp_url FROM tools"
    )
    assert [tuple(r) for r in rows] == [("note", "ok", 1, None)]
    await client.close()
    fresh = tmp_path / "fresh"
    client = await aiohttp_client(create_app(make_settings(fresh)))
    await client.close()

    def columns(db):
        c = sqlite3.connect(db)
        try:
            return c.execute("PRAGMA table_info(tools)").fetchall()
        finally:
            c.close()

    assert columns(path) == columns(fresh / "data" / "agentsvc.db")
