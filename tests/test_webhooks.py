"""Event webhooks: registering (checks, secret once, limits), every event type delivered
signed through the durable outbox, retries and the delivery log, redelivery, a receiver
that hangs, a restart mid-delivery, and the subscription cache across processes."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from standardwebhooks.webhooks import Webhook

from agentsvc.api import app_keys
from tests.support import pg
from tests.support.accounts import bearer, create_user, key_for
from tests.support.chat import chat, new_agent, user
from tests.support.errors import assert_error
from tests.support.fakes.webhook_receiver import WebhookReceiver
from tests.support.live import VISITOR_SESSION, handoff_agent, visitor_chat
from tests.support.pg import stored_bytes
from tests.support.settings import make_settings

FAST = {"retry_schedule_seconds": [0, 0.2, 0.4], "timeout_seconds": 0.5, "poll_seconds": 0.2}
ALL_EVENTS = [
    "conversation.created",
    "message.created",
    "feedback.created",
    "form.submitted",
    "conversation.handoff",
    "conversation.assigned",
    "conversation.released",
    "conversation.closed",
    "conversation.reopened",
]
VISITOR = {"X-Session-Id": VISITOR_SESSION}
postgres_only = pg.postgres_only


@pytest.fixture
async def receiver():
    rec = await WebhookReceiver(slow_seconds=2.0, flaky_failures=1).start()
    yield rec
    await rec.close()


async def owner(client, email: str = "owner@example.com"):
    user_, team = await create_user(client, email, name="Olivia")
    return team, bearer(await key_for(client, team.id, user_.id))


async def data_of(resp, status: int = 200) -> Any:
    assert resp.status == status, await resp.text()
    return (await resp.json())["data"]


async def add_webhook(client, auth, url: str, events=None, **extra) -> dict:
    body = {"url": url, "events": events or ALL_EVENTS, **extra}
    return await data_of(await client.post("/api/v1/webhooks", json=body, headers=auth), 201)


async def deliveries(client, auth, webhook_id: str, **params) -> list[dict]:
    resp = await client.get(
        f"/api/v1/webhooks/{webhook_id}/deliveries", params=params, headers=auth
    )
    return await data_of(resp)


async def settled(client, auth, webhook_id: str, count: int, timeout: float = 10) -> list[dict]:
    """The webhook's deliveries once `count` exist and none is pending any more."""
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        found = await deliveries(client, auth, webhook_id, limit=100)
        if len(found) >= count and all(d["status"] != "pending" for d in found):
            return found
        assert asyncio.get_running_loop().time() < deadline, found
        await asyncio.sleep(0.05)


def verified(secret: str, hook) -> dict:
    """The body of a received request, after its Standard Webhooks signature checked out."""
    return Webhook(secret).verify(hook.body, hook.headers)


# ── registering ─────────────────────────────────────────────────────────────────────────


async def test_create_list_get_delete_and_the_secret_is_shown_once(make_client, receiver):
    client = await make_client(webhooks=FAST)
    _, auth = await owner(client)
    created = await add_webhook(
        client, auth, receiver.url("/ok"), ["message.created"], description="CRM sync"
    )
    assert set(created) == {
        "id",
        "url",
        "events",
        "description",
        "secret",
        "createdAt",
        "updatedAt",
    }
    assert created["id"].startswith("wh_") and created["secret"].startswith("whsec_")
    assert created["events"] == ["message.created"] and created["description"] == "CRM sync"
    listed = await data_of(await client.get("/api/v1/webhooks", headers=auth))
    assert [w["id"] for w in listed] == [created["id"]]
    assert "secret" not in listed[0]
    one = await data_of(await client.get(f"/api/v1/webhooks/{created['id']}", headers=auth))
    assert one == {k: v for k, v in created.items() if k != "secret"}
    # Sealed at rest: the secret is nowhere in the database in clear.
    assert created["secret"].encode() not in await stored_bytes(client.app)
    assert created["secret"].removeprefix("whsec_").encode() not in await stored_bytes(client.app)
    deleted = await data_of(await client.delete(f"/api/v1/webhooks/{created['id']}", headers=auth))
    assert deleted == {"id": created["id"], "deleted": True}
    resp = await client.get(f"/api/v1/webhooks/{created['id']}", headers=auth)
    await assert_error(resp, 404, "NOT_FOUND")
    resp = await client.delete(f"/api/v1/webhooks/{created['id']}", headers=auth)
    await assert_error(resp, 404, "NOT_FOUND")
    assert await data_of(await client.get("/api/v1/webhooks", headers=auth)) == []


