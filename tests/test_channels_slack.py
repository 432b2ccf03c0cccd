"""The slack channel (issue 32) against a fake Slack Web API on 127.0.0.1: the bot's token
checked with auth.test when the channel is created; Events API requests checked by their
signature and timestamp before they are read; url_verification answered; mentions and
direct messages answered in their thread with chat.postMessage through the outbox (a
conversation per thread), the bot's own messages and Slack's retries never a second turn;
a 429's Retry-After honoured, a refusal not retried."""

from __future__ import annotations

import asyncio
import time

import orjson
import pytest

from agentsvc.api import app_keys
from agentsvc.store import channels as channel_store
from tests.support.channel_platforms import SIGNING_SECRET as SECRET
from tests.support.channel_platforms import SLACK_TOKEN as TOKEN
from tests.support.channel_platforms import app_channel, deliver, owner
from tests.support.channels import PROMPT, channel_conversations, data_of, turns_done
from tests.support.chat import new_agent
from tests.support.errors import assert_error
from tests.support.fakes.slack import BOT_USER, FakeSlack

FAST = {"retry_schedule_seconds": [0, 0.2, 0.2, 0.2], "timeout_seconds": 1}


@pytest.fixture
async def slack():
    fake = await FakeSlack(tokens={TOKEN}).start()
    yield fake
    await fake.close()


async def setup(make_client, slack):
    client = await make_client(webhooks=FAST)
    auth = await owner(client)
    agent = await new_agent(client, auth, systemPrompt=PROMPT)
    channel = await data_of(await app_channel(client, auth, slack, agent["id"]), 201)
    return client, auth, agent, channel


async def test_creating_checks_the_token_and_masks_the_credentials(make_client, slack):
    client, auth, agent, channel = await setup(make_client, slack)
    assert [c.method for c in slack.calls] == ["auth.test"]
    assert slack.calls[0].authorization == f"Bearer {TOKEN}"
    assert channel["config"] == {
        "apiBaseUrl": slack.base_url,
        "botUserId": BOT_USER,
        "botToken": "••••" + TOKEN[-4:],
        "signingSecret": "••••" + SECRET[-4:],
    }
    row = await channel_store.get_any(client.app[app_keys.db_key].reader, channel["id"])
    assert row is not None and TOKEN not in str(row) and SECRET not in str(row)
    resp = await app_channel(client, auth, slack, agent["id"], token="xoxb-unknown-123456789")
    await assert_error(resp, 400, "VALIDATION_ERROR", "config.botToken: Slack refused auth.test")
    resp = await app_channel(client, auth, slack, agent["id"], token="not-a-token")
    await assert_error(
        resp,
        400,
        "VALIDATION_ERROR",
        "config.botToken: must be a bot token as Slack gives it (xoxb-...)",
    )
    listed = await client.get(f"/api/v1/agents/{agent['id']}/channels", headers=auth)
    assert len(await data_of(listed)) == 1
    other = await owner(client, "other@example.com")
    resp = await client.get(f"/api/v1/channels/{channel['id']}", headers=other)
    await assert_error(resp, 404, "NOT_FOUND")


async def test_requests_are_checked_before_they_are_read(make_client, slack):
    client, auth, agent, channel = await setup(make_client, slack)
    path = "/api/v1/channels/" + channel["id"] + "/inbound"
    body = orjson.dumps(slack.mention("U0ADA0001", "hi"))
    stale = FakeSlack.signed(SECRET, body, timestamp=int(time.time()) - 6 * 60)
    wrong = FakeSlack.signed("x" * 32, body)
    for headers, said in (
        ({}, "X-Slack-Request-Timestamp"),
        (wrong, "X-Slack-Signature"),
        (stale, "5 minutes"),
        ({**wrong, "X-Slack-Request-Timestamp": "soon"}, "Unix time"),
    ):
        resp = await client.post(path, data=body, headers=headers)
        await assert_error(resp, 401, "UNAUTHORIZED", said)
    resp = await client.post(path, data=b"{nope", headers=wrong)
    await assert_error(resp, 401, "UNAUTHORIZED")
    resp = await client.post(path, data=b"{nope", headers=FakeSlack.signed(SECRET, b"{nope"))
    await assert_error(resp, 400, "VALIDATION_ERROR", "malformed JSON")
    # Slack's check of the Request URL.
    check = {
        "token": "x",
        "challenge": "3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P",
        "type": "url_verification",
    }
    resp = await deliver(client, channel, check)
    assert resp.status == 200 and await resp.text() == check["challenge"]
    await turns_done(client)
    assert [c.method for c in slack.calls] == ["auth.test"]


