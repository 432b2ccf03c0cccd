"""MCP listings cannot leak secrets (issue 29 item 6): a server that echoes the secrets of
`mcpHeaders` into its tools' descriptions and schemas has them scrubbed before anything is
answered, stored or offered; one that echoes them into a tool's name is refused."""

from __future__ import annotations

import base64

import orjson
import pytest

from agentsvc.api import app_keys
from tests.support.accounts import bearer, new_api_key
from tests.support.chat import chat, user
from tests.support.errors import assert_error
from tests.support.fakes import openai_server as oai
from tests.support.fakes.mcp_server import FakeMcpServer

SECRET = "tok-5ecret-VALUE-42"  # noqa: S105 - a test value
HEADERS = {"Authorization": "Bearer {{SHOP_TOKEN}}"}


def leaks(text: str | bytes) -> list[str]:
    """The spellings of the secret found in a text."""
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    b64 = base64.b64encode(SECRET.encode()).decode()
    forms = [SECRET, SECRET.lower(), SECRET.replace("-", "_"), SECRET.lower().replace("-", "_")]
    return [f for f in forms + [b64.rstrip("=")] if f in text]


@pytest.fixture
async def mclient(make_client, openai_fake):
    return await make_client(
        providers={"oai": {"kind": "openai", "base_url": openai_fake.base_url, "api_key": "k"}},
        tools={"mcp_timeout_seconds": 5},
    )


@pytest.fixture
async def mauth(mclient):
    auth = bearer(await new_api_key(mclient))
    resp = await mclient.put("/api/v1/secrets/SHOP_TOKEN", json={"value": SECRET}, headers=auth)
    assert resp.status == 200
    return auth


async def echoing(*places: str) -> FakeMcpServer:
    server = FakeMcpServer(echo=places)
    server.tools = {"whoami": server.tools["whoami"]}
    return await server.start()


async def new_agent(client, auth) -> str:
    body = {"name": "Shop", "model": "oai/gpt-4o", "systemPrompt": "Help."}
    resp = await client.post("/api/v1/agents", json=body, headers=auth)
    assert resp.status == 201, await resp.text()
    return (await resp.json())["data"]["id"]


def tool_body(agent_id: str, url: str) -> dict:
    return {
        "agentId": agent_id,
        "name": "shop",
        "description": "The shop's MCP server",
        "executionType": "mcp",
        "mcpUrl": url,
        "mcpHeaders": HEADERS,
    }


async def stored_row(client, tool_id: str) -> str:
    """The tool's row as the database holds it, every column as text."""
    db = client.app[app_keys.db_key]
    row = await db.reader.fetchone("SELECT * FROM tools WHERE id = ?", (tool_id,))
    assert row is not None
    return repr(tuple(row))


async def test_mcp_listing_secrets_are_scrubbed_from_preview_store_and_visitor_events(
    mclient, mauth, openai_fake
):
    server = await echoing("description", "schema", "base64")
    try:
        agent_id = await new_agent(mclient, mauth)
        preview = {"mcpUrl": server.url, "mcpHeaders": HEADERS, "name": "shop"}
        resp = await mclient.post("/api/v1/tools/mcp-preview", json=preview, headers=mauth)
        body = await resp.read()
        assert resp.status == 200, body
        assert server.calls == [] and server.requests > 0  # the server did hear the secret
        assert leaks(body) == []
        (echo,) = [t for t in orjson.loads(body) if t["name"] == "echo"]
        assert "Authorization: Bearer {{SHOP_TOKEN}} (token {{SHOP_TOKEN}})" in echo["description"]
        assert "as base64: {{SHOP_TOKEN}}" in echo["description"]
        schema = echo["inputSchema"]
        assert schema["required"] == ["{{SHOP_TOKEN}}"]
        assert schema["properties"]["{{SHOP_TOKEN}}"]["enum"] == ["{{SHOP_TOKEN}}", "x"]
        assert echo["problem"] is None

        resp = await mclient.post(
            "/api/v1/tools", json=tool_body(agent_id, server.url), headers=mauth
        )
        created = await resp.read()
        assert resp.status == 201, created
        assert leaks(created) == []
        tool = orjson.loads(created)
        assert leaks(await stored_row(mclient, tool["id"])) == []
        resp = await mclient.post(f"/api/v1/tools/{tool['id']}/refresh", headers=mauth)
        assert resp.status == 200 and leaks(await resp.read()) == []
        assert leaks(await stored_row(mclient, tool["id"])) == []

        # An anonymous visitor's chat: the model calls the echoing tool.
        openai_fake.script(
            oai.stream(oai.tool_events([("call_1", "shop__echo", ['{"{{SHOP_TOKEN}}":"x"}'])])),
            oai.stream(oai.text_events(["Done."])),
        )
        stream = await chat(mclient, {"agentId": agent_id, "messages": user("go")})
        (started,) = stream.of("tool_use_start")
        assert started["toolName"] == "shop__echo"
        assert stream.of("tool_result")[0]["output"] == "echoed"
        assert leaks(stream.raw) == []
        # Nor does the model read it in the tools it is offered.
        offered = orjson.dumps(openai_fake.requests[0]["json"]["tools"])
        assert b"{{SHOP_TOKEN}}" in offered and leaks(offered) == []
    finally:
        await server.close()


@pytest.mark.parametrize("place", ["name", "slug_name"])
async def test_mcp_listing_a_name_carrying_a_secret_is_refused(mclient, mauth, place):
    server = await echoing(place)
    try:
        agent_id = await new_agent(mclient, mauth)
        preview = {"mcpUrl": server.url, "mcpHeaders": HEADERS}
        resp = await mclient.post("/api/v1/tools/mcp-preview", json=preview, headers=mauth)
        error = await assert_error(
            resp, 400, "VALIDATION_ERROR", "mcpUrl: the server lists a tool whose name holds"
        )
        assert "{{SHOP_TOKEN}}" in error["message"] and leaks(error["message"]) == []
        resp = await mclient.post(
            "/api/v1/tools", json=tool_body(agent_id, server.url), headers=mauth
        )
        error = await assert_error(resp, 400, "VALIDATION_ERROR", "tool names are shown to")
        assert leaks(error["message"]) == []
        resp = await mclient.get(f"/api/v1/tools?agentId={agent_id}", headers=mauth)
        assert await resp.json() == []
    finally:
        await server.close()


async def test_mcp_listing_refresh_refuses_a_name_that_starts_carrying_a_secret(mclient, mauth):
    server = await echoing()
    try:
        agent_id = await new_agent(mclient, mauth)
        resp = await mclient.post(
            "/api/v1/tools", json=tool_body(agent_id, server.url), headers=mauth
        )
        assert resp.status == 201, await resp.text()
        tool = await resp.json()
        before = await stored_row(mclient, tool["id"])
        server.echo = ("name",)
        resp = await mclient.post(f"/api/v1/tools/{tool['id']}/refresh", headers=mauth)
        await assert_error(resp, 400, "VALIDATION_ERROR", "holds the value of")
        assert await stored_row(mclient, tool["id"]) == before  # nothing changed
        assert leaks(before) == []
    finally:
        await server.close()