@pytest.mark.parametrize(
    ("body", "named"),
    [
        ({"url": "ftp://example.com/hook", "events": ["message.created"]}, "url"),
        ({"url": "not a url", "events": ["message.created"]}, "url"),
        ({"url": "https://", "events": ["message.created"]}, "url"),
        ({"url": "https://example.com/" + "x" * 2100, "events": ["message.created"]}, "url"),
        ({"url": "https://example.com/hook", "events": ["message.deleted"]}, "events"),
        ({"url": "https://example.com/hook", "events": []}, "events"),
        ({"url": "https://example.com/hook"}, "events"),
        ({"events": ["message.created"]}, "url"),
        ({"url": "https://example.com/hook", "events": "message.created"}, "events"),
        (
            {"url": "https://example.com/hook", "events": ["message.created"], "secret": "x"},
            "secret",
        ),
        (
            {
                "url": "https://example.com/h",
                "events": ["message.created"],
                "description": "d" * 201,
            },
            "description",
        ),
    ],
)
async def test_bad_webhooks_are_refused_naming_the_field(client, body, named):
    _, auth = await owner(client)
    resp = await client.post("/api/v1/webhooks", json=body, headers=auth)
    await assert_error(resp, 400, "VALIDATION_ERROR", named)
    assert await data_of(await client.get("/api/v1/webhooks", headers=auth)) == []


async def test_private_addresses_need_allow_private(make_client):
    client = await make_client(outbound={"allow_private": False})
    _, auth = await owner(client)
    for url in (
        "http://127.0.0.1:8080/hook",
        "http://localhost/hook",
        "http://10.1.2.3/hook",
        "http://[::1]/hook",
        "http://169.254.169.254/latest/meta-data",
        "http://app.localhost/hook",
    ):
        resp = await client.post(
            "/api/v1/webhooks", json={"url": url, "events": ["message.created"]}, headers=auth
        )
        await assert_error(resp, 400, "VALIDATION_ERROR", "allow_private")
    # A public name is accepted (it is checked again on its resolved address when sent).
    await add_webhook(client, auth, "https://hooks.example.com/in", ["message.created"])


async def test_a_private_name_is_refused_when_sending(aiohttp_client, tmp_path, receiver):
    """A name that resolves to a private address passes the save check (names are not
    resolved then) and is refused by the outbound guard at every attempt."""
    from agentsvc.app import create_app
    from tests.support.outbound import StubResolver

    app = create_app(make_settings(tmp_path, outbound={"allow_private": False}, webhooks=FAST))
    app[app_keys.outbound_resolver_key] = StubResolver("127.0.0.1")
    client = await aiohttp_client(app)
    _, auth = await owner(client)
    hook = await add_webhook(
        client, auth, f"http://internal.example:{receiver.port}/ok", ["conversation.created"]
    )
    agent = await new_agent(client, auth)
    await chat(client, {"agentId": agent["id"], "messages": user("hi")}, auth)
    [delivery] = await settled(client, auth, hook["id"], 1)
    assert delivery["status"] == "failed" and "refused" in delivery["lastError"]
    assert receiver.hooks == []


async def test_duplicates_and_the_limit_per_team(make_client, receiver):
    client = await make_client(webhooks={**FAST, "max_per_team": 2})
    _, auth = await owner(client)
    await add_webhook(client, auth, receiver.url("/ok"))
    resp = await client.post(
        "/api/v1/webhooks",
        json={"url": receiver.url("/ok"), "events": ["feedback.created"]},
        headers=auth,
    )
    await assert_error(resp, 409, "CONFLICT", "already has a webhook for this URL")
    # Repeated event types count once.
    second = await add_webhook(
        client, auth, receiver.url("/flaky"), ["feedback.created", "feedback.created"]
    )
    assert second["events"] == ["feedback.created"]
    resp = await client.post(
        "/api/v1/webhooks",
        json={"url": receiver.url("/fail"), "events": ["feedback.created"]},
        headers=auth,
    )
    await assert_error(resp, 409, "CONFLICT", "max_per_team")
    # Another team has its own count and may use the same URL.
    _, other = await owner(client, "other@example.com")
    await add_webhook(client, other, receiver.url("/ok"))


