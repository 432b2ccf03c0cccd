"""The telegram channel (issue 32) against a fake Bot API on 127.0.0.1: the webhook set
with a generated secret token when the channel is created or enabled (and removed when it
is disabled or deleted); updates checked by that token before they are read; text messages
and button presses answered with sendMessage through the outbox, a 429's retry_after
honoured; the same update twice one turn."""

from __future__ import annotations

import asyncio

import orjson
import pytest

from tests.support.channel_platforms import TELEGRAM_TOKEN as TOKEN
from tests.support.channel_platforms import bot, owner, post_update
from tests.support.channels import PROMPT, channel_conversations, data_of, turns_done
from tests.support.chat import new_agent
from tests.support.errors import assert_error
from tests.support.fakes.telegram import SECRET_HEADER, FakeTelegram

FAST = {"retry_schedule_seconds": [0, 0.2, 0.2, 0.2], "timeout_seconds": 1}


@pytest.fixture
async def telegram():
    fake = await FakeTelegram(tokens={TOKEN}).start()
    yield fake
    await fake.close()


async def test_creating_a_channel_sets_the_bots_webhook(make_client, telegram):
    client = await make_client(webhooks=FAST)
    auth = await owner(client)
    agent = await new_agent(client, auth, systemPrompt=PROMPT)
    channel = await bot(client, auth, telegram, agent["id"])
    assert channel["type"] == "telegram" and channel["secret"] is None
    [call] = [c for c in telegram.calls if c.method == "setWebhook"]
    assert call.token == TOKEN and call.params["url"] == channel["inboundUrl"]
    secret = call.params["secret_token"]
    assert len(secret) >= 32
    assert (
        channel["config"]
        == {
            "apiBaseUrl": telegram.base_url,
            "botId": TOKEN.partition(":")[0],  # the bot's public id, its token's first part
            "botToken": "••••" + TOKEN[-4:],
            "webhookSecret": "••••" + secret[-4:],
        }
    )
    assert TOKEN not in str(
        await data_of(await client.get(f"/api/v1/channels/{channel['id']}", headers=auth))
    )


async def test_a_token_telegram_refuses_stores_nothing(make_client, telegram):
    client = await make_client(webhooks=FAST)
    auth = await owner(client)
    agent = await new_agent(client, auth)
    unknown = "987654321:AAE_" + "y" * 31
    resp = await bot(client, auth, telegram, agent["id"], token=unknown, status=400)
    await assert_error(resp, 400, "VALIDATION_ERROR", "config.botToken: Telegram refused")
    resp = await bot(client, auth, telegram, agent["id"], token="not-a-token", status=400)
    await assert_error(
        resp, 400, "VALIDATION_ERROR", "config.botToken: must be a bot token as @BotFather"
    )
    listed = await client.get(f"/api/v1/agents/{agent['id']}/channels", headers=auth)
    assert await data_of(listed) == []


async def test_messages_and_button_presses_are_answered_by_send_message(make_client, telegram):
    client = await make_client(webhooks=FAST)
    auth = await owner(client)
    agent = await new_agent(client, auth, systemPrompt=PROMPT)
    channel = await bot(client, auth, telegram, agent["id"])

    resp = await post_update(
        client, telegram, channel, telegram.text_update(42, "When do you open?")
    )
    assert await data_of(resp, 202) == {"received": True, "duplicate": False}
    await telegram.wait_for("sendMessage", 1)
    [reply] = telegram.sent(TOKEN)
    assert reply["chat_id"] == "42" and "nine" in reply["text"].lower()

    press = telegram.button_update(42, "v:Are returns free?")  # a button carrying its text
    await data_of(await post_update(client, telegram, channel, press), 202)
    await telegram.wait_for("sendMessage", 2)
    assert "free" in telegram.sent(TOKEN)[1]["text"].lower()

    [conv] = await channel_conversations(client, auth, agent["id"], "telegram")
    assert conv["channelId"] == channel["id"] and conv["user"]["id"] == "telegram:42"
    assert conv["messageCount"] == 4

    # A member's reply from the inbox goes to the same chat.
    reply = {"content": "Olivia here, happy to help."}
    resp = await client.post(
        f"/api/v1/conversations/{conv['id']}/messages", json=reply, headers=auth
    )
    assert resp.status == 201, await resp.text()
    await telegram.wait_for("sendMessage", 3)
    assert telegram.sent(TOKEN)[2] == {"chat_id": "42", "text": reply["content"], "_ok": True}

    # Updates with nothing to answer are taken (Telegram would retry a refusal) and ignored.
    photo = telegram.text_update(42, "x")
    del photo["message"]["text"]
    from_bot = telegram.text_update(7, "I am a bot")
    from_bot["message"]["from"]["is_bot"] = True
    for update in (photo, from_bot, {"update_id": 5, "edited_message": {}}):
        resp = await post_update(client, telegram, channel, update)
        assert await data_of(resp, 202) == {"received": False, "duplicate": False}
    await turns_done(client)
    assert len(telegram.sent(TOKEN)) == 3


