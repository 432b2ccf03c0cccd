"""Handing over to a person on a channel (issue 32): an agent whose handoff is on may ask
for a person from a channel's conversation; the person on the platform is told in words (a
channel has no waiting screen), what they write meanwhile waits for the team, and a
member's reply from the inbox goes out on the channel."""

from __future__ import annotations

import asyncio

import pytest

from tests.support.accounts import bearer, create_user, key_for
from tests.support.channels import channel_conversations, message, new_channel, send
from tests.support.chat import get_conversation
from tests.support.fakes.webhook_receiver import WebhookReceiver
from tests.support.live import handoff_agent

FAST = {"retry_schedule_seconds": [0, 0.2, 0.2], "timeout_seconds": 1}


@pytest.fixture
async def receiver():
    rec = await WebhookReceiver().start()
    yield rec
    await rec.close()


async def test_the_agent_hands_a_channel_conversation_to_a_person(make_client, receiver):
    client = await make_client(webhooks=FAST)
    owner, team = await create_user(client, "owner@example.com", name="Olivia")
    auth = bearer(await key_for(client, team.id, owner.id))
    agent = await handoff_agent(client, auth)
    channel = await new_channel(client, auth, agent["id"], receiver.url("/ok"))
    secret = channel["secret"]

    await send(client, channel, secret, message("u-1", "/tool request_human", "m-1"))
    await receiver.wait_for(1, "/ok")
    said = receiver.at("/ok")[0].json
    assert said["text"] == "A person from the team will answer you here shortly."
    [conv] = await channel_conversations(client, auth, agent["id"])
    assert conv["status"] == "waiting"

    # What they write meanwhile waits for the team: no reply from the agent.
    await send(client, channel, secret, message("u-1", "Are you there?", "m-2"))
    await asyncio.sleep(0.3)
    assert len(receiver.at("/ok")) == 1
    found = await get_conversation(client, auth, conv["id"])
    assert [m["content"] for m in found["messages"] if m["role"] == "user"][-1] == (
        "Are you there?"
    )

    reply = {"content": "Olivia here: how can I help?"}
    resp = await client.post(
        f"/api/v1/conversations/{conv['id']}/messages", json=reply, headers=auth
    )
    assert resp.status == 201, await resp.text()
    await receiver.wait_for(2, "/ok")
    member = receiver.at("/ok")[1].json
    assert member["text"] == reply["content"] and member["author"]["type"] == "human"