# ── events ──────────────────────────────────────────────────────────────────────────────


async def test_every_event_type_arrives_signed_with_its_documented_shape(make_client, receiver):
    client = await make_client(webhooks=FAST)
    _, auth = await owner(client)
    hook = await add_webhook(client, auth, receiver.url("/ok"))
    agent = await handoff_agent(client, auth)
    # conversation.created + message.created (visitor) + message.created (the agent)
    stream = await chat(
        client,
        {
            "agentId": agent["id"],
            "messages": user("Where is my parcel?"),
            "sessionId": VISITOR_SESSION,
            "user": {"id": "u-42", "email": "ada@example.com", "name": "Ada"},
        },
    )
    conv_id, reply_id = stream.start["conversationId"], stream.start["messageId"]
    await receiver.wait_for(3)
    resp = await client.post(
        f"/api/v1/conversations/{conv_id}/feedback",
        json={"messageId": reply_id, "rating": "up"},
        headers=VISITOR,
    )
    assert resp.status == 200
    tool = await client.post(
        "/api/v1/tools",
        json={
            "agentId": agent["id"],
            "name": "contact",
            "description": "Contact form",
            "executionType": "form",
            "formSchema": {"fields": [{"name": "email", "label": "E-mail", "type": "email"}]},
            "formExecutionMode": "client",
            "formClientHandler": "save",
        },
        headers=auth,
    )
    tool_id = (await tool.json())["id"]
    resp = await client.post(
        "/api/v1/form-submissions/submit",
        json={
            "toolId": tool_id,
            "conversationId": conv_id,
            "sessionId": VISITOR_SESSION,
            "formData": {"email": "ada@example.com"},
            "fieldsCompleted": ["email"],
        },
    )
    sub_id = (await resp.json())["submissionId"]
    base = f"/api/v1/conversations/{conv_id}"
    await data_of(await client.post(f"{base}/handoff", json={}, headers=VISITOR))
    await data_of(await client.post(f"{base}/assign", json={}, headers=auth))
    await data_of(
        await client.post(f"{base}/messages", json={"content": "Olivia here"}, headers=auth), 201
    )
    await data_of(await client.post(f"{base}/release", headers=auth))
    await data_of(await client.post(f"{base}/close", headers=auth))
    await visitor_chat(client, agent["id"], "Back again", conv_id)  # reopens it

    expected = [
        "conversation.created",
        "message.created",
        "message.created",
        "feedback.created",
        "form.submitted",
        "message.created",  # the form's note in the conversation
        "conversation.handoff",
        "conversation.assigned",
        "message.created",  # the member's reply
        "conversation.released",
        "conversation.closed",
        "conversation.reopened",
        "message.created",
        "message.created",
    ]
    await receiver.wait_for(len(expected))
    bodies = [verified(hook["secret"], h) for h in receiver.hooks]
    assert sorted(b["type"] for b in bodies) == sorted(expected)
    by_type: dict[str, list[dict]] = {}
    for hook_request, body in zip(receiver.hooks, bodies, strict=True):
        assert set(body) == {"id", "type", "timestamp", "data"}
        assert body["id"].startswith("evt_") and hook_request.headers["webhook-id"] == body["id"]
        by_type.setdefault(body["type"], []).append(body["data"])
    assert by_type["conversation.created"] == [
        {
            "conversation": {
                "id": conv_id,
                "agentId": agent["id"],
                "title": "Where is my parcel?",
                "sessionId": VISITOR_SESSION,
                "user": {
                    "id": "u-42",
                    "email": "ada@example.com",
                    "name": "Ada",
                    "verifiedBy": None,
                },
                "status": "bot",
                "channel": "web",
                "channelId": None,
                "createdAt": by_type["conversation.created"][0]["conversation"]["createdAt"],
            }
        }
    ]
    messages = {m["message"]["content"]: m for m in by_type["message.created"]}
    visitor = messages["Where is my parcel?"]
    assert visitor["conversationId"] == conv_id and visitor["agentId"] == agent["id"]
    assert visitor["message"]["role"] == "user" and visitor["message"]["author"] == {
        "type": "visitor"
    }
    member = messages["Olivia here"]["message"]
    assert member["role"] == "assistant" and member["author"]["type"] == "human"
    assert member["author"]["name"] == "Olivia"
    ai = [m for m in by_type["message.created"] if m["message"]["id"] == reply_id]
    assert ai and ai[0]["message"]["author"] == {"type": "ai"}
    [feedback] = by_type["feedback.created"]
    assert {k: feedback[k] for k in ("conversationId", "messageId", "rating")} == {
        "conversationId": conv_id,
        "messageId": reply_id,
        "rating": "up",
    }
    [form] = by_type["form.submitted"]
    assert form["submissionId"] == sub_id and form["toolName"] == "contact"
    assert form["formData"] == {"email": "ada@example.com"}
    assert form["conversationId"] == conv_id
    [assigned] = by_type["conversation.assigned"]
    assert assigned["status"] == "human" and assigned["assignee"]["name"] == "Olivia"
    assert by_type["conversation.handoff"][0]["status"] == "waiting"
    assert by_type["conversation.released"][0] == {
        "conversationId": conv_id,
        "agentId": agent["id"],
        "status": "bot",
        "assignee": None,
    }
    assert by_type["conversation.closed"][0]["status"] == "closed"
    assert by_type["conversation.reopened"][0]["status"] == "bot"
    # The log has one successful delivery per event.
    log = await settled(client, auth, hook["id"], len(expected))
    assert len(log) == len(expected)
    assert {d["status"] for d in log} == {"success"} and {d["attempts"] for d in log} == {1}
    assert {d["lastStatusCode"] for d in log} == {200}


