"""A channel's status and its "test connection" (issue 32, the dashboard's Channels page):
every answer carries when the channel last received a message, last delivered a reply and
its last failed send in words; `POST /channels/:id/test` asks the platform (a fake Bot API,
a real receiver, both on 127.0.0.1) and always answers `ok` with a sentence for a person."""

from __future__ import annotations

import asyncio

import orjson
import pytest
from standardwebhooks.webhooks import Webhook

from tests.support.accounts import add_member, bearer, create_user, key_for
from tests.support.channels import PROMPT, data_of, message, new_channel, send, turns_done
from tests.support.chat import new_agent
from tests.support.errors import assert_error
from tests.support.fakes.telegram import FakeTelegram
from tests.support.fakes.webhook_receiver import WebhookReceiver, free_port

TOKEN = "123456789:AAE_" + "x" * 31
FAST = {"retry_schedule_seconds": [0, 0.2, 0.2], "timeout_seconds": 1}
EMPTY = {"lastInboundAt": None, "lastOutboundAt": None, "lastError": None}


@pytest.fixture
async def telegram():
    fake = await FakeTelegram(tokens={TOKEN}).start()
    yield fake
    await fake.close()


@pytest.fixture
async def receiver():
    rec = await WebhookReceiver().start()
    yield rec
    await rec.close()


async def owner(client):
    user_, team = await create_user(client, "owner@example.com", name="Olivia")
    return bearer(await key_for(client, team.id, user_.id)), team


async def bot(client, auth, telegram, agent_id: str) -> dict:
    body = {"type": "telegram", "config": {"botToken": TOKEN, "apiBaseUrl": telegram.base_url}}
    resp = await client.post(f"/api/v1/agents/{agent_id}/channels", json=body, headers=auth)
    return await data_of(resp, 201)


async def probe(client, auth, channel: dict) -> dict:
    resp = await client.post(f"/api/v1/channels/{channel['id']}/test", headers=auth)
    return await data_of(resp)


async def status_when(client, auth, channel: dict, ready) -> dict:
    """The channel's status once `ready(status)` holds (the outbox records a send just
    after the platform answered it)."""
    for _ in range(200):
        found = await data_of(await client.get(f"/api/v1/channels/{channel['id']}", headers=auth))
        if ready(found["status"]):
            return found["status"]
        await asyncio.sleep(0.05)
    raise AssertionError(f"the status never got there: {found['status']}")


async def test_a_telegram_channel_tests_ok_and_shows_its_last_messages(make_client, telegram):
    client = await make_client(webhooks=FAST)
    auth, _ = await owner(client)
    agent = await new_agent(client, auth, systemPrompt=PROMPT)
    channel = await bot(client, auth, telegram, agent["id"])
    assert channel["status"] == EMPTY

    found = await probe(client, auth, channel)
    assert found == {
        "ok": True,
        "message": "Connected: Telegram sends the messages of your bot @shop_helper_bot here.",
    }
    assert {c.method for c in telegram.calls} >= {"getMe", "getWebhookInfo"}

    update = telegram.text_update(42, "When do you open?")
    path = "/api/v1/channels/" + channel["id"] + "/inbound"
    resp = await client.post(path, data=orjson.dumps(update), headers=telegram.headers_for(TOKEN))
    await data_of(resp, 202)
    await telegram.wait_for("sendMessage", 1)
    status = await status_when(client, auth, channel, lambda s: s["lastOutboundAt"])
    assert status["lastInboundAt"] and status["lastError"] is None
    assert status["lastInboundAt"] <= status["lastOutboundAt"]
    [listed] = await data_of(
        await client.get(f"/api/v1/agents/{agent['id']}/channels", headers=auth)
    )
    assert listed["status"] == status


