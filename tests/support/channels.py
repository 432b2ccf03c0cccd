"""Channels in tests: creating one, signing what a platform sends to the api channel, and
waiting for the turns a message starts."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import orjson

from agentsvc.api import app_keys
from agentsvc.services.delivery.signing import sign

PROMPT = "Our shop opens at nine. Shipping takes three days. Returns are free for a month."


async def data_of(resp, status: int = 200) -> Any:
    assert resp.status == status, await resp.text()
    return (await resp.json())["data"]


async def new_channel(client, auth: dict, agent_id: str, outbound_url: str, **fields) -> dict:
    """An api channel of the agent (its 201 answer, with the secret)."""
    body = {"type": "api", "config": {"outboundUrl": outbound_url}, **fields}
    resp = await client.post(f"/api/v1/agents/{agent_id}/channels", json=body, headers=auth)
    return await data_of(resp, 201)


def signed(
    secret: str, body: bytes, message_id: str = "wm_1", timestamp: int | None = None
) -> dict[str, str]:
    """The Standard Webhooks headers of a body, as a platform signs it."""
    stamp = int(time.time()) if timestamp is None else timestamp
    return {
        "Content-Type": "application/json",
        "webhook-id": message_id,
        "webhook-timestamp": str(stamp),
        "webhook-signature": sign(secret, message_id, stamp, body),
    }


def message(user_id: str, text: str, message_id: str) -> bytes:
    return orjson.dumps({"userId": user_id, "text": text, "messageId": message_id})


async def send(client, channel: dict, secret: str, body: bytes, **sign_args):
    """POST a signed body to the channel's inbound address (its path on the test server)."""
    path = "/api/v1/channels/" + channel["id"] + "/inbound"
    return await client.post(path, data=body, headers=signed(secret, body, **sign_args))


async def turns_done(client) -> None:
    """Wait until every turn the channels started has ended."""
    service = client.app[app_keys.channels_key]
    await asyncio.wait_for(service.idle(), 10)


async def channel_conversations(client, auth: dict, agent_id: str, channel: str = "api") -> list:
    resp = await client.get(
        "/api/v1/conversations", params={"agentId": agent_id, "channel": channel}, headers=auth
    )
    return await data_of(resp)


# For tests/test_security_matrix.py: the channel routes that take an id (which resource of
# the victim team fills it, and a valid body), and the one public on purpose.
SECURITY_ROUTES: dict[tuple[str, str], tuple[str, Any]] = {
    ("GET", "/api/v1/agents/{id}/channels"): ("agent", None),
    ("POST", "/api/v1/agents/{id}/channels"): (
        "agent",
        {"type": "api", "config": {"outboundUrl": "http://127.0.0.1:9/stolen"}},
    ),
    ("GET", "/api/v1/channels/{id}"): ("channel", None),
    ("PATCH", "/api/v1/channels/{id}"): ("channel", {"name": "stolen"}),
    ("DELETE", "/api/v1/channels/{id}"): ("channel", None),
    ("POST", "/api/v1/channels/{id}/test"): ("channel", None),
    ("GET", "/api/v1/conversations/{id}/attachments/{attachmentId}"): (
        ("mail_conversation", "attachment"),
        None,
    ),
}
BY_DESIGN = {
    ("POST", "/api/v1/channels/{id}/inbound"): "a platform's messages: signed, not a credential",
    ("GET", "/api/v1/channels/{id}/inbound"): "Meta's webhook check: the verify token is checked",
}


async def furnish(client, auth: dict, ids: dict[str, str]) -> None:
    """An api channel of the agent, and a conversation with an e-mail's attachment (for
    the security matrix): their ids in `ids`."""
    from tests.support.email_channel import furnish_attachment  # it builds on this module

    agent_id = ids["agent"]
    ids["channel"] = (await new_channel(client, auth, agent_id, "http://127.0.0.1:9/replies"))["id"]
    ids["mail_conversation"], ids["attachment"] = await furnish_attachment(client, auth, agent_id)
