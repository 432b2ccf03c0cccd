"""Live handoff events: a visitor's conversation stream, the team's inbox stream, resuming
with Last-Event-ID, business hours and e-mail capture, notifications, and several
processes on one PostgreSQL database."""

from __future__ import annotations

import asyncio
import time

import pytest
from standardwebhooks.webhooks import Webhook

from agentsvc.api import app_keys
from agentsvc.store import conversations as conv_store
from tests.support import pg
from tests.support.accounts import add_member, bearer, create_user, key_for
from tests.support.errors import assert_error
from tests.support.fakes.webhook_receiver import WebhookReceiver
from tests.support.live import (
    VISITOR_SESSION,
    handoff_agent,
    open_events,
    visitor_chat,
    visitor_conversation,
)
from tests.support.settings import make_settings

VISITOR = {"X-Session-Id": VISITOR_SESSION}
FAST = {"keepalive_seconds": 0.2}
# No interval at all: the team is never in business hours.
NEVER = {"timezone": "UTC", "intervals": []}


async def owner_of_team(client, email="owner@example.com", name="Olivia"):
    user_, team = await create_user(client, email, name=name)
    return user_, team, bearer(await key_for(client, team.id, user_.id))


async def post(client, path: str, json=None, headers=None):
    resp = await client.post(f"/api/v1{path}", json=json, headers=headers or {})
    assert resp.status in (200, 201), await resp.text()
    return (await resp.json())["data"]


def events_path(conv_id: str) -> str:
    return f"/api/v1/conversations/{conv_id}/events"


async def test_a_members_reply_reaches_the_visitors_stream_at_once(make_client):
    client = await make_client(handoff=FAST)
    owner, _, auth = await owner_of_team(client)
    agent = await handoff_agent(client, auth)
    conv_id = await visitor_conversation(client, agent["id"])
    visitor = await open_events(client, events_path(conv_id), headers=VISITOR)
    snapshot, snapshot_id = await visitor.until("status")
    assert snapshot == {
        "type": "status",
        "conversationId": conv_id,
        "status": "bot",
        "assignee": None,
    }
    assert snapshot_id is None  # the current state, not an event of the log

    await post(client, f"/conversations/{conv_id}/handoff", {}, VISITOR)
    status, status_id = await visitor.until("status")
    assert status["status"] == "waiting" and int(status_id) > 0
    await post(client, f"/conversations/{conv_id}/assign", {}, auth)
    status, _ = await visitor.until("status")
    assert status["assignee"] == {"id": owner.id, "name": "Olivia", "avatarUrl": None}

    started = time.monotonic()
    await post(
        client, f"/conversations/{conv_id}/messages", {"content": "Hello, Olivia here"}, auth
    )
    message, _ = await visitor.until("message")
    assert time.monotonic() - started < 1.0
    assert message["message"]["content"] == "Hello, Olivia here"
    assert message["message"]["author"] == {
        "type": "human",
        "id": owner.id,
        "name": "Olivia",
        "avatarUrl": None,
    }
    # The visitor's stream shows what the widget shows; tool calls and usage stay inside.
    assert set(message["message"]) == {"id", "role", "content", "author", "createdAt"}

    # The visitor's own message while a person has it appears too (a second tab sees it).
    await visitor_chat(client, agent["id"], "Great, thanks", conv_id)
    message, _ = await visitor.until("message")
    assert message["message"]["author"] == {"type": "visitor"}
    visitor.close()


