"""Helpers for handoff tests: an agent that hands over, a visitor's chat, live event streams."""

from __future__ import annotations

import asyncio
from typing import Any

import orjson

from agentsvc.llm.sse import SseParser
from tests.support.chat import chat, new_agent, user

VISITOR_SESSION = "visitor-session-0001"


class EventReader:
    """Reads a live SSE response event by event: (name, data, id)."""

    def __init__(self, resp):
        self.resp = resp
        self._parser = SseParser()
        self._pending: list[tuple[str, Any, str | None]] = []

    async def next(self, timeout: float = 5.0) -> tuple[str, Any, str | None]:
        async with asyncio.timeout(timeout):
            while not self._pending:
                chunk = await self.resp.content.readany()
                if not chunk:
                    raise EOFError("the stream ended")
                for e in self._parser.feed(chunk):
                    self._pending.append((e.event, orjson.loads(e.data), e.id))
        return self._pending.pop(0)

    async def until(self, name: str, timeout: float = 5.0) -> tuple[Any, str | None]:
        """Skip to the next event called `name`."""
        while True:
            event, data, event_id = await self.next(timeout)
            if event == name:
                return data, event_id

    def close(self) -> None:
        self.resp.close()


async def open_events(client, path: str, headers: dict | None = None, **params) -> EventReader:
    resp = await client.get(path, headers=headers or {}, params=params)
    assert resp.status == 200, await resp.text()
    assert resp.content_type == "text/event-stream"
    return EventReader(resp)


async def handoff_agent(client, auth, **handoff) -> dict:
    """An agent (builtin model) with handoff enabled, plus any other handoff settings."""
    agent = await new_agent(client, auth)
    resp = await client.patch(
        f"/api/v1/agents/{agent['id']}",
        json={"handoff": {"enabled": True, **handoff}},
        headers=auth,
    )
    assert resp.status == 200, await resp.text()
    return (await resp.json())["data"]


async def visitor_chat(client, agent_id: str, text: str, conversation_id: str | None = None):
    """A visitor's message through the widget's public /chat (no key, a session id)."""
    body: dict[str, Any] = {"agentId": agent_id, "messages": user(text)}
    body["sessionId"] = VISITOR_SESSION
    if conversation_id:
        body["conversationId"] = conversation_id
    return await chat(client, body)


async def visitor_conversation(client, agent_id: str, text: str = "Hello there") -> str:
    stream = await visitor_chat(client, agent_id, text)
    return stream.start["conversationId"]
