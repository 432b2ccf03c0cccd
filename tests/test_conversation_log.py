"""One append-message unit (issue 30 item 7): every message and status change of a
conversation is written by `ConversationLog`, in one order: what the message comes with,
the message, its event, the conversation's row, the webhook event, what else the turn
records; then the announcement to live listeners."""

from __future__ import annotations

from pathlib import Path

import agentsvc
from agentsvc.api import app_keys
from agentsvc.ids import new_id, now_iso
from agentsvc.services import changes
from agentsvc.services.chat.messages import ConversationLog, StatusChange
from agentsvc.store import conversations as conv_store
from agentsvc.store.conversations import StoredMessage
from tests.support.accounts import bearer, new_api_key
from tests.support.chat import chat, new_agent, user

PACKAGE = Path(agentsvc.__file__).parent
WRITERS = ("insert_message(", "insert_message_event(", "insert_status_event(")


def test_only_the_conversation_log_writes_messages_and_conversation_events():
    """The visitor's message, the agent's answer and a member's reply (and every handoff
    change) cannot drift apart: no other module writes them."""
    found = [
        (str(path.relative_to(PACKAGE)), needle)
        for path in PACKAGE.rglob("*.py")
        if path.parts[-2] != "store" and path != PACKAGE / "services" / "chat" / "messages.py"
        for needle in WRITERS
        if needle in path.read_text("utf-8")
    ]
    assert found == []


async def counts(tx, conversation_id: str) -> tuple[int, int]:
    messages = await tx.fetchval(
        "SELECT count(*) FROM messages WHERE conversation_id = ?", (conversation_id,)
    )
    events = await tx.fetchval(
        "SELECT count(*) FROM conversation_events WHERE conversation_id = ?", (conversation_id,)
    )
    return messages, events


async def test_append_message_runs_its_parts_in_order_then_announces(client):
    auth = bearer(await new_api_key(client))
    agent = await new_agent(client, auth)
    stream = await chat(client, {"agentId": agent["id"], "messages": user("Hello")}, auth)
    db = client.app[app_keys.db_key]
    conv = await conv_store.get_public(db.reader, stream.start["conversationId"])
    assert conv is not None
    heard: list[str] = []
    db.subscribe(heard.append)
    seen: dict[str, tuple[int, int]] = {}

    async def before(tx, emission) -> None:
        seen["before"] = await counts(tx, conv.id)

    async def update(tx) -> None:
        seen["update"] = await counts(tx, conv.id)

    async def after(tx) -> None:
        seen["after"] = await counts(tx, conv.id)

    now = now_iso()
    message = StoredMessage(
        id=new_id("message"),
        conversation_id=conv.id,
        role="assistant",
        content="Appended",
        tool_calls=None,
        usage=None,
        sources=None,
        status="complete",
        model=None,
        rating=None,
        created_at=now,
    )
    log = ConversationLog(db, client.app[app_keys.emitter_key])
    await log.append_message(conv, message, before=before, update=update, after=after)

    assert seen == {"before": (2, 2), "update": (3, 3), "after": (3, 3)}
    assert heard == [changes.conversation(conv.team_id, conv.id)]
    stored = await conv_store.list_messages(db.reader, conv.id)
    assert stored[-1].content == "Appended"


async def test_a_status_change_writes_its_columns_and_event_then_announces(client):
    auth = bearer(await new_api_key(client))
    agent = await new_agent(client, auth)
    stream = await chat(client, {"agentId": agent["id"], "messages": user("Hello")}, auth)
    db = client.app[app_keys.db_key]
    conv = await conv_store.get_public(db.reader, stream.start["conversationId"])
    assert conv is not None
    heard: list[str] = []
    db.subscribe(heard.append)

    now = now_iso()
    change = StatusChange("closed", None, now, {"status": "closed"})
    await ConversationLog(db).change_status(conv, change)

    closed = await conv_store.get_public(db.reader, conv.id)
    assert closed is not None and closed.status == "closed" and closed.updated_at == now
    assert await counts(db.reader, conv.id) == (2, 3)
    assert heard == [changes.conversation(conv.team_id, conv.id)]