async def test_last_event_id_resumes_without_loss(make_client):
    client = await make_client(handoff=FAST)
    _, _, auth = await owner_of_team(client)
    agent = await handoff_agent(client, auth)
    conv_id = await visitor_conversation(client, agent["id"])
    visitor = await open_events(client, events_path(conv_id), headers=VISITOR)
    _, snapshot_id = await visitor.until("status")
    assert snapshot_id is None
    await post(client, f"/conversations/{conv_id}/handoff", {}, VISITOR)
    waiting, seen = await visitor.until("status")
    assert waiting["status"] == "waiting"
    visitor.close()
    # While the visitor is away: three replies (the first takes it) and a release.
    for text in ("one", "two", "three"):
        await post(client, f"/conversations/{conv_id}/messages", {"content": text}, auth)
    await post(client, f"/conversations/{conv_id}/release", None, auth)
    missed = [
        ("status", "human"),
        ("message", "one"),
        ("message", "two"),
        ("message", "three"),
        ("status", "bot"),
    ]
    for resume in ({"headers": {**VISITOR, "Last-Event-ID": seen}}, {"lastEventId": seen}):
        params = {k: v for k, v in resume.items() if k != "headers"}
        again = await open_events(
            client, events_path(conv_id), headers=resume.get("headers", VISITOR), **params
        )
        got, ids = [], []
        while len(got) < len(missed):
            name, data, event_id = await again.next()
            if event_id is None:
                continue  # the snapshot
            ids.append(int(event_id))
            got.append((name, data["message"]["content"] if name == "message" else data["status"]))
        assert got == missed
        assert ids == sorted(ids) and len(set(ids)) == len(ids) and ids[0] > int(seen)
        # Then it goes on live.
        await post(client, f"/conversations/{conv_id}/handoff", {}, VISITOR)
        status, _ = await again.until("status")
        assert status["status"] == "waiting"
        await post(client, f"/conversations/{conv_id}/release", None, auth)
        again.close()


async def test_the_inbox_stream_follows_the_teams_conversations_only(make_client):
    client = await make_client(handoff=FAST)
    _, team, auth = await owner_of_team(client)
    _, _, other_auth = await owner_of_team(client, "eve@example.com", "Eve")
    agent = await handoff_agent(client, auth)
    other_agent = await handoff_agent(client, other_auth)
    inbox = await open_events(client, "/api/v1/inbox/events", headers=auth)
    other_inbox = await open_events(client, "/api/v1/inbox/events", headers=other_auth)

    conv_id = await visitor_conversation(client, agent["id"], "Can I speak to someone?")
    event, event_id = await inbox.until("conversation")
    assert event["kind"] == "message" and event["conversationId"] == conv_id
    assert event["agentId"] == agent["id"]
    assert event["message"]["author"] == {"type": "visitor"}
    assert event_id is not None
    await post(client, f"/conversations/{conv_id}/handoff", {}, VISITOR)
    event, _ = await inbox.until("conversation")
    assert event["kind"] == "status" and event["status"] == "waiting"
    # The agent's answers are not inbox events; a member's reply is no visitor message.
    await post(client, f"/conversations/{conv_id}/messages", {"content": "hi"}, auth)
    event, _ = await inbox.until("conversation")
    assert event["kind"] == "status" and event["status"] == "human"

    # The other team heard nothing of it, and hears its own.
    other_conv = await visitor_conversation(client, other_agent["id"], "Mine")
    event, _ = await other_inbox.until("conversation")
    assert event["conversationId"] == other_conv
    inbox.close()
    other_inbox.close()
    # A member of the team (not only the owner) follows the inbox too.
    member = await add_member(client, team.id, "mia@example.com")
    member_inbox = await open_events(
        client, "/api/v1/inbox/events", headers=bearer(await key_for(client, team.id, member.id))
    )
    await visitor_chat(client, agent["id"], "Still there?", conv_id)
    event, _ = await member_inbox.until("conversation")
    assert event["message"]["content"] == "Still there?"
    member_inbox.close()


async def test_many_followers_of_one_conversation_cost_one_read(make_client):
    client = await make_client(handoff=FAST)
    _, _, auth = await owner_of_team(client)
    agent = await handoff_agent(client, auth)
    conv_id = await visitor_conversation(client, agent["id"])
    readers = [await open_events(client, events_path(conv_id), headers=auth) for _ in range(20)]
    assert client.app[app_keys.live_events_key].followers() == 20
    await post(client, f"/conversations/{conv_id}/messages", {"content": "to all"}, auth)
    for reader in readers:
        message, _ = await reader.until("message")
        assert message["message"]["content"] == "to all"
        reader.close()
    for _ in range(100):
        if client.app[app_keys.live_events_key].followers() == 0:
            break
        await asyncio.sleep(0.02)
    assert client.app[app_keys.live_events_key].followers() == 0


