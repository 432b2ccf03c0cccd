"""Helpers of the MCP tool tests: an agent on the fake OpenAI provider, an `mcp` tool's
body and its creation, and one chat turn whose model calls a tool."""

from __future__ import annotations

from tests.support.chat import chat, user
from tests.support.fakes import openai_server as oai


async def new_agent(client, auth) -> str:
    resp = await client.post(
        "/api/v1/agents", json={"name": "Shop", "model": "oai/gpt-4o"}, headers=auth
    )
    assert resp.status == 201, await resp.text()
    return (await resp.json())["data"]["id"]


def mcp_body(agent_id: str, url: str, **over) -> dict:
    return {
        "agentId": agent_id,
        "name": "shop",
        "description": "The shop's MCP server",
        "executionType": "mcp",
        "mcpUrl": url,
        **over,
    }


async def create(client, auth, body: dict, status: int = 201) -> dict:
    resp = await client.post("/api/v1/tools", json=body, headers=auth)
    assert resp.status == status, await resp.text()
    return await resp.json()


async def run_call(client, auth, fake_llm, agent_id, name, args: str) -> dict:
    """One chat turn whose model calls `name` with `args` (JSON text); its tool_result."""
    fake_llm.script(
        oai.stream(oai.tool_events([("call_1", name, [args])])),
        oai.stream(oai.text_events(["Done."])),
    )
    stream = await chat(client, {"agentId": agent_id, "messages": user("go")}, auth)
    (result,) = stream.of("tool_result")
    return result
