"""Helpers for chat tests: read an SSE response into events, create agents and tools."""

from __future__ import annotations

from typing import Any

import orjson

from agentsvc.llm.sse import SseParser


class Stream:
    """A whole /chat response: its events in order, and its keep-alive comments."""

    def __init__(self, raw: bytes):
        self.raw = raw
        self.events = [(e.event, orjson.loads(e.data)) for e in SseParser().feed(raw)]
        self.comments = raw.count(b"\n: keep-alive\n") + raw.startswith(b": keep-alive\n")

    @property
    def names(self) -> list[str]:
        return [name for name, _ in self.events]

    def of(self, name: str) -> list[dict[str, Any]]:
        return [data for n, data in self.events if n == name]

    @property
    def text(self) -> str:
        return "".join(d["delta"]["text"] for d in self.of("content_block_delta"))

    @property
    def start(self) -> dict[str, Any]:
        return self.of("message_start")[0]


async def chat(client, body: dict, headers: dict | None = None, status: int = 200) -> Stream:
    resp = await client.post("/api/v1/chat", json=body, headers=headers or {})
    assert resp.status == status, await resp.text()
    assert resp.content_type == "text/event-stream"
    return Stream(await resp.read())


def user(text: str) -> list[dict[str, str]]:
    return [{"role": "user", "content": text}]


async def new_agent(client, auth: dict, **fields) -> dict:
    resp = await client.post("/api/v1/agents", json={"name": "Helper", **fields}, headers=auth)
    assert resp.status == 201, await resp.text()
    return (await resp.json())["data"]


async def new_tool(client, auth: dict, agent_id: str, name: str, **fields) -> dict:
    body = {
        "agentId": agent_id,
        "name": name,
        "description": f"The {name} tool",
        "executionType": "mock",
        "inputSchema": {"type": "object", "properties": {}},
        **({"mockResponse": "ok"} if fields.get("executionType", "mock") == "mock" else {}),
        **fields,
    }
    resp = await client.post("/api/v1/tools", json=body, headers=auth)
    assert resp.status == 201, await resp.text()
    return await resp.json()


async def get_conversation(client, auth: dict, conversation_id: str) -> dict:
    resp = await client.get(f"/api/v1/conversations/{conversation_id}", headers=auth)
    assert resp.status == 200, await resp.text()
    return (await resp.json())["data"]


async def add_document(client, auth, agent_id: str, title: str, content: str) -> dict:
    """Add a text document to an agent's knowledge; return it (indexed or indexing)."""
    resp = await client.post(
        f"/api/v1/agents/{agent_id}/documents",
        json={"title": title, "content": content},
        headers=auth,
    )
    assert resp.status == 201, await resp.text()
    return (await resp.json())["data"]
