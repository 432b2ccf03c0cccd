"""Helpers for the tests of tool approvals: a tool that requires approval, a chat stream
read while it is open, waiting for an outcome, and the security matrix's routes."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import orjson

from agentsvc.llm.sse import SseParser
from tests.support.chat import new_agent, new_tool, user

# Short leases and sweeps, and quick keep-alives: a left visitor is noticed at once.
FAST = {
    "approvals": {"lease_seconds": 1, "sweep_seconds": 0.2},
    "chat": {"keepalive_seconds": 0.2},
}
ORDER_SCHEMA = {
    "type": "object",
    "properties": {"order": {"type": "string", "pattern": "^A[0-9]+$"}},
    "required": ["order"],
}


async def refund_tool(client, auth: dict, agent_id: str, **fields: Any) -> dict:
    """A mock tool `refund` whose calls a person approves first."""
    if fields.get("executionType", "mock") == "mock":
        fields.setdefault("mockResponse", '{"refunded": true}')
    return await new_tool(
        client, auth, agent_id, "refund", inputSchema=ORDER_SCHEMA, requiresApproval=True, **fields
    )


async def agent_with_refund(client, auth: dict, **tool_fields: Any) -> str:
    agent = await new_agent(client, auth)
    await refund_tool(client, auth, agent["id"], **tool_fields)
    return agent["id"]


class OpenStream:
    """A /chat response read event by event while it is open."""

    def __init__(self, resp):
        self.resp = resp
        self.events: list[tuple[str, dict[str, Any]]] = []
        self._parser = SseParser()

    @classmethod
    async def start(cls, client, body: dict, headers: dict | None = None) -> OpenStream:
        resp = await client.post("/api/v1/chat", json=body, headers=headers or {})
        assert resp.status == 200, await resp.text()
        return cls(resp)

    async def until(self, name: str, timeout: float = 15) -> dict[str, Any]:
        """Read until an event `name` (returned); AssertionError if the stream ends first."""
        async with asyncio.timeout(timeout):
            while True:
                for seen, data in self.events:
                    if seen == name:
                        self.events.remove((seen, data))
                        return data
                chunk = await self.resp.content.readany()
                assert chunk, f"the stream ended before {name}: {self.names}"
                self._feed(chunk)

    async def rest(self, timeout: float = 15) -> list[tuple[str, dict[str, Any]]]:
        """Every event to the end of the stream."""
        async with asyncio.timeout(timeout):
            while chunk := await self.resp.content.readany():
                self._feed(chunk)
        return self.events

    def _feed(self, chunk: bytes) -> None:
        for event in self._parser.feed(chunk):
            self.events.append((event.event, orjson.loads(event.data)))

    @property
    def names(self) -> list[str]:
        return [name for name, _ in self.events]

    def close(self) -> None:
        self.resp.close()


async def ask_refund(client, agent_id: str, order: str = "A1", **body: Any) -> OpenStream:
    """A visitor asks for a refund (the builtin model calls the tool); the stream is open."""
    text = f'/tool refund {{"order": "{order}"}}'
    return await OpenStream.start(client, {"agentId": agent_id, "messages": user(text), **body})


async def pending_of(client, auth: dict, stream: OpenStream) -> tuple[str, str]:
    """(conversation id, approval id) once the stream says a call waits."""
    start = await stream.until("message_start")
    pending = await stream.until("approval_pending")
    return start["conversationId"], pending["approvalId"]


async def decide(client, auth: dict, approval_id: str, verb: str, body: dict | None = None):
    return await client.post(
        f"/api/v1/approvals/{approval_id}/{verb}", json=body or {}, headers=auth
    )


async def data_of(resp, status: int = 200) -> Any:
    assert resp.status == status, await resp.text()
    return (await resp.json())["data"]


async def answer_of(client, auth: dict, conversation_id: str, timeout: float = 15) -> dict:
    """The conversation's assistant message, once stored."""
    deadline = time.monotonic() + timeout
    while True:
        resp = await client.get(f"/api/v1/conversations/{conversation_id}", headers=auth)
        messages = (await data_of(resp))["messages"]
        answers = [m for m in messages if m["role"] == "assistant"]
        if answers:
            return answers[-1]
        assert time.monotonic() < deadline, messages
        await asyncio.sleep(0.05)


# For tests/test_security_matrix.py: the approval routes that take an id (which resource of
# the victim team fills it, and a valid body).
SECURITY_ROUTES: dict[tuple[str, str], tuple[str, Any]] = {
    ("GET", "/api/v1/approvals/{id}"): ("approval", None),
    ("POST", "/api/v1/approvals/{id}/approve"): ("approval", {}),
    ("POST", "/api/v1/approvals/{id}/deny"): ("approval", {"reason": "stolen"}),
}


async def furnish(client, auth: dict, ids: dict[str, str]) -> None:
    """A call waiting for approval, on an agent of its own (the visitor left): its id in
    `ids`."""
    agent_id = await agent_with_refund(client, auth)
    stream = await ask_refund(client, agent_id)
    _, ids["approval"] = await pending_of(client, auth, stream)
    stream.close()

