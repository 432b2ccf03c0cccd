"""One turn, whatever the door (issue 29 item 7): the same question asked through `POST
/chat` and through an agent's MCP `ask` is answered from the same curated answer, stored
alike and announced to event webhooks alike, because both doors run `ChatTurns`."""

from __future__ import annotations

from contextlib import asynccontextmanager
from typing import Any

import httpx2
import pytest

from tests.support.accounts import bearer, new_api_key
from tests.support.chat import chat, get_conversation, user
from tests.support.fakes.webhook_receiver import WebhookReceiver

FAST = {"retry_schedule_seconds": [0, 0.2, 0.4], "timeout_seconds": 0.5, "poll_seconds": 0.2}
QUESTION = "How long is the kettle warranty?"
CURATED = "Two years from the date on the receipt; send it to support@example.com."
# Values that differ from one conversation to the next by nature, not by door.
VARYING = {"id", "conversationId", "messageId", "createdAt", "updatedAt", "timestamp"}


@pytest.fixture
async def receiver():
    rec = await WebhookReceiver().start()
    yield rec
    await rec.close()


@asynccontextmanager
async def mcp_session(client, key: str, agent_id: str):
    """An SDK client connected to the agent's MCP endpoint of the running test server."""
    from mcp import Client  # loaded here, not when the suite is collected
    from mcp.client.streamable_http import streamable_http_client

    url = str(client.make_url(f"/api/v1/mcp/{agent_id}"))
    async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {key}"}) as http:
        async with Client(streamable_http_client(url, http_client=http), cache=None) as session:
            yield session


def shape(value: Any) -> Any:
    """A payload with the values that name or date one conversation blanked out."""
    if isinstance(value, dict):
        return {k: "<varies>" if k in VARYING else shape(v) for k, v in value.items()}
    if isinstance(value, list):
        return [shape(v) for v in value]
    return value


def stored(conversation: dict) -> list[tuple]:
    return [(m["role"], m["content"], m["sources"]) for m in conversation["messages"]]


async def test_one_turn_whatever_the_door_chat_and_mcp_ask_store_and_emit_alike(
    make_client, receiver
):
    client = await make_client(webhooks=FAST)
    key = await new_api_key(client)
    auth = bearer(key)
    resp = await client.post(
        "/api/v1/agents",
        json={"name": "Kettles", "systemPrompt": "We sell kettles. We ship within two days."},
        headers=auth,
    )
    agent_id = (await resp.json())["data"]["id"]
    resp = await client.post(
        f"/api/v1/agents/{agent_id}/answers",
        json={"question": QUESTION, "answer": CURATED},
        headers=auth,
    )
    assert resp.status == 201, await resp.text()
    resp = await client.post(
        "/api/v1/webhooks",
        json={"url": receiver.url("/ok"), "events": ["conversation.created", "message.created"]},
        headers=auth,
    )
    assert resp.status == 201, await resp.text()

    # Door 1: the chat stream.
    stream = await chat(client, {"agentId": agent_id, "messages": user(QUESTION)}, auth)
    by_chat = stream.start["conversationId"]
    assert stream.text == CURATED
    await receiver.wait_for(3)
    # Door 2: an MCP client asking the agent.
    async with mcp_session(client, key, agent_id) as session:
        result = await session.call_tool("ask", {"question": QUESTION})
    assert result.is_error is False
    answer = result.structured_content
    by_mcp = answer["conversationId"]
    assert answer["answer"] == CURATED
    assert answer["sources"] == stream.of("message_stop")[0]["sources"]
    await receiver.wait_for(6)

    chat_conv = await get_conversation(client, auth, by_chat)
    mcp_conv = await get_conversation(client, auth, by_mcp)
    assert stored(chat_conv) == stored(mcp_conv)
    assert stored(mcp_conv)[1][:2] == ("assistant", CURATED)
    assert stored(mcp_conv)[1][2][0]["title"] == QUESTION  # the curated answer is the source

    events: dict[str, list[tuple[str, Any]]] = {by_chat: [], by_mcp: []}
    for hook in receiver.hooks:
        body = hook.json
        data = body["data"]
        conv_id = data.get("conversationId") or data["conversation"]["id"]
        events[conv_id].append((body["type"], shape(data)))
    # Deliveries may arrive in any order: compare what each door made, not the order.
    events = {conv: sorted(made, key=repr) for conv, made in events.items()}
    assert [t for t, _ in events[by_chat]] == [
        "conversation.created",
        "message.created",
        "message.created",
    ]
    assert events[by_mcp] == events[by_chat]
    assert len(receiver.hooks) == 6  # nothing else was announced


def test_one_turn_whatever_the_door_no_door_builds_a_turn_of_its_own():
    """Only services/chat starts or runs a turn: a door (api/, the MCP server, channels)
    goes through ChatTurns, so what a turn does cannot drift between doors."""
    from pathlib import Path

    import agentsvc

    root = Path(agentsvc.__file__).parent
    own = {root / "services" / "chat" / name for name in ("start.py", "turn.py", "turns.py")}
    found = [
        (str(path.relative_to(root)), needle)
        for path in root.rglob("*.py")
        if path not in own
        for needle in ("prepare_turn(", "TurnRunner(")
        if needle in path.read_text("utf-8")
    ]
    assert found == []
