"""The api channel (issue 32) end to end over HTTP: a signed message becomes a turn of the
channel's agent through the one turn function, in that user's conversation on the channel,
and the reply reaches a real receiver on 127.0.0.1 signed with the channel's secret through
the durable outbox; the same message twice makes one turn; a receiver that is down gets the
reply once it is up; conversations and exports name the channel."""

from __future__ import annotations

import asyncio
import csv
import io
from datetime import UTC, datetime, timedelta

import pytest
from standardwebhooks.webhooks import Webhook

from agentsvc.api import app_keys
from agentsvc.ids import iso
from agentsvc.services.privacy.retention import purge_expired
from agentsvc.store import channels as channels_store
from tests.support import pg
from tests.support.accounts import bearer, create_user, key_for
from tests.support.channels import (
    PROMPT,
    channel_conversations,
    data_of,
    message,
    new_channel,
    send,
    turns_done,
)
from tests.support.chat import new_agent
from tests.support.fakes.webhook_receiver import WebhookReceiver, free_port
from tests.support.settings import make_settings

FAST = {"retry_schedule_seconds": [0, 0.2, 0.2, 0.2, 0.2, 0.2], "timeout_seconds": 1}


@pytest.fixture
async def receiver():
    rec = await WebhookReceiver().start()
    yield rec
    await rec.close()


async def setup(client, receiver_url: str):
    user_, team = await create_user(client, "owner@example.com", name="Olivia")
    auth = bearer(await key_for(client, team.id, user_.id))
    agent = await new_agent(client, auth, systemPrompt=PROMPT)
    channel = await new_channel(client, auth, agent["id"], receiver_url)
    return auth, agent, channel


async def test_a_signed_message_is_answered_on_the_channel(make_client, receiver):
    client = await make_client(webhooks=FAST)
    auth, agent, channel = await setup(client, receiver.url("/ok"))
    secret = channel["secret"]
    events = {"url": receiver.url("/events"), "events": ["conversation.created"]}
    await data_of(await client.post("/api/v1/webhooks", json=events, headers=auth), 201)

    resp = await send(client, channel, secret, message("u-1", "When does the shop open?", "m-1"))
    assert await data_of(resp, 202) == {"received": True, "duplicate": False}
    await receiver.wait_for(1, "/ok")
    hook = receiver.at("/ok")[0]
    body = Webhook(secret).verify(hook.body, hook.headers)  # signed with the channel's secret
    assert body["type"] == "message" and body["userId"] == "u-1" and body["inReplyTo"] == "m-1"
    assert "nine" in body["text"].lower()
    assert body["messageId"].startswith("msg_")

    found = await channel_conversations(client, auth, agent["id"])
    assert [c["id"] for c in found] == [body["conversationId"]]
    conv = found[0]
    assert conv["channel"] == "api" and conv["channelId"] == channel["id"]
    assert conv["user"]["id"] == "api:u-1"
    assert await channel_conversations(client, auth, agent["id"], "web") == []
    await receiver.wait_for(1, "/events")  # the team's event webhooks hear of it
    created = receiver.at("/events")[0].json["data"]["conversation"]
    assert (created["channel"], created["channelId"]) == ("api", channel["id"])

    # The same user goes on in the same conversation; another user has their own.
    await send(client, channel, secret, message("u-1", "How long is shipping?", "m-2"))
    await send(client, channel, secret, message("u-2", "Are returns free?", "m-3"))
    await receiver.wait_for(3, "/ok")
    replies = {h.json["inReplyTo"]: h.json for h in receiver.at("/ok")}
    assert replies["m-2"]["conversationId"] == body["conversationId"]
    assert "three days" in replies["m-2"]["text"].lower()
    assert replies["m-3"]["conversationId"] != body["conversationId"]
    one = await data_of(
        await client.get(f"/api/v1/conversations/{body['conversationId']}", headers=auth)
    )
    assert [m["role"] for m in one["messages"]] == ["user", "assistant"] * 2
    assert one["channel"] == "api" and one["channelId"] == channel["id"]
    assert one["messages"][3]["id"] == replies["m-2"]["messageId"]

    # The end user's reference is the channel's type and the platform's user id.
    export = await data_of(await client.get("/api/v1/end-users/api:u-1/export", headers=auth))
    assert [c["id"] for c in export["conversations"]] == [body["conversationId"]]


async def test_the_same_message_twice_makes_one_turn(make_client, receiver):
    client = await make_client(webhooks=FAST)
    auth, agent, channel = await setup(client, receiver.url("/ok"))
    body = message("u-1", "When does the shop open?", "m-1")
    first, second = await asyncio.gather(
        send(client, channel, channel["secret"], body),
        send(client, channel, channel["secret"], body, message_id="wm_2"),
    )
    answers = sorted([await data_of(first, 202), await data_of(second, 202)], key=str)
    assert [a["duplicate"] for a in answers] == [False, True]
    again = await send(client, channel, channel["secret"], body, message_id="wm_3")
    assert (await data_of(again, 202))["duplicate"] is True
    await turns_done(client)
    await receiver.wait_for(1, "/ok")
    await asyncio.sleep(0.3)  # a second reply would have been sent by now
    assert len(receiver.at("/ok")) == 1
    [conv] = await channel_conversations(client, auth, agent["id"])
    assert conv["messageCount"] == 2


