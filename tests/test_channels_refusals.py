"""What the api channel refuses (issue 32), each in the error envelope, and nothing of it
stored: an unknown or disabled channel (404), a body over 1 MB (413), a missing, wrong or
stale signature (401, before the JSON is read), a malformed message (400), and floods per
channel and per platform user (429 with Retry-After)."""

from __future__ import annotations

import time

import orjson

from agentsvc.api import app_keys
from tests.support.accounts import bearer, create_user, key_for
from tests.support.channels import PROMPT, data_of, message, new_channel, send, signed, turns_done
from tests.support.chat import new_agent
from tests.support.errors import assert_error

HOOK = "http://127.0.0.1:9/replies"


async def setup(client, email: str = "owner@example.com"):
    user_, team = await create_user(client, email, name="Olivia")
    auth = bearer(await key_for(client, team.id, user_.id))
    agent = await new_agent(client, auth, systemPrompt=PROMPT)
    return auth, agent, await new_channel(client, auth, agent["id"], HOOK)


async def stored_messages(client) -> int:
    db = client.app[app_keys.db_key]
    return int(await db.reader.fetchval("SELECT COUNT(*) FROM messages"))


async def test_unknown_and_disabled_channels_are_not_found(client):
    auth, _, channel = await setup(client)
    body = message("u-1", "Hello", "m-1")
    unknown = {**channel, "id": "ch_" + "x" * 20}
    await assert_error(await send(client, unknown, channel["secret"], body), 404, "NOT_FOUND")
    path = f"/api/v1/channels/{channel['id']}"
    await data_of(await client.patch(path, json={"enabled": False}, headers=auth))
    await assert_error(await send(client, channel, channel["secret"], body), 404, "NOT_FOUND")
    # Not found comes first: a disabled channel's oversized body is a 404 too.
    big = b"x" * (1024 * 1024 + 1)
    await assert_error(await send(client, channel, channel["secret"], big), 404, "NOT_FOUND")
    await data_of(await client.patch(path, json={"enabled": True}, headers=auth))
    assert (await data_of(await send(client, channel, channel["secret"], body), 202))["received"]
    await turns_done(client)


async def test_a_body_over_a_megabyte_is_refused(client):
    _, _, channel = await setup(client)
    text = "a" * (1024 * 1024)
    body = orjson.dumps({"userId": "u-1", "text": text, "messageId": "m-1"})
    resp = await send(client, channel, channel["secret"], body)
    await assert_error(resp, 413, "PAYLOAD_TOO_LARGE", "1 MB")
    assert await stored_messages(client) == 0


async def test_wrong_missing_or_stale_signatures_are_refused_before_the_body_is_read(client):
    _, _, channel = await setup(client)
    _, _, other = await setup(client, "other@example.com")
    body = message("u-1", "Hello", "m-1")
    path = f"/api/v1/channels/{channel['id']}/inbound"

    async def refused(headers: dict, data: bytes = body, words: str | None = None) -> None:
        resp = await client.post(path, data=data, headers=headers)
        await assert_error(resp, 401, "UNAUTHORIZED", words)

    await refused({"Content-Type": "application/json"}, words="webhook-signature")
    await refused(signed(other["secret"], body), words="does not match")  # another channel's
    tampered = signed(channel["secret"], body)
    await refused(tampered, body.replace(b"Hello", b"Hellp"), "does not match")
    stale = int(time.time()) - 301
    await refused(signed(channel["secret"], body, timestamp=stale), words="5 minutes")
    future = int(time.time()) + 301
    await refused(signed(channel["secret"], body, timestamp=future), words="5 minutes")
    bad_stamp = {**signed(channel["secret"], body), "webhook-timestamp": "soon"}
    await refused(bad_stamp, words="webhook-timestamp")
    # Malformed JSON with a wrong signature is a 401: the body is not parsed before.
    await refused(signed(other["secret"], b"{not json"), b"{not json")
    assert await stored_messages(client) == 0


async def test_malformed_messages_are_refused_with_the_field(client):
    _, _, channel = await setup(client)
    secret = channel["secret"]

    async def refused(data: bytes, words: str) -> None:
        resp = await send(client, channel, secret, data)
        await assert_error(resp, 400, "VALIDATION_ERROR", words)

    await refused(b"{not json", "malformed JSON")
    await refused(b"[]", "body")
    await refused(orjson.dumps({"userId": "u-1", "messageId": "m-1"}), "text")
    await refused(orjson.dumps({"userId": "u-1", "text": "  ", "messageId": "m-1"}), "text")
    await refused(orjson.dumps({"userId": 5, "text": "Hi", "messageId": "m-1"}), "userId")
    await refused(orjson.dumps({"text": "Hi", "messageId": "m-1"}), "userId")
    await refused(orjson.dumps({"userId": "u", "text": "Hi", "messageId": "m", "x": 1}), "x")
    deep = b"[" * 100_000 + b"]" * 100_000  # signed, under 1 MB, nested past any parser
    await refused(deep, "malformed JSON")
    huge_id = {"userId": "u-1", "text": "Hi", "messageId": "m" * 100_000}
    await refused(orjson.dumps(huge_id), "messageId")
    assert await stored_messages(client) == 0


async def test_a_flood_is_limited_per_user_and_per_channel(make_client):
    limits = {"channel_user_messages_per_minute": 2, "channel_messages_per_minute": 4}
    client = await make_client(ratelimit=limits)
    _, _, channel = await setup(client)
    secret = channel["secret"]
    for n in range(2):
        await data_of(await send(client, channel, secret, message("u-1", "Hi", f"a{n}")), 202)
    resp = await send(client, channel, secret, message("u-1", "Hi", "a2"))
    await assert_error(resp, 429, "RATE_LIMITED", "this user")
    assert int(resp.headers["Retry-After"]) >= 1
    # Another user of the channel is not held back by the first one's flood...
    await data_of(await send(client, channel, secret, message("u-2", "Hi", "b0")), 202)
    # ...until the channel as a whole has had its share.
    resp = await send(client, channel, secret, message("u-3", "Hi", "c0"))
    await assert_error(resp, 429, "RATE_LIMITED", "this channel")
    assert int(resp.headers["Retry-After"]) >= 1
    await turns_done(client)
    assert await stored_messages(client) == 3 * 2  # three messages taken, each answered


async def test_nothing_sent_to_a_channel_reaches_another_team(client):
    auth, agent, channel = await setup(client)
    other_auth, other_agent, _ = await setup(client, "other@example.com")
    await data_of(await send(client, channel, channel["secret"], message("u", "Hi", "m")), 202)
    await turns_done(client)
    params = {"agentId": agent["id"], "channel": "api"}
    mine = await data_of(await client.get("/api/v1/conversations", params=params, headers=auth))
    assert len(mine) == 1
    for agent_id in (agent["id"], other_agent["id"]):
        resp = await client.get(
            "/api/v1/conversations", params={"agentId": agent_id}, headers=other_auth
        )
        if agent_id == agent["id"]:
            await assert_error(resp, 404, "NOT_FOUND")
        else:
            assert await data_of(resp) == []
