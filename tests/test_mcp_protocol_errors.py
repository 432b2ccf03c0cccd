"""MCP protocol errors are plain one-line messages (issue 29 item 8): what a hostile server
sends (not JSON, not JSON-RPC, a wrong content type, a result of the wrong shape, an error
of many lines) ends as one sentence for people, with no pydantic wording, and the log gets
no ERROR record and no traceback."""

from __future__ import annotations

import logging

import pytest

from tests.support.accounts import bearer, new_api_key
from tests.support.chat import chat, user
from tests.support.errors import assert_error
from tests.support.fakes import openai_server as oai
from tests.support.fakes.hostile_mcp import HostileMcp

LIBRARY_WORDS = ("pydantic", "validation error", "input_value", "type=", "Traceback", "union[")

EXPECTED = {
    "not_json": "the MCP server's answer was not valid MCP: its body is not JSON",
    "not_jsonrpc": "the MCP server's answer was not valid MCP: it is not a JSON-RPC message",
    "html": "the MCP server's answer was not valid MCP: it came as text/html",
    "bad_result": "the MCP server's answer was not valid MCP (at tools.0.",
    "sse_garbage": "the MCP server's answer was not valid MCP: its body is not JSON",
    "too_deep": "the MCP server's answer was not valid MCP: its JSON nests too deep",
    "long_error": "the MCP server answered an error: Traceback (most recent call last): File",
}


def assert_plain(message: str) -> None:
    assert "\n" not in message and len(message) < 500, message
    for word in LIBRARY_WORDS:
        assert word not in message, (word, message)


def assert_quiet_log(caplog) -> None:
    """No ERROR record and no traceback, from our loggers or the SDK's."""
    loud = [r for r in caplog.records if r.levelno >= logging.ERROR or r.exc_info]
    assert loud == [], [(r.name, r.levelname, r.getMessage()) for r in loud]


@pytest.fixture
async def hclient(make_client, openai_fake):
    return await make_client(
        providers={"oai": {"kind": "openai", "base_url": openai_fake.base_url, "api_key": "k"}},
        tools={"mcp_timeout_seconds": 5},
    )


@pytest.mark.parametrize("mode", list(EXPECTED))
async def test_mcp_protocol_errors_are_one_plain_line_without_error_logs(
    hclient, aiohttp_server, caplog, mode
):
    server = await aiohttp_server(HostileMcp(mode).app())
    auth = bearer(await new_api_key(hclient))
    url = str(server.make_url("/mcp"))
    caplog.set_level(logging.DEBUG)
    resp = await hclient.post("/api/v1/tools/mcp-preview", json={"mcpUrl": url}, headers=auth)
    error = await assert_error(resp, 400, "VALIDATION_ERROR")
    message = error["message"]
    assert message.startswith("mcpUrl: could not list the MCP server's tools: "), message
    assert EXPECTED[mode] in message, message
    if mode == "long_error":
        assert message.endswith("…") and "boom boom" in message
        assert_plain(message.replace("Traceback (most recent", ""))  # the server's words
    else:
        assert_plain(message)
    assert_quiet_log(caplog)


@pytest.mark.parametrize("mode", ["not_json", "html", "long_error"])
async def test_mcp_protocol_errors_in_a_call_are_one_plain_line(
    hclient, aiohttp_server, openai_fake, caplog, mode
):
    hostile = HostileMcp("fine")
    server = await aiohttp_server(hostile.app())
    auth = bearer(await new_api_key(hclient))
    resp = await hclient.post(
        "/api/v1/agents", json={"name": "Shop", "model": "oai/gpt-4o"}, headers=auth
    )
    agent_id = (await resp.json())["data"]["id"]
    body = {
        "agentId": agent_id,
        "name": "shop",
        "description": "A hostile server",
        "executionType": "mcp",
        "mcpUrl": str(server.make_url("/mcp")),
    }
    resp = await hclient.post("/api/v1/tools", json=body, headers=auth)
    assert resp.status == 201, await resp.text()
    hostile.mode = mode  # from now on, every call is answered with garbage
    openai_fake.script(
        oai.stream(oai.tool_events([("call_1", "shop__lookup", ["{}"])])),
        oai.stream(oai.text_events(["Sorry."])),
    )
    caplog.set_level(logging.DEBUG)
    stream = await chat(hclient, {"agentId": agent_id, "messages": user("go")}, auth)
    (result,) = stream.of("tool_result")
    assert result["isError"] is True
    assert result["output"].startswith("MCP call failed: " + EXPECTED[mode]), result["output"]
    assert "\n" not in result["output"]
    assert_quiet_log(caplog)
