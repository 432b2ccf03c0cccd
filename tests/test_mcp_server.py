"""Agents as MCP servers: POST /mcp/:agentId driven by an MCP client built with the SDK."""

from __future__ import annotations

from contextlib import asynccontextmanager

import httpx2
import pytest

from tests.support.accounts import bearer, new_api_key
from tests.support.chat import add_document, get_conversation
from tests.support.errors import assert_error
from tests.support.fakes import openai_server as oai

WARRANTY = (
    "Every kettle has a two year warranty. To claim it, send the receipt to"
    " support@example.com with the kettle's serial number."
)


@asynccontextmanager
async def mcp_client(client, key: str, agent_id: str, mode: str = "auto"):
    """An SDK client connected to the agent's MCP endpoint of the running test server."""
    # The SDK loads here, not when the suite is collected (a second in every test process).
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    url = str(client.make_url(f"/api/v1/mcp/{agent_id}"))
    async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {key}"}) as http:
        async with Client(
            streamable_http_client(url, http_client=http), mode=mode, cache=None
        ) as session:
            yield session


@pytest.fixture
async def key(client):
    return await new_api_key(client)


async def new_agent(client, auth, **fields) -> str:
    resp = await client.post("/api/v1/agents", json={"name": "Kettles", **fields}, headers=auth)
    assert resp.status == 201, await resp.text()
    return (await resp.json())["data"]["id"]


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_an_sdk_client_lists_the_agents_tools(client, key, mode):
    agent_id = await new_agent(client, bearer(key))
    async with mcp_client(client, key, agent_id, mode) as session:
        listed = await session.list_tools()
        assert [t.name for t in listed.tools] == ["ask", "search_knowledge"]
        assert listed.tools[0].input_schema["required"] == ["question"]
        if mode == "legacy":
            assert session.server_info.title == "Kettles"


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_ask_answers_and_stores_the_conversation(client, key, mode):
    auth = bearer(key)
    agent_id = await new_agent(client, auth)
    await add_document(client, auth, agent_id, "Warranty", WARRANTY)
    async with mcp_client(client, key, agent_id, mode) as session:
        result = await session.call_tool("ask", {"question": "How long is the warranty?"})
        assert result.is_error is False
        answer = result.structured_content
        assert "two year warranty" in answer["answer"]
        assert answer["sources"][0]["title"] == "Warranty"
        assert f"conversationId: {answer['conversationId']}" in result.content[-1].text
        again = await session.call_tool(
            "ask",
            {"question": "How do I claim it?", "conversationId": answer["conversationId"]},
        )
        assert again.structured_content["conversationId"] == answer["conversationId"]
    conv = await get_conversation(client, auth, answer["conversationId"])
    assert [m["role"] for m in conv["messages"]] == ["user", "assistant", "user", "assistant"]
    assert conv["messages"][0]["content"] == "How long is the warranty?"
    assert conv["messages"][1]["content"] == answer["answer"]
    assert conv["messages"][1]["sources"][0]["title"] == "Warranty"


async def test_search_knowledge_returns_passages_with_sources(client, key):
    auth = bearer(key)
    agent_id = await new_agent(client, auth)
    await add_document(client, auth, agent_id, "Warranty", WARRANTY)
    async with mcp_client(client, key, agent_id) as session:
        result = await session.call_tool("search_knowledge", {"query": "warranty receipt"})
        passages = result.structured_content["passages"]
        assert passages[0]["title"] == "Warranty" and "receipt" in passages[0]["text"]
        assert result.content[0].text.startswith("[1] Warranty")
        assert result.content[-1].text == "Sources: Warranty"
        none = await session.call_tool("search_knowledge", {"query": "zeppelin"})
        assert none.structured_content == {"passages": []}


async def test_bad_arguments_and_unknown_tools_are_tool_errors(client, key):
    from mcp.shared.exceptions import MCPError

    agent_id = await new_agent(client, bearer(key))
    async with mcp_client(client, key, agent_id, "legacy") as session:
        for name, args, message in [
            ("ask", {"question": ""}, "question"),
            ("ask", {"question": "hi", "conversationId": "conversation_nope"}, "not found"),
            ("search_knowledge", {"query": "x", "limit": 99}, "limit"),
            ("delete_everything", {}, "Unknown tool"),
        ]:
            try:
                result = await session.call_tool(name, args)
            except MCPError as exc:  # the SDK validates some arguments against the schema
                assert message.lower() in exc.error.message.lower() or exc.error.code < 0
                continue
            assert result.is_error, (name, args)
            assert message.lower() in result.content[0].text.lower(), result.content[0].text


async def test_ask_with_a_provider_and_its_tools(make_client, openai_fake):
    client = await make_client(
        providers={"oai": {"kind": "openai", "base_url": openai_fake.base_url, "api_key": "k"}}
    )
    key = await new_api_key(client)
    auth = bearer(key)
    agent_id = await new_agent(client, auth, model="oai/gpt-4o")
    openai_fake.script(oai.stream(oai.text_events(["Hello ", "there."])))
    async with mcp_client(client, key, agent_id) as session:
        result = await session.call_tool("ask", {"question": "Hi"})
    assert result.structured_content["answer"] == "Hello there."
    # A provider failure is a tool error, and the turn is stored as failed.
    openai_fake.script(oai.server_error(400))
    async with mcp_client(client, key, agent_id) as session:
        failed = await session.call_tool("ask", {"question": "Again"})
    assert failed.is_error and failed.content[0].text.startswith("The agent could not answer")


async def test_another_teams_agent_and_bad_keys_are_refused(client, key):
    from mcp.shared.exceptions import MCPError

    agent_id = await new_agent(client, bearer(key))
    other = await new_api_key(client, "other@example.com")
    url = f"/api/v1/mcp/{agent_id}"
    message = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    resp = await client.post(url, json=message, headers=bearer(other))
    await assert_error(resp, 404, "NOT_FOUND")
    resp = await client.post(url, json=message)
    await assert_error(resp, 401, "UNAUTHORIZED")
    resp = await client.post(url, json=message, headers=bearer("asvc_nope"))
    await assert_error(resp, 401, "UNAUTHORIZED")
    resp = await client.post("/api/v1/mcp/agt_missing", json=message, headers=bearer(key))
    await assert_error(resp, 404, "NOT_FOUND")
    # An SDK client hears "Not Found" (the SDK wraps it in its task group's error).
    with pytest.raises((MCPError, ExceptionGroup)) as caught:
        async with mcp_client(client, other, agent_id) as session:
            await session.list_tools()
    assert "Not Found" in repr(caught.value)


async def test_plain_http_requests_get_json_rpc_answers(client, key):
    auth = bearer(key)
    agent_id = await new_agent(client, auth)
    url = f"/api/v1/mcp/{agent_id}"
    resp = await client.post(
        url,
        json={"jsonrpc": "2.0", "method": "nothing/here", "id": 3},
        headers={**auth, "MCP-Protocol-Version": "2025-11-25"},
    )
    body = await resp.json()
    assert body["id"] == 3 and body["error"]["code"] == -32601, body
    resp = await client.post(
        url, json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=auth
    )
    assert resp.status == 202
    for bad in [
        {"jsonrpc": "1.0", "method": "x"},
        {"jsonrpc": "2.0"},
        [1, 2],
        {"jsonrpc": "2.0", "method": "x", "extra": 1},
    ]:
        resp = await client.post(url, json=bad, headers=auth)
        await assert_error(resp, 400, "VALIDATION_ERROR")
    resp = await client.get(url, headers=auth)
    await assert_error(resp, 405, "METHOD_NOT_ALLOWED")