async def test_a_reply_waits_for_a_receiver_that_is_down(make_client):
    client = await make_client(webhooks=FAST)
    port = free_port()
    auth, agent, channel = await setup(client, f"http://127.0.0.1:{port}/ok")
    await send(client, channel, channel["secret"], message("u-1", "Are returns free?", "m-1"))
    await turns_done(client)
    db = client.app[app_keys.db_key]

    async def attempts() -> int:
        return int(await db.reader.fetchval("SELECT COUNT(*) FROM channel_delivery_attempts"))

    while await attempts() < 2:  # refused twice, retried on the schedule
        await asyncio.sleep(0.05)
    receiver = await WebhookReceiver().start(port)
    try:
        await receiver.wait_for(1, "/ok")
        await asyncio.sleep(0.5)  # no second copy follows
        assert len(receiver.at("/ok")) == 1
        assert receiver.at("/ok")[0].json["inReplyTo"] == "m-1"
        row = await db.reader.fetchone("SELECT status, last_status_code FROM channel_deliveries")
        assert tuple(row) == ("success", 200)
    finally:
        await receiver.close()


async def test_a_receiver_asking_to_wait_is_given_that_time(make_client, receiver):
    client = await make_client(webhooks=FAST)
    receiver.flaky_failures = 1  # /flaky: 503 once, then 200
    receiver.retry_after = "1"  # the schedule alone would retry after 0.2 s
    auth, agent, channel = await setup(client, receiver.url("/flaky"))
    await send(client, channel, channel["secret"], message("u-1", "Hello?", "m-1"))
    loop = asyncio.get_running_loop()
    await receiver.wait_for(1, "/flaky")
    refused_at = loop.time()
    await receiver.wait_for(2, "/flaky")
    assert loop.time() - refused_at >= 0.9
    first, second = receiver.at("/flaky")
    assert first.headers["webhook-id"] == second.headers["webhook-id"]  # one delivery


async def test_exports_carry_the_channel(make_client, receiver):
    client = await make_client(webhooks=FAST)
    auth, agent, channel = await setup(client, receiver.url("/ok"))
    await send(client, channel, channel["secret"], message("u-1", "Are returns free?", "m-1"))
    await turns_done(client)
    resp = await client.get(
        f"/api/v1/conversations/export?agentId={agent['id']}&format=csv&channel=api",
        headers=auth,
    )
    assert resp.status == 200, await resp.text()
    rows = list(csv.DictReader(io.StringIO((await resp.read()).decode())))
    assert len(rows) == 2
    assert {(r["channel"], r["channelId"]) for r in rows} == {("api", channel["id"])}
    resp = await client.get(
        f"/api/v1/conversations/export?agentId={agent['id']}&format=jsonl&channel=web",
        headers=auth,
    )
    assert resp.status == 200 and (await resp.read()).strip() == b""


async def test_a_message_received_before_a_stop_is_answered_after_the_restart(
    tmp_path, make_client, receiver
):
    settings = make_settings(tmp_path, webhooks=FAST)
    first = await make_client(settings)
    auth, agent, channel = await setup(first, receiver.url("/ok"))
    # Recorded (the platform was answered 202), and the process stopped before the turn.
    two_minutes_ago = iso(datetime.now(UTC) - timedelta(minutes=2))
    async with first.app[app_keys.db_key].write() as tx:
        lost = channels_store.Waiting(channel["id"], "m-lost", "u-1", "Are returns free?", None)
        await channels_store.receive(tx, channel["id"], lost, two_minutes_ago)
    await first.close()

    second = await make_client(settings)
    await receiver.wait_for(1, "/ok")
    reply = receiver.at("/ok")[0].json
    assert reply["inReplyTo"] == "m-lost" and "free" in reply["text"].lower()
    again = await send(second, channel, channel["secret"], message("u-1", "Hi", "m-lost"))
    assert (await data_of(again, 202))["duplicate"] is True
    assert await second.app[app_keys.channels_key].resume() == 0  # answered once
    await turns_done(second)
    [conv] = await channel_conversations(second, auth, agent["id"])
    assert conv["messageCount"] == 2


