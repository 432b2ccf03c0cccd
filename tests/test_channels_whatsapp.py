"""The whatsapp channel (issue 32) against a fake Graph API on 127.0.0.1: Meta's webhook
check answered with the challenge for the channel's verify token only; notifications
checked by `X-Hub-Signature-256` before they are read; text messages and button replies
answered with a text message through the outbox, statuses and other numbers' messages
ignored, the same message twice one turn; outside the 24-hour window the template or
nothing (the reply marked as not sent); a 429's Retry-After honoured, a 400 not retried."""

from __future__ import annotations

import asyncio

import orjson
import pytest

from agentsvc.api import app_keys
from agentsvc.store import channels as channel_store
from tests.support.channel_platforms import APP_SECRET, PHONE, USER, VERIFY, notify, number, owner
from tests.support.channel_platforms import WHATSAPP_TOKEN as TOKEN
from tests.support.channels import PROMPT, channel_conversations, data_of, turns_done
from tests.support.chat import new_agent
from tests.support.errors import assert_error
from tests.support.fakes.whatsapp import SIGNATURE_HEADER, FakeGraph

FAST = {"retry_schedule_seconds": [0, 0.2, 0.2, 0.2], "timeout_seconds": 1}


@pytest.fixture
async def graph():
    fake = await FakeGraph(tokens={TOKEN}).start()
    yield fake
    await fake.close()


async def setup(make_client, graph, channels: dict | None = None, **config):
    client = await make_client(webhooks=FAST, channels=channels or {})
    auth = await owner(client)
    agent = await new_agent(client, auth, systemPrompt=PROMPT)
    return client, auth, agent, await number(client, auth, graph, agent["id"], **config)


async def replies_of(client, channel: dict, status: str) -> list:
    """The channel's replies once they all have `status` (waiting up to 10 s)."""
    db = client.app[app_keys.db_key]
    for _ in range(500):
        found = await channel_store.deliveries_of(db.reader, channel["id"])
        if found and all(d.status == status for d in found):
            return found
        await asyncio.sleep(0.02)
    raise AssertionError([(d.status, d.last_error) for d in found])


async def test_the_webhook_check_answers_the_challenge_for_the_verify_token(make_client, graph):
    client, auth, agent, channel = await setup(make_client, graph)
    assert channel["config"] == {
        "phoneNumberId": PHONE,
        "graphBaseUrl": graph.base_url,
        "accessToken": "••••" + TOKEN[-4:],
        "appSecret": "••••" + APP_SECRET[-4:],
        "verifyToken": "••••" + VERIFY[-4:],
    }
    # Sealed at rest: no credential in the stored row.
    db = client.app[app_keys.db_key]
    row = await channel_store.get_any(db.reader, channel["id"])
    assert row is not None and TOKEN not in str(row) and APP_SECRET not in str(row)
    path = "/api/v1/channels/" + channel["id"] + "/inbound"
    query = {"hub.mode": "subscribe", "hub.verify_token": VERIFY, "hub.challenge": "1158201444"}
    resp = await client.get(path, params=query)
    assert resp.status == 200 and resp.content_type == "text/plain"
    assert await resp.text() == "1158201444"
    resp = await client.get(path, params={**query, "hub.verify_token": "guess"})
    await assert_error(resp, 401, "UNAUTHORIZED", "hub.verify_token")
    resp = await client.get(path, params={**query, "hub.mode": "unsubscribe"})
    await assert_error(resp, 400, "VALIDATION_ERROR", "hub.mode")
    resp = await client.get(path, params={"hub.mode": "subscribe"})
    await assert_error(resp, 400, "VALIDATION_ERROR", "hub.challenge")
    unknown = "/api/v1/channels/ch_nope/inbound"
    await assert_error(await client.get(unknown, params=query), 404, "NOT_FOUND")
    # Another team sees nothing of the channel.
    other = await owner(client, "other@example.com")
    resp = await client.get(f"/api/v1/channels/{channel['id']}", headers=other)
    await assert_error(resp, 404, "NOT_FOUND")
    resp = await client.patch(
        f"/api/v1/channels/{channel['id']}", json={"name": "x"}, headers=other
    )
    await assert_error(resp, 404, "NOT_FOUND")