async def test_visitor_event_streams_are_capped_per_address(make_client):
    client = await make_client(handoff={**FAST, "max_public_streams_per_ip": 2})
    _, _, auth = await owner_of_team(client)
    agent = await handoff_agent(client, auth)
    conv_id = await visitor_conversation(client, agent["id"])
    open_ = [await open_events(client, events_path(conv_id), headers=VISITOR) for _ in range(2)]
    resp = await client.get(events_path(conv_id), headers=VISITOR)
    await assert_error(resp, 429, "RATE_LIMITED", "event streams")
    assert resp.headers["Retry-After"]
    open_[0].close()
    await asyncio.sleep(0.1)
    for _ in range(50):
        resp = await client.get(events_path(conv_id), headers=VISITOR)
        if resp.status == 200:
            break
        await asyncio.sleep(0.05)
    assert resp.status == 200
    resp.close()
    open_[1].close()


async def test_a_stream_ends_after_its_time_and_at_shutdown(make_client):
    client = await make_client(handoff={**FAST, "max_stream_seconds": 0.5})
    _, _, auth = await owner_of_team(client)
    agent = await handoff_agent(client, auth)
    conv_id = await visitor_conversation(client, agent["id"])
    reader = await open_events(client, events_path(conv_id), headers=VISITOR)
    started = time.monotonic()
    with pytest.raises(EOFError):
        while True:
            await reader.next(timeout=5)
    assert time.monotonic() - started < 3
    # The closed stream's last write lands before a second app starts in this process: its
    # start-up (migrations, on the same loop) would stretch that write past the suite's
    # write-hold guard without any work inside it.
    db = client.app[app_keys.db_key]
    sql = "SELECT visitor_seen_at FROM conversations WHERE id = ?"
    for _ in range(100):
        if await db.reader.fetchval(sql, (conv_id,)) is None:
            break
        await asyncio.sleep(0.05)

    client = await make_client(handoff=FAST)
    _, _, auth = await owner_of_team(client, "second@example.com")
    reader = await open_events(client, "/api/v1/inbox/events", headers=auth)
    await client.app.shutdown()
    with pytest.raises(EOFError):
        while True:
            await reader.next(timeout=5)


async def test_outside_business_hours_the_visitor_leaves_an_address(make_client, smtp_server):
    client = await make_client(handoff=FAST, smtp=smtp_server.settings())
    _, _, auth = await owner_of_team(client)
    agent = await handoff_agent(
        client, auth, businessHours=NEVER, offlineMessage="We are away until Monday."
    )
    conv_id = await visitor_conversation(client, agent["id"], "Is my order late?")
    state = await post(client, f"/conversations/{conv_id}/handoff", {}, VISITOR)
    assert state["online"] is False
    assert state["offlineMessage"] == "We are away until Monday."
    left = await post(
        client, f"/conversations/{conv_id}/contact", {"email": "ana@example.com"}, VISITOR
    )
    assert left == {"conversationId": conv_id, "email": "ana@example.com"}

    # The visitor is gone (no stream open): the member's reply goes out by e-mail.
    await post(client, f"/conversations/{conv_id}/messages", {"content": "It ships today."}, auth)
    (mail,) = await smtp_server.wait_for(1)
    assert mail.rcpt_tos == ["ana@example.com"]
    assert "It ships today." in mail.text and "Olivia" in mail.text

    # With the visitor's stream open, the reply reaches them there and no mail is sent.
    visitor = await open_events(client, events_path(conv_id), headers=VISITOR)
    await visitor.until("status")
    await post(client, f"/conversations/{conv_id}/messages", {"content": "Tracking: 42"}, auth)
    await visitor.until("message")
    await asyncio.sleep(0.3)
    assert len(smtp_server.messages) == 1
    # Closing the page ends the stream within about a second: the visitor is gone again.
    visitor.close()
    db = client.app[app_keys.db_key]
    for _ in range(100):
        if (await conv_store.get_public(db.reader, conv_id)).visitor_seen_at is None:
            break
        await asyncio.sleep(0.05)
    assert (await conv_store.get_public(db.reader, conv_id)).visitor_seen_at is None
    await post(client, f"/conversations/{conv_id}/messages", {"content": "Anything else?"}, auth)
    mails = await smtp_server.wait_for(2)
    assert "Anything else?" in mails[1].text


async def test_the_model_handoff_outside_hours_says_so(make_client):
    client = await make_client(handoff=FAST)
    _, _, auth = await owner_of_team(client)
    agent = await handoff_agent(client, auth, businessHours=NEVER)
    stream = await visitor_chat(client, agent["id"], "/tool request_human")
    handoff = stream.of("handoff")[0]
    assert handoff["online"] is False
    assert handoff["offlineMessage"].startswith("Our team is away")