async def test_only_subscribed_events_of_the_own_team_are_sent(make_client, receiver):
    client = await make_client(webhooks=FAST)
    _, auth = await owner(client)
    hook = await add_webhook(client, auth, receiver.url("/ok"), ["feedback.created"])
    _, other = await owner(client, "other@example.com")
    theirs = await new_agent(client, other)
    stream = await chat(client, {"agentId": theirs["id"], "messages": user("hi")}, other)
    resp = await client.post(
        f"/api/v1/conversations/{stream.start['conversationId']}/feedback",
        json={"messageId": stream.start["messageId"], "rating": "down"},
        headers=other,
    )
    assert resp.status == 200
    agent = await new_agent(client, auth)
    stream = await chat(client, {"agentId": agent["id"], "messages": user("hello")}, auth)
    resp = await client.post(
        f"/api/v1/conversations/{stream.start['conversationId']}/feedback",
        json={"messageId": stream.start["messageId"], "rating": "down"},
        headers=auth,
    )
    await receiver.wait_for(1)
    await asyncio.sleep(0.3)
    [only] = receiver.hooks
    assert verified(hook["secret"], only)["data"]["rating"] == "down"
    assert verified(hook["secret"], only)["data"]["agentId"] == agent["id"]


async def test_a_team_without_webhooks_stores_no_event(client):
    _, auth = await owner(client)
    agent = await new_agent(client, auth)
    await chat(client, {"agentId": agent["id"], "messages": user("hi")}, auth)
    db = client.app[app_keys.db_key]
    assert await db.reader.fetchval("SELECT COUNT(*) FROM webhook_events") == 0
    assert await db.reader.fetchval("SELECT COUNT(*) FROM webhook_deliveries") == 0


async def test_a_new_webhook_is_seen_at_once_and_a_deleted_one_stops(make_client, receiver):
    """The subscriptions cache: filled (empty) by the first chat, dropped on create and
    delete."""
    client = await make_client(webhooks=FAST)
    _, auth = await owner(client)
    agent = await new_agent(client, auth)
    await chat(client, {"agentId": agent["id"], "messages": user("one")}, auth)
    hook = await add_webhook(client, auth, receiver.url("/ok"), ["conversation.created"])
    await chat(client, {"agentId": agent["id"], "messages": user("two")}, auth)
    await receiver.wait_for(1)
    assert verified(hook["secret"], receiver.hooks[0])["data"]["conversation"]["title"] == "two"
    await client.delete(f"/api/v1/webhooks/{hook['id']}", headers=auth)
    await chat(client, {"agentId": agent["id"], "messages": user("three")}, auth)
    await asyncio.sleep(0.3)
    assert len(receiver.hooks) == 1


# ── delivery: retries, the log, redelivery, hangs, restarts ─────────────────────────────