async def test_telegram_tests_say_what_is_wrong_in_words(make_client, telegram):
    client = await make_client(webhooks=FAST)
    auth, _ = await owner(client)
    agent = await new_agent(client, auth)
    channel = await bot(client, auth, telegram, agent["id"])

    telegram.webhooks[TOKEN] = ("https://elsewhere.example/hook", "s")
    found = await probe(client, auth, channel)
    assert found["ok"] is False and "sends its messages elsewhere" in found["message"]

    path = f"/api/v1/channels/{channel['id']}"
    await data_of(await client.patch(path, json={"enabled": False}, headers=auth))
    found = await probe(client, auth, channel)
    assert found["ok"] is True and "turned off" in found["message"]

    telegram.tokens.clear()  # the bot was deleted in @BotFather
    found = await probe(client, auth, channel)
    assert found == {
        "ok": False,
        "message": "Telegram does not know this bot token. Copy the token again from"
        " @BotFather and paste it under Edit.",
    }

    await telegram.close()  # Telegram cannot be reached
    found = await probe(client, auth, channel)
    assert found == {
        "ok": False,
        "message": "Telegram could not be reached: no connection could be made.",
    }


async def test_an_api_channel_test_is_a_signed_post_to_its_outbound_url(make_client, receiver):
    client = await make_client(webhooks=FAST)
    auth, _ = await owner(client)
    agent = await new_agent(client, auth)
    channel = await new_channel(client, auth, agent["id"], receiver.url("/ok"))

    found = await probe(client, auth, channel)
    assert found == {
        "ok": True,
        "message": "Your outbound URL answered 200: the agent's replies will arrive.",
    }
    [hook] = receiver.at("/ok")
    signed = Webhook(channel["secret"]).verify(hook.body, hook.headers)
    assert signed == {"type": "test", "channelId": channel["id"]}

    path = f"/api/v1/channels/{channel['id']}"
    change = {"config": {"outboundUrl": receiver.url("/fail")}}
    await data_of(await client.patch(path, json=change, headers=auth))
    found = await probe(client, auth, channel)
    assert found["ok"] is False
    assert found["message"].startswith("Your outbound URL answered 500. It must answer")

    change = {"config": {"outboundUrl": f"http://127.0.0.1:{free_port()}/down"}}
    await data_of(await client.patch(path, json=change, headers=auth))
    found = await probe(client, auth, channel)
    assert found == {
        "ok": False,
        "message": "Your outbound URL could not be reached: no connection could be made.",
    }


async def test_a_failed_reply_is_the_last_error_in_words(make_client, receiver):
    client = await make_client(webhooks=FAST)
    auth, _ = await owner(client)
    agent = await new_agent(client, auth, systemPrompt=PROMPT)
    channel = await new_channel(client, auth, agent["id"], receiver.url("/fail"))
    await data_of(await send(client, channel, channel["secret"], message("u1", "Hi", "m1")), 202)
    await turns_done(client)
    await receiver.wait_for(1, "/fail")
    status = await status_when(client, auth, channel, lambda s: s["lastError"])
    assert status["lastError"]["message"] == "HTTP 500"
    assert status["lastError"]["at"] >= status["lastInboundAt"]
    assert status["lastOutboundAt"] is None


async def test_only_owners_test_a_channel(make_client, receiver):
    client = await make_client(webhooks=FAST)
    auth, team = await owner(client)
    agent = await new_agent(client, auth)
    channel = await new_channel(client, auth, agent["id"], receiver.url("/ok"))
    member = await add_member(client, team.id, "member@example.com")
    member_auth = bearer(await key_for(client, team.id, member.id))
    path = f"/api/v1/channels/{channel['id']}/test"
    await assert_error(await client.post(path, headers=member_auth), 403, "FORBIDDEN")
    assert receiver.at("/ok") == []
    listed = await client.get(f"/api/v1/agents/{agent['id']}/channels", headers=member_auth)
    assert (await data_of(listed))[0]["status"] == EMPTY
    gone = "/api/v1/channels/ch_nothere/test"
    await assert_error(await client.post(gone, headers=auth), 404, "NOT_FOUND")