async def test_mentions_are_answered_in_their_thread_once(make_client, slack):
    client, auth, agent, channel = await setup(make_client, slack)
    mention = slack.mention("U0ADA0001", "When do you open?")
    assert await data_of(await deliver(client, channel, mention), 202) == {
        "received": True,
        "duplicate": False,
    }
    await slack.wait_for(1)
    [post] = slack.posted()
    started = mention["event"]["ts"]
    assert post["channel"] == "C0GENERAL" and post["thread_ts"] == started
    assert "nine" in post["text"].lower() and f"<@{BOT_USER}>" not in post["text"]
    assert slack.calls[-1].authorization == f"Bearer {TOKEN}"

    # Slack's retry (same event id) makes no second turn.
    resp = await deliver(client, channel, mention, retry=1)
    assert (await data_of(resp, 202))["duplicate"] is True
    # The bot's own messages, edits and channel messages without a mention are ignored.
    for ignored in (
        slack.direct(BOT_USER, "my own answer"),
        slack.direct("U0ADA0001", "I am a bot", bot_id="B0OTHER01"),
        slack.direct("U0ADA0001", "edited", subtype="message_changed"),
        slack.event(
            {
                "type": "message",
                "channel_type": "channel",
                "user": "U0ADA0001",
                "text": "chatter",
                "ts": "1.000001",
                "channel": "C0GENERAL",
            }
        ),
    ):
        resp = await deliver(client, channel, ignored)
        assert await data_of(resp, 202) == {"received": False, "duplicate": False}

    # The same thread continues the conversation; a new thread (a direct message) is another.
    follow = slack.mention("U0BOB0001", "Are returns free?", thread_ts=started)
    await deliver(client, channel, follow)
    await slack.wait_for(2)
    assert slack.posted()[1]["thread_ts"] == started
    direct = slack.direct("U0ADA0001", "How long is shipping?")
    await deliver(client, channel, direct)
    await slack.wait_for(3)
    assert slack.posted()[2] | {"text": ""} == {
        "channel": "D0DIRECT1",
        "thread_ts": direct["event"]["ts"],
        "text": "",
    }
    convs = await channel_conversations(client, auth, agent["id"], "slack")
    assert sorted(c["messageCount"] for c in convs) == [2, 4]
    threaded = next(c for c in convs if c["messageCount"] == 4)
    assert threaded["user"]["id"] == "slack:U0ADA0001"

    # A member's reply from the inbox goes to the thread.
    reply = {"content": "Olivia here: free for <30 days> & more."}
    resp = await client.post(
        f"/api/v1/conversations/{threaded['id']}/messages", json=reply, headers=auth
    )
    assert resp.status == 201, await resp.text()
    await slack.wait_for(4)
    assert slack.posted()[3] == {
        "channel": "C0GENERAL",
        "thread_ts": started,
        "text": "Olivia here: free for &lt;30 days&gt; &amp; more.",
    }
    await turns_done(client)
    await asyncio.sleep(0.3)
    assert len(slack.posted()) == 4


async def test_a_429_is_waited_out_and_a_refusal_is_not_retried(make_client, slack):
    client, auth, agent, channel = await setup(make_client, slack)
    slack.too_many, slack.retry_after = 1, 1
    await deliver(client, channel, slack.mention("U0ADA0001", "When do you open?"))
    await slack.wait_for(1, ok=False)
    refused_at = asyncio.get_running_loop().time()
    await slack.wait_for(1)
    assert asyncio.get_running_loop().time() - refused_at >= 0.9

    slack.refuse = 1
    await deliver(client, channel, slack.mention("U0ADA0001", "Are returns free?"))
    await slack.wait_for(3, ok=False)
    await turns_done(client)
    await asyncio.sleep(0.5)  # two retry intervals: no second attempt
    posts = [c for c in slack.calls if c.method == "chat.postMessage"]
    assert len(posts) == 3
    found = await channel_store.deliveries_of(client.app[app_keys.db_key].reader, channel["id"])
    [refused] = [d for d in found if d.status == "failed"]
    assert "channel_not_found" in refused.last_error


async def test_enabling_and_new_settings_check_the_token_again(make_client, slack):
    client, auth, agent, channel = await setup(make_client, slack)
    path = f"/api/v1/channels/{channel['id']}"
    await data_of(await client.patch(path, json={"enabled": False}, headers=auth))
    assert [c.method for c in slack.calls] == ["auth.test"]  # nothing to tell Slack
    # Disabled: what Slack sends is 404.
    resp = await deliver(client, channel, slack.mention("U0ADA0001", "hi"))
    await assert_error(resp, 404, "NOT_FOUND")
    await data_of(await client.patch(path, json={"enabled": True}, headers=auth))
    assert [c.method for c in slack.calls] == ["auth.test", "auth.test"]
    # New settings without the credentials keep them (and check the token again).
    changed = await data_of(
        await client.patch(path, json={"config": {"apiBaseUrl": slack.base_url}}, headers=auth)
    )
    assert changed["config"]["botToken"] == "••••" + TOKEN[-4:]
    assert changed["config"]["botUserId"] == BOT_USER and len(slack.calls) == 3
    bad = {"config": {"apiBaseUrl": "ftp://slack.example"}}
    await assert_error(
        await client.patch(path, json=bad, headers=auth),
        400,
        "VALIDATION_ERROR",
        "config.apiBaseUrl",
    )


async def test_testing_the_connection_checks_the_bot_token(make_client, slack):
    client, auth, _, channel = await setup(make_client, slack)
    test = f"/api/v1/channels/{channel['id']}/test"
    found = await data_of(await client.post(test, headers=auth))
    assert found == {
        "ok": True,
        "message": "Slack accepts the bot token in Acme: replies can go out.",
    }
    slack.tokens.clear()  # the app was uninstalled
    found = await data_of(await client.post(test, headers=auth))
    assert found["ok"] is False and "invalid_auth" in found["message"]
    assert TOKEN not in found["message"]