async def test_a_failing_receiver_is_retried_on_schedule_and_logged(make_client, receiver):
    client = await make_client(webhooks=FAST)
    _, auth = await owner(client)
    hook = await add_webhook(client, auth, receiver.url("/fail"), ["conversation.created"])
    agent = await new_agent(client, auth)
    for text in ("first", "second"):
        await chat(client, {"agentId": agent["id"], "messages": user(text)}, auth)
    log = await settled(client, auth, hook["id"], 2)
    assert [d["status"] for d in log] == ["failed", "failed"]
    assert all(d["attempts"] == 3 and d["lastStatusCode"] == 500 for d in log)
    assert all(d["lastError"] == "HTTP 500" and d["nextAttemptAt"] is None for d in log)
    assert all(d["eventType"] == "conversation.created" for d in log)
    assert len(receiver.at("/fail")) == 6
    # Every attempt of one delivery carries the same webhook-id (its event's id).
    ids = [h.headers["webhook-id"] for h in receiver.at("/fail")]
    assert sorted(set(ids)) == sorted(d["eventId"] for d in log)
    assert all(ids.count(i) == 3 for i in set(ids))
    # One delivery in full: the body sent and every attempt.
    newest = log[0]
    detail = await data_of(
        await client.get(f"/api/v1/webhooks/{hook['id']}/deliveries/{newest['id']}", headers=auth)
    )
    assert detail["payload"]["data"]["conversation"]["title"] == "second"
    assert detail["payload"]["id"] == newest["eventId"]
    assert [a["attempt"] for a in detail["log"]] == [1, 2, 3]
    assert [a["statusCode"] for a in detail["log"]] == [500, 500, 500]
    assert detail["log"][0]["responseBody"] == "receiver broke"
    assert all(a["success"] is False and a["latencyMs"] >= 0 for a in detail["log"])
    # Pages by cursor, newest first; a status filter.
    resp = await client.get(
        f"/api/v1/webhooks/{hook['id']}/deliveries", params={"limit": 1}, headers=auth
    )
    page = await resp.json()
    assert [d["id"] for d in page["data"]] == [log[0]["id"]]
    cursor = page["pagination"]["nextCursor"]
    assert page["pagination"]["limit"] == 1 and cursor
    resp = await client.get(
        f"/api/v1/webhooks/{hook['id']}/deliveries",
        params={"limit": 1, "cursor": cursor},
        headers=auth,
    )
    page = await resp.json()
    assert [d["id"] for d in page["data"]] == [log[1]["id"]]
    assert page["pagination"]["nextCursor"] is None
    assert await deliveries(client, auth, hook["id"], status="success") == []
    resp = await client.get(
        f"/api/v1/webhooks/{hook['id']}/deliveries", params={"cursor": "nope"}, headers=auth
    )
    await assert_error(resp, 400, "VALIDATION_ERROR", "cursor")
    resp = await client.get(
        f"/api/v1/webhooks/{hook['id']}/deliveries", params={"status": "lost"}, headers=auth
    )
    await assert_error(resp, 400, "VALIDATION_ERROR", "status")


async def test_a_flaky_receiver_succeeds_on_a_retry_and_410_stops(make_client, receiver):
    client = await make_client(webhooks=FAST)
    _, auth = await owner(client)
    flaky = await add_webhook(client, auth, receiver.url("/flaky"), ["conversation.created"])
    gone = await add_webhook(client, auth, receiver.url("/gone"), ["conversation.created"])
    agent = await new_agent(client, auth)
    await chat(client, {"agentId": agent["id"], "messages": user("hi")}, auth)
    [ok] = await settled(client, auth, flaky["id"], 1)
    assert ok["status"] == "success" and ok["attempts"] == 2 and ok["lastError"] is None
    [stopped] = await settled(client, auth, gone["id"], 1)
    assert stopped["status"] == "failed" and stopped["attempts"] == 1
    assert "410" in stopped["lastError"]
    await asyncio.sleep(0.5)
    assert len(receiver.at("/gone")) == 1


