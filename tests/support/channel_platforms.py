"""The platform channels in tests: a Telegram bot, a WhatsApp number and a Slack app made
against their fake servers (tests/support/fakes/), and what each platform POSTs to the
channel's inbound address, signed as it signs it."""

from __future__ import annotations

import orjson

from tests.support.accounts import bearer, create_user, key_for
from tests.support.channels import data_of
from tests.support.fakes.slack import FakeSlack

TELEGRAM_TOKEN = "123456789:AAE_" + "x" * 31
WHATSAPP_TOKEN = "EAAGm0PX4ZCpsBA" + "k" * 40
APP_SECRET = "0123456789abcdef0123456789abcdef"
VERIFY = "my-verify-token-42"
PHONE = "106540352242922"
USER = "16505551234"
SLACK_TOKEN = "xoxb-1234567890-0987654321-" + "a" * 24
SIGNING_SECRET = "8f742231b10e8888abcd99yyyzzz85a5"


async def owner(client, email: str = "owner@example.com"):
    """A new team's owner: their bearer headers."""
    user_, team = await create_user(client, email, name="Olivia")
    return bearer(await key_for(client, team.id, user_.id))


# ── Telegram ─────────────────────────────────────────────────────────────────────────────


async def bot(
    client, auth, telegram, agent_id: str, token: str = TELEGRAM_TOKEN, status: int = 201
):
    """A telegram channel of the agent (its answer; the response itself when not 201)."""
    body = {"type": "telegram", "config": {"botToken": token, "apiBaseUrl": telegram.base_url}}
    resp = await client.post(f"/api/v1/agents/{agent_id}/channels", json=body, headers=auth)
    if status != 201:
        return resp
    return await data_of(resp, 201)


async def post_update(client, telegram, channel: dict, update: dict, token: str = TELEGRAM_TOKEN):
    """What Telegram does with an update: POST it to the webhook with the secret token."""
    url, _ = telegram.webhooks[token]
    assert url == channel["inboundUrl"]
    path = "/api/v1/channels/" + channel["id"] + "/inbound"
    return await client.post(path, data=orjson.dumps(update), headers=telegram.headers_for(token))


# ── WhatsApp ─────────────────────────────────────────────────────────────────────────────


async def number(client, auth, graph, agent_id: str, **config) -> dict:
    """A whatsapp channel of the agent (its answer)."""
    body = {
        "type": "whatsapp",
        "config": {
            "phoneNumberId": PHONE,
            "accessToken": WHATSAPP_TOKEN,
            "appSecret": APP_SECRET,
            "verifyToken": VERIFY,
            "graphBaseUrl": graph.base_url,
            **config,
        },
    }
    resp = await client.post(f"/api/v1/agents/{agent_id}/channels", json=body, headers=auth)
    return await data_of(resp, 201)


async def notify(client, graph, channel: dict, *messages: dict, secret: str = APP_SECRET):
    """What Meta does: POST a notification signed with the app's secret."""
    body = orjson.dumps(graph.notification(PHONE, *messages))
    path = "/api/v1/channels/" + channel["id"] + "/inbound"
    return await client.post(path, data=body, headers=graph.signed(secret, body))


# ── Slack ────────────────────────────────────────────────────────────────────────────────


async def app_channel(client, auth, slack, agent_id: str, token: str = SLACK_TOKEN):
    """Create a slack channel of the agent (the response)."""
    config = {"botToken": token, "signingSecret": SIGNING_SECRET, "apiBaseUrl": slack.base_url}
    body = {"type": "slack", "config": config}
    return await client.post(f"/api/v1/agents/{agent_id}/channels", json=body, headers=auth)


async def deliver(client, channel: dict, payload: dict, **sign):
    """What Slack does: POST the request signed with the app's signing secret."""
    body = orjson.dumps(payload)
    path = "/api/v1/channels/" + channel["id"] + "/inbound"
    return await client.post(
        path, data=body, headers=FakeSlack.signed(SIGNING_SECRET, body, **sign)
    )