async def test_notifications_without_the_apps_signature_are_refused(make_client, graph):
    client, auth, agent, channel = await setup(make_client, graph)
    path = "/api/v1/channels/" + channel["id"] + "/inbound"
    body = orjson.dumps(graph.notification(PHONE, graph.text(USER, "hi")))
    wrong = graph.signed("f" * 32, body)
    for headers in ({}, wrong, {SIGNATURE_HEADER: "sha256="}, {SIGNATURE_HEADER: "md5=abc"}):
        resp = await client.post(path, data=body, headers=headers)
        await assert_error(resp, 401, "UNAUTHORIZED", SIGNATURE_HEADER)
    # Checked before the body is read: malformed JSON is still a 401 without the signature.
    resp = await client.post(path, data=b"{nope", headers=wrong)
    await assert_error(resp, 401, "UNAUTHORIZED")
    resp = await client.post(path, data=b"{nope", headers=graph.signed(APP_SECRET, b"{nope"))
    await assert_error(resp, 400, "VALIDATION_ERROR", "malformed JSON")
    bad = orjson.dumps({"entry": []})
    resp = await client.post(path, data=bad, headers=graph.signed(APP_SECRET, bad))
    await assert_error(resp, 400, "VALIDATION_ERROR", "object")
    await turns_done(client)
    assert graph.calls == []


async def test_messages_and_button_replies_are_answered_once(make_client, graph):
    client, auth, agent, channel = await setup(make_client, graph)
    first = graph.text(USER, "When do you open?")
    resp = await notify(client, graph, channel, first)
    assert await data_of(resp, 202) == {"received": True, "duplicate": False}
    await graph.wait_for(1)
    [call] = graph.calls
    assert call.authorization == f"Bearer {TOKEN}"
    assert (call.version, call.phone_number_id) == ("v21.0", PHONE)
    assert call.body["to"] == USER and call.body["type"] == "text"
    assert call.body["messaging_product"] == "whatsapp" and "nine" in call.body["text"]["body"]

    # Meta's retry of the same message: no second turn.
    assert await data_of(await notify(client, graph, channel, first), 202) == {
        "received": True,
        "duplicate": True,
    }
    await notify(client, graph, channel, graph.button_reply(USER, "Are returns free?"))
    await graph.wait_for(2)
    assert "free" in graph.sent()[1]["text"]["body"].lower()

    # Statuses, other numbers' messages and images have nothing to answer.
    for note in (
        graph.notification(PHONE, statuses=[graph.status(USER)]),
        graph.notification("999", graph.text(USER, "to another number")),
        graph.notification(PHONE, {**graph.text(USER, "x"), "type": "image"}),
    ):
        body = orjson.dumps(note)
        path = "/api/v1/channels/" + channel["id"] + "/inbound"
        resp = await client.post(path, data=body, headers=graph.signed(APP_SECRET, body))
        assert await data_of(resp, 202) == {"received": False, "duplicate": False}

    [conv] = await channel_conversations(client, auth, agent["id"], "whatsapp")
    assert conv["user"]["id"] == f"whatsapp:{USER}" and conv["messageCount"] == 4
    # A member's reply from the inbox goes to the same number.
    reply = {"content": "Olivia here, happy to help."}
    resp = await client.post(
        f"/api/v1/conversations/{conv['id']}/messages", json=reply, headers=auth
    )
    assert resp.status == 201, await resp.text()
    await graph.wait_for(3)
    assert graph.sent()[2]["text"]["body"] == reply["content"] and graph.sent()[2]["to"] == USER
    await turns_done(client)
    await asyncio.sleep(0.3)
    assert len(graph.calls) == 3


async def test_outside_the_window_the_template_goes(make_client, graph):
    # A window of a millisecond: every reply is outside it.
    window = {"whatsapp_window_seconds": 0.001}
    client, auth, agent, channel = await setup(
        make_client, graph, window, templateName="follow_up", templateLanguage="en"
    )
    await notify(client, graph, channel, graph.text(USER, "When do you open?"))
    await graph.wait_for(1)
    assert graph.sent()[0]["type"] == "template"
    assert graph.sent()[0]["template"] == {"name": "follow_up", "language": {"code": "en"}}