async def test_redelivery_of_a_failed_and_of_a_delivered_event(make_client, receiver):
    client = await make_client(webhooks=FAST)
    _, auth = await owner(client)
    hook = await add_webhook(client, auth, receiver.url("/gone"), ["conversation.created"])
    agent = await new_agent(client, auth)
    await chat(client, {"agentId": agent["id"], "messages": user("hi")}, auth)
    [failed] = await settled(client, auth, hook["id"], 1)
    assert failed["status"] == "failed"
    path = f"/api/v1/webhooks/{hook['id']}/deliveries/{failed['id']}/redeliver"
    again = await data_of(await client.post(path, headers=auth), 202)
    assert again["id"] == failed["id"] and again["status"] == "pending"
    [done] = await settled(client, auth, hook["id"], 1)
    assert done["attempts"] == 2 and len(receiver.at("/gone")) == 2
    sent = receiver.at("/gone")
    assert sent[0].headers["webhook-id"] == sent[1].headers["webhook-id"]
    assert sent[0].body == sent[1].body  # the same event, signed again
    # A delivered event can be sent again too (a receiver that lost it).
    ok = await add_webhook(client, auth, receiver.url("/ok"), ["conversation.created"])
    await chat(client, {"agentId": agent["id"], "messages": user("hello")}, auth)
    [delivered] = await settled(client, auth, ok["id"], 1)
    assert delivered["status"] == "success"
    await data_of(
        await client.post(
            f"/api/v1/webhooks/{ok['id']}/deliveries/{delivered['id']}/redeliver", headers=auth
        ),
        202,
    )
    await receiver.wait_for(2, "/ok")
    [redone] = await settled(client, auth, ok["id"], 1)
    assert redone["status"] == "success" and redone["attempts"] == 2
    # Unknown ids, and another webhook's delivery, are 404.
    for bad in (
        f"/api/v1/webhooks/{hook['id']}/deliveries/whd_missing/redeliver",
        f"/api/v1/webhooks/{ok['id']}/deliveries/{failed['id']}/redeliver",
        f"/api/v1/webhooks/wh_missing/deliveries/{failed['id']}/redeliver",
    ):
        await assert_error(await client.post(bad, headers=auth), 404, "NOT_FOUND")


async def test_a_receiver_that_hangs_times_out_and_a_redelivery_waits_for_it(make_client, receiver):
    client = await make_client(
        webhooks={"retry_schedule_seconds": [0, 0.2], "timeout_seconds": 0.6}
    )
    _, auth = await owner(client)
    receiver.slow_seconds = 5
    hook = await add_webhook(client, auth, receiver.url("/slow"), ["conversation.created"])
    agent = await new_agent(client, auth)
    started = asyncio.get_running_loop().time()
    # The chat does not wait for the receiver.
    await chat(client, {"agentId": agent["id"], "messages": user("hi")}, auth)
    assert asyncio.get_running_loop().time() - started < 0.5
    await receiver.wait_for(1, "/slow")
    # An attempt holds the delivery: a redelivery now is refused.
    [running] = await deliveries(client, auth, hook["id"])
    resp = await client.post(
        f"/api/v1/webhooks/{hook['id']}/deliveries/{running['id']}/redeliver", headers=auth
    )
    await assert_error(resp, 409, "CONFLICT", "right now")
    [done] = await settled(client, auth, hook["id"], 1)
    assert done["status"] == "failed" and done["attempts"] == 2
    assert done["lastError"] == "timed out" and done["lastStatusCode"] is None


async def test_a_restart_in_the_middle_of_a_delivery_loses_nothing(tmp_path, make_client):
    slow = await WebhookReceiver(slow_seconds=60).start()
    settings = make_settings(
        tmp_path,
        webhooks={
            "retry_schedule_seconds": [0, 0.2, 0.2],
            "timeout_seconds": 30,
            "lease_seconds": 1,  # PostgreSQL: a stopped process's lease runs out this soon
            "poll_seconds": 0.2,
        },
    )
    try:
        first = await make_client(settings)
        _, auth = await owner(first)
        hook = await add_webhook(first, auth, slow.url("/slow"), ["conversation.created"])
        agent = await new_agent(first, auth)
        await chat(first, {"agentId": agent["id"], "messages": user("during the restart")}, auth)
        await slow.wait_for(1, "/slow")  # the attempt is under way...
        await first.close()  # ...when the server stops (the attempt is cut off)
        slow.slow_seconds = 0
        second = await make_client(settings)
        [delivered] = await settled(second, auth, hook["id"], 1, timeout=15)
        assert delivered["status"] == "success"
        sent = slow.at("/slow")
        assert len(sent) == 2 and sent[0].body == sent[1].body
        assert sent[0].headers["webhook-id"] == sent[1].headers["webhook-id"]
        assert verified(hook["secret"], sent[1])["data"]["conversation"]["title"] == (
            "during the restart"
        )
    finally:
        await slow.close()