async def test_a_handoff_notifies_opted_in_members_and_the_team_chat(make_client, smtp_server):
    receiver = await WebhookReceiver().start()
    try:
        client = await make_client(handoff=FAST, smtp=smtp_server.settings())
        _, team, auth = await owner_of_team(client)
        mia = await add_member(client, team.id, "mia@example.com")
        await add_member(client, team.id, "max@example.com")  # did not opt in
        mia_auth = bearer(await key_for(client, team.id, mia.id))
        resp = await client.patch(
            "/api/v1/team/members/me", json={"notifyHandoffs": True}, headers=mia_auth
        )
        assert resp.status == 200 and (await resp.json())["notifyHandoffs"] is True
        # Each member chooses for themselves.
        resp = await client.patch(
            f"/api/v1/team/members/{mia.id}", json={"notifyHandoffs": False}, headers=auth
        )
        await assert_error(resp, 403, "FORBIDDEN", "own notifications")
        agent = await handoff_agent(
            client, auth, notify={"email": True, "teamChat": receiver.url("/ok")}
        )
        secret = agent["handoff"]["notify"]["teamChatSecret"]
        assert secret.startswith("whsec_")
        conv_id = await visitor_conversation(client, agent["id"], "Refund please")
        await post(client, f"/conversations/{conv_id}/handoff", {}, VISITOR)

        await receiver.wait_for(1, "/ok")
        (hook,) = receiver.at("/ok")
        payload = Webhook(secret).verify(hook.body, hook.headers)
        assert payload["type"] == "conversation.handoff"
        assert payload["conversationId"] == conv_id
        assert payload["url"].endswith(f"/#/inbox/{conv_id}")
        assert "Refund please" in payload["text"]
        (mail,) = await smtp_server.wait_for(1)
        assert mail.rcpt_tos == ["mia@example.com"]
        assert f"/#/inbox/{conv_id}" in mail.text
        # Asking again while waiting notifies nobody again.
        await post(client, f"/conversations/{conv_id}/handoff", {}, VISITOR)
        await asyncio.sleep(0.3)
        assert len(receiver.at("/ok")) == 1 and len(smtp_server.messages) == 1
    finally:
        await receiver.close()


async def test_a_failing_team_chat_is_tried_again(make_client):
    receiver = await WebhookReceiver(flaky_failures=1).start()
    try:
        client = await make_client(handoff={**FAST, "notify_retry_seconds": 0.05})
        _, _, auth = await owner_of_team(client)
        agent = await handoff_agent(client, auth, notify={"teamChat": receiver.url("/flaky")})
        conv_id = await visitor_conversation(client, agent["id"])
        await post(client, f"/conversations/{conv_id}/handoff", {}, VISITOR)
        await receiver.wait_for(2, "/flaky")
        first, second = receiver.at("/flaky")
        assert first.headers["webhook-id"] == second.headers["webhook-id"]
    finally:
        await receiver.close()


postgres_only = pg.postgres_only


@postgres_only
async def test_events_reach_followers_on_another_process(aiohttp_client, tmp_path):
    from agentsvc.app import create_app

    settings = make_settings(tmp_path, handoff=FAST)
    first = await aiohttp_client(create_app(settings))
    second = await aiohttp_client(create_app(settings))
    _, _, auth = await owner_of_team(first)
    agent = await handoff_agent(first, auth)
    conv_id = await visitor_conversation(first, agent["id"])
    # The visitor's widget is on one process, the inbox on the other.
    visitor = await open_events(second, events_path(conv_id), headers=VISITOR)
    inbox = await open_events(second, "/api/v1/inbox/events", headers=auth)
    await visitor.until("status")
    await post(first, f"/conversations/{conv_id}/handoff", {}, VISITOR)
    event, _ = await inbox.until("conversation")
    assert event["status"] == "waiting"
    started = time.monotonic()
    await post(first, f"/conversations/{conv_id}/messages", {"content": "from process 1"}, auth)
    message, _ = await visitor.until("message")
    assert message["message"]["content"] == "from process 1"
    assert time.monotonic() - started < 1.0
    visitor.close()
    inbox.close()