async def test_outside_the_window_without_a_template_the_reply_is_marked_not_sent(
    make_client, graph
):
    window = {"whatsapp_window_seconds": 0.001}
    client, auth, agent, channel = await setup(make_client, graph, window)
    await notify(client, graph, channel, graph.text(USER, "When do you open?"))
    await turns_done(client)
    [failed] = await replies_of(client, channel, "failed")
    assert "24 hours" in failed.last_error and "templateName" in failed.last_error
    assert failed.attempts == 1 and graph.calls == []
    # The inbox shows it: a private note in the conversation.
    [conv] = await channel_conversations(client, auth, agent["id"], "whatsapp")
    found = await data_of(await client.get(f"/api/v1/conversations/{conv['id']}", headers=auth))
    [note] = found["notes"]
    assert note["content"].startswith("A reply was not sent on WhatsApp: the user last wrote")


async def test_a_429_is_waited_out_and_a_refusal_is_not_retried(make_client, graph):
    client, auth, agent, channel = await setup(make_client, graph)
    graph.too_many, graph.retry_after = 1, 1  # the schedule alone: 0.2 s
    await notify(client, graph, channel, graph.text(USER, "When do you open?"))
    await graph.wait_for(1, ok=False)
    refused_at = asyncio.get_running_loop().time()
    await graph.wait_for(1)
    assert asyncio.get_running_loop().time() - refused_at >= 0.9
    assert len(graph.calls) == 2

    graph.refuse = 1
    await notify(client, graph, channel, graph.text("16505550000", "When do you open?"))
    await graph.wait_for(3, ok=False)
    await turns_done(client)
    await asyncio.sleep(0.5)  # two retry intervals: no second attempt
    assert len(graph.calls) == 3
    found = await channel_store.deliveries_of(client.app[app_keys.db_key].reader, channel["id"])
    [refused] = [d for d in found if d.status == "failed"]
    assert refused.last_status_code == 400 and "not in allowed list" in refused.last_error
    assert TOKEN not in refused.last_error


async def test_settings_are_checked_and_credentials_kept(make_client, graph):
    client, auth, agent, channel = await setup(make_client, graph)
    path = f"/api/v1/channels/{channel['id']}"
    url = f"/api/v1/agents/{agent['id']}/channels"
    for config, field in (
        ({"phoneNumberId": "+1 650"}, "config.phoneNumberId"),
        ({"graphBaseUrl": "ftp://graph.example"}, "config.graphBaseUrl"),
        ({"apiVersion": "21"}, "config.apiVersion"),
        ({"verifyToken": "has spaces"}, "config.verifyToken"),
    ):
        body = {
            "type": "whatsapp",
            "config": {
                "phoneNumberId": PHONE,
                "accessToken": TOKEN,
                "appSecret": APP_SECRET,
                "verifyToken": VERIFY,
                **config,
            },
        }
        resp = await client.post(url, json=body, headers=auth)
        await assert_error(resp, 400, "VALIDATION_ERROR", field)
    # New settings without the credentials keep them.
    config = {"phoneNumberId": PHONE, "graphBaseUrl": graph.base_url, "templateName": "hi"}
    changed = await data_of(await client.patch(path, json={"config": config}, headers=auth))
    assert changed["config"]["appSecret"] == "••••" + APP_SECRET[-4:]
    assert changed["config"]["templateName"] == "hi"
    # A template's quick reply button is read as the user's message.
    resp = await notify(client, graph, channel, graph.template_button(USER, "When do you open?"))
    assert (await data_of(resp, 202))["received"] is True
    await graph.wait_for(1)
    assert "nine" in graph.sent()[0]["text"]["body"]


async def test_testing_the_connection_reads_the_number_with_the_token(make_client, graph):
    client, auth, _, channel = await setup(make_client, graph)
    test = f"/api/v1/channels/{channel['id']}/test"
    found = await data_of(await client.post(test, headers=auth))
    assert found["ok"] is True and "+1 555-000-1111" in found["message"]
    graph.tokens.clear()  # the token was revoked at Meta
    found = await data_of(await client.post(test, headers=auth))
    assert found["ok"] is False and "access token" in found["message"]
    assert TOKEN not in found["message"]
    await graph.close()  # Meta cannot be reached
    found = await data_of(await client.post(test, headers=auth))
    assert found == {"ok": False, "message": found["message"]}
    assert found["message"].startswith("WhatsApp could not be reached")