async def test_deleting_a_webhook_drops_its_pending_deliveries(make_client, receiver):
    client = await make_client(webhooks={"retry_schedule_seconds": [0, 30], "timeout_seconds": 0.5})
    _, auth = await owner(client)
    hook = await add_webhook(client, auth, receiver.url("/fail"), ["conversation.created"])
    agent = await new_agent(client, auth)
    await chat(client, {"agentId": agent["id"], "messages": user("hi")}, auth)
    await receiver.wait_for(1, "/fail")
    await asyncio.sleep(0.1)
    [waiting] = await deliveries(client, auth, hook["id"])
    assert waiting["status"] == "pending" and waiting["nextAttemptAt"] is not None
    await client.delete(f"/api/v1/webhooks/{hook['id']}", headers=auth)
    db = client.app[app_keys.db_key]
    assert await db.reader.fetchval("SELECT COUNT(*) FROM webhook_deliveries") == 0
    assert await client.app[app_keys.deliverer_key].pending_count() == 0


async def test_the_outbox_depth_counts_event_deliveries(make_client, receiver):
    client = await make_client(webhooks={"retry_schedule_seconds": [0, 30], "timeout_seconds": 0.5})
    _, auth = await owner(client)
    await add_webhook(client, auth, receiver.url("/fail"), ["conversation.created"])
    agent = await new_agent(client, auth)
    await chat(client, {"agentId": agent["id"], "messages": user("hi")}, auth)
    await receiver.wait_for(1, "/fail")
    await asyncio.sleep(0.1)
    assert await client.app[app_keys.deliverer_key].pending_count() == 1
    resp = await client.get("/metrics")
    text = await resp.text()
    assert 'agentsvc_deliveries_total{kind="event",outcome="retry"} 1.0' in text


@postgres_only
async def test_a_webhook_created_in_one_process_gets_the_events_of_another(
    tmp_path, make_client, receiver
):
    settings = make_settings(tmp_path, webhooks=FAST)
    one = await make_client(settings)
    two = await make_client(settings)
    _, auth = await owner(one)
    agent = await new_agent(one, auth)
    # The second process caches the team's subscriptions (none) with a first chat...
    await chat(two, {"agentId": agent["id"], "messages": user("before")}, auth)
    hook = await add_webhook(one, auth, receiver.url("/ok"), ["conversation.created"])
    # ...and hears of the new webhook by NOTIFY.
    deadline = asyncio.get_running_loop().time() + 5
    while True:
        await chat(two, {"agentId": agent["id"], "messages": user("after")}, auth)
        if receiver.hooks:
            break
        assert asyncio.get_running_loop().time() < deadline
        await asyncio.sleep(0.05)
    body = verified(hook["secret"], receiver.hooks[0])
    assert body["data"]["conversation"]["title"] == "after"


# Two apps' chat writes in one worker process: beside busy workers they hold the writer
# past the write-hold guard's 100 ms.
@pytest.mark.needs_the_machine
@postgres_only
async def test_two_processes_send_each_event_once(tmp_path, make_client, receiver):
    """Both processes' workers claim due rows (SKIP LOCKED): every event arrives, none
    twice."""
    settings = make_settings(tmp_path, webhooks=FAST)
    one = await make_client(settings)
    two = await make_client(settings)
    _, auth = await owner(one)
    hook = await add_webhook(one, auth, receiver.url("/ok"), ["conversation.created"])
    agent = await new_agent(one, auth)
    # In waves of six: both workers still claim rows side by side while chats go on, and
    # this one process (two apps, their clients, the receiver, the model) is not asked to
    # run 24 chats at once - a transaction's every await then waits for the others' CPU,
    # which the write-hold guard rightly counts.
    for wave in range(0, 12, 3):
        await asyncio.gather(
            *(
                chat(app, {"agentId": agent["id"], "messages": user(f"question {n}")}, auth)
                for n in range(wave, wave + 3)
                for app in (one, two)
            )
        )
    await receiver.wait_for(24)
    await asyncio.sleep(0.5)
    ids = [h.headers["webhook-id"] for h in receiver.hooks]
    assert len(ids) == len(set(ids)) == 24
    titles = {verified(hook["secret"], h)["data"]["conversation"]["title"] for h in receiver.hooks}
    assert titles == {f"question {n}" for n in range(12)}
    log = await settled(one, auth, hook["id"], 24)
    assert {d["status"] for d in log} == {"success"} and {d["attempts"] for d in log} == {1}