async def test_a_members_reply_from_the_inbox_goes_out_on_the_channel(make_client, receiver):
    client = await make_client(webhooks=FAST)
    auth, agent, channel = await setup(client, receiver.url("/ok"))
    secret = channel["secret"]
    await send(client, channel, secret, message("u-1", "When does the shop open?", "m-1"))
    await receiver.wait_for(1, "/ok")
    conv_id = receiver.at("/ok")[0].json["conversationId"]
    assert receiver.at("/ok")[0].json["author"] == {"type": "ai"}

    reply = {"content": "Olivia here: we open at nine, and I can hold a parcel for you."}
    resp = await client.post(f"/api/v1/conversations/{conv_id}/messages", json=reply, headers=auth)
    assert resp.status in (200, 201), await resp.text()
    await receiver.wait_for(2, "/ok")
    sent = Webhook(secret).verify(receiver.at("/ok")[1].body, receiver.at("/ok")[1].headers)
    assert sent["text"] == reply["content"] and sent["userId"] == "u-1"
    assert sent["author"] == {"type": "human", "name": "Olivia"}
    assert sent["conversationId"] == conv_id and sent["inReplyTo"] is None

    # The member has the conversation now: the user's answer is theirs, the agent is quiet.
    await send(client, channel, secret, message("u-1", "Yes please, hold it", "m-2"))
    await turns_done(client)
    one = await data_of(await client.get(f"/api/v1/conversations/{conv_id}", headers=auth))
    assert one["status"] == "human"
    assert one["messages"][-1]["content"] == "Yes please, hold it"
    await asyncio.sleep(0.3)
    assert len(receiver.at("/ok")) == 2


@pg.postgres_only
async def test_two_processes_answer_each_message_once(tmp_path, make_client, receiver):
    """Messages (and their retries) arrive at either of two processes on one database:
    each makes one turn and one reply, sent once."""
    settings = make_settings(tmp_path, webhooks={**FAST, "poll_seconds": 0.2})
    one = await make_client(settings)
    two = await make_client(settings)
    auth, agent, channel = await setup(one, receiver.url("/ok"))
    secret = channel["secret"]
    sends = []
    for n in range(6):
        body = message(f"u-{n}", "When does the shop open?", f"m-{n}")
        sends += [send(one, channel, secret, body), send(two, channel, secret, body)]
    answers = [await data_of(resp, 202) for resp in await asyncio.gather(*sends)]
    assert sorted(a["duplicate"] for a in answers) == [False] * 6 + [True] * 6
    await receiver.wait_for(6, "/ok")
    await turns_done(one)
    await turns_done(two)
    await asyncio.sleep(0.5)  # no second copy of any reply follows
    replies = [h.json["inReplyTo"] for h in receiver.at("/ok")]
    assert sorted(replies) == [f"m-{n}" for n in range(6)]
    found = await channel_conversations(one, auth, agent["id"])
    assert len(found) == 6 and all(c["messageCount"] == 2 for c in found)


@pg.postgres_only
async def test_a_running_process_answers_what_a_stopped_one_received(
    tmp_path, make_client, receiver
):
    """Several processes: a message another process recorded (answered 202) and then
    stopped before its turn is taken over by one still running, once, without a restart."""
    settings = make_settings(tmp_path, webhooks={**FAST, "poll_seconds": 0.2})
    running = await make_client(settings)
    auth, agent, channel = await setup(running, receiver.url("/ok"))
    two_minutes_ago = iso(datetime.now(UTC) - timedelta(minutes=2))
    async with running.app[app_keys.db_key].write() as tx:
        lost = channels_store.Waiting(channel["id"], "m-lost", "u-1", "Are returns free?", None)
        await channels_store.receive(tx, channel["id"], lost, two_minutes_ago)
    await receiver.wait_for(1, "/ok")
    assert receiver.at("/ok")[0].json["inReplyTo"] == "m-lost"
    await asyncio.sleep(0.6)  # three more polls: no second turn, no second reply
    await turns_done(running)
    assert len(receiver.at("/ok")) == 1
    [conv] = await channel_conversations(running, auth, agent["id"])
    assert conv["messageCount"] == 2


async def test_retention_prunes_finished_replies_and_old_message_ids(make_client, receiver):
    client = await make_client(webhooks=FAST)
    _, _, channel = await setup(client, receiver.url("/ok"))
    await send(client, channel, channel["secret"], message("u-1", "Are returns free?", "m-1"))
    await receiver.wait_for(1, "/ok")
    await turns_done(client)
    db = client.app[app_keys.db_key]

    async def rows(table: str) -> int:
        return int(await db.reader.fetchval(f"SELECT COUNT(*) FROM {table}"))  # noqa: S608

    while await rows("channel_deliveries WHERE status = 'pending'"):
        await asyncio.sleep(0.05)
    await purge_expired(db, client.app[app_keys.files_key], 30)  # nothing is old yet
    assert (await rows("channel_deliveries"), await rows("channel_inbound")) == (1, 1)
    later = datetime.now(UTC) + timedelta(days=31)
    await purge_expired(db, client.app[app_keys.files_key], 30, now=later)
    assert (await rows("channel_deliveries"), await rows("channel_inbound")) == (0, 0)
    assert await rows("channel_delivery_attempts") == 0