async def test_the_same_update_twice_makes_one_turn(make_client, telegram):
    client = await make_client(webhooks=FAST)
    auth = await owner(client)
    agent = await new_agent(client, auth, systemPrompt=PROMPT)
    channel = await bot(client, auth, telegram, agent["id"])
    update = telegram.text_update(42, "When do you open?")
    first = await post_update(client, telegram, channel, update)
    again = await post_update(client, telegram, channel, update)
    assert (await data_of(first, 202))["duplicate"] is False
    assert (await data_of(again, 202))["duplicate"] is True
    await turns_done(client)
    await telegram.wait_for("sendMessage", 1)
    await asyncio.sleep(0.3)
    assert len(telegram.sent(TOKEN)) == 1


async def test_updates_without_the_secret_token_are_refused(make_client, telegram):
    client = await make_client(webhooks=FAST)
    auth = await owner(client)
    agent = await new_agent(client, auth)
    channel = await bot(client, auth, telegram, agent["id"])
    path = "/api/v1/channels/" + channel["id"] + "/inbound"
    body = orjson.dumps(telegram.text_update(42, "hi"))
    for headers in ({}, {SECRET_HEADER: "guess"}, {SECRET_HEADER: ""}):
        resp = await client.post(path, data=body, headers=headers)
        await assert_error(resp, 401, "UNAUTHORIZED", SECRET_HEADER)
    # The token is checked before the body is read: malformed JSON is still a 401.
    resp = await client.post(path, data=b"{nope", headers={SECRET_HEADER: "guess"})
    await assert_error(resp, 401, "UNAUTHORIZED")
    good = telegram.headers_for(TOKEN)
    resp = await client.post(path, data=b"{nope", headers=good)
    await assert_error(resp, 400, "VALIDATION_ERROR", "malformed JSON")
    resp = await client.post(path, data=b'{"message": {}}', headers=good)
    await assert_error(resp, 400, "VALIDATION_ERROR", "update_id")


async def test_a_429_is_waited_out_then_the_reply_goes_once(make_client, telegram):
    client = await make_client(webhooks=FAST)
    auth = await owner(client)
    agent = await new_agent(client, auth, systemPrompt=PROMPT)
    channel = await bot(client, auth, telegram, agent["id"])
    telegram.too_many, telegram.retry_after = 1, 1  # the schedule alone: 0.2 s
    await post_update(client, telegram, channel, telegram.text_update(42, "When do you open?"))
    loop = asyncio.get_running_loop()
    while not [c for c in telegram.calls if c.method == "sendMessage"]:
        await asyncio.sleep(0.02)
    refused_at = loop.time()
    await telegram.wait_for("sendMessage", 1)
    assert loop.time() - refused_at >= 0.9
    await asyncio.sleep(0.3)
    assert len(telegram.sent(TOKEN)) == 1


async def test_disabling_enabling_and_deleting_move_the_webhook(make_client, telegram):
    client = await make_client(webhooks=FAST)
    auth = await owner(client)
    agent = await new_agent(client, auth)
    channel = await bot(client, auth, telegram, agent["id"])
    path = f"/api/v1/channels/{channel['id']}"

    def methods() -> list[str]:
        return [c.method for c in telegram.calls]

    await data_of(await client.patch(path, json={"enabled": False}, headers=auth))
    assert methods() == ["setWebhook", "deleteWebhook"] and TOKEN not in telegram.webhooks
    await data_of(await client.patch(path, json={"name": "Bot"}, headers=auth))
    assert methods() == ["setWebhook", "deleteWebhook"]  # nothing to tell Telegram
    await data_of(await client.patch(path, json={"enabled": True}, headers=auth))
    assert methods()[-1] == "setWebhook" and telegram.webhooks[TOKEN][0] == channel["inboundUrl"]
    # New settings without the token keep it (and tell Telegram again).
    config = {"apiBaseUrl": telegram.base_url}
    changed = await data_of(await client.patch(path, json={"config": config}, headers=auth))
    assert changed["config"]["botToken"] == "••••" + TOKEN[-4:]
    assert methods()[-1] == "setWebhook"
    await data_of(await client.delete(path, headers=auth))
    assert methods()[-1] == "deleteWebhook" and TOKEN not in telegram.webhooks


async def test_one_bot_answers_on_one_channel_only(make_client, telegram):
    # A bot sends its messages to one webhook: a second channel with the same bot (in any
    # team) would silently take them from the first, so it is refused while that is on.
    client = await make_client(webhooks=FAST)
    auth = await owner(client)
    first = await bot(client, auth, telegram, (await new_agent(client, auth))["id"])
    assert first["config"]["botId"] == TOKEN.partition(":")[0]
    other = await owner(client, "rival@example.com")
    rival_agent = (await new_agent(client, other))["id"]
    resp = await bot(client, other, telegram, rival_agent, status=409)
    await assert_error(resp, 409, "CONFLICT", "already connected to another channel")
    assert telegram.webhooks[TOKEN][0] == first["inboundUrl"]  # the first keeps its bot

    path = f"/api/v1/channels/{first['id']}"
    await data_of(await client.patch(path, json={"enabled": False}, headers=auth))
    second = await bot(client, other, telegram, rival_agent)
    assert telegram.webhooks[TOKEN][0] == second["inboundUrl"]
    resp = await client.patch(path, json={"enabled": True}, headers=auth)
    await assert_error(resp, 409, "CONFLICT", "@BotFather")
    assert telegram.webhooks[TOKEN][0] == second["inboundUrl"]  # not moved back
