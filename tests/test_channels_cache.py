"""The inbound route's channel cache and opened credentials (issue 32): a change to a
channel holds from the next message on, in this process and in every other on the same
database: a disabled, deleted or agentless channel is not found, and a message signed with
credentials that were replaced is refused."""

from __future__ import annotations

import asyncio

import pytest

from agentsvc.api import app_keys
from tests.support import pg
from tests.support.channel_platforms import APP_SECRET, PHONE, USER, notify, number, owner
from tests.support.channel_platforms import WHATSAPP_TOKEN as TOKEN
from tests.support.channels import PROMPT, data_of, message, new_channel, send, turns_done
from tests.support.chat import new_agent
from tests.support.errors import assert_error
from tests.support.fakes.whatsapp import FakeGraph
from tests.support.settings import make_settings

HOOK = "http://127.0.0.1:9/replies"
NEW_SECRET = "fedcba9876543210fedcba9876543210"


@pytest.fixture
async def graph():
    fake = await FakeGraph(tokens={TOKEN}).start()
    yield fake
    await fake.close()


async def setup(client):
    auth = await owner(client)
    agent = await new_agent(client, auth, systemPrompt=PROMPT)
    return auth, agent, await new_channel(client, auth, agent["id"], HOOK)


async def test_a_deleted_channel_or_agent_is_not_found_from_the_next_message(client):
    auth, agent, channel = await setup(client)
    secret = channel["secret"]
    await data_of(await send(client, channel, secret, message("u-1", "Hi", "m-1")), 202)
    path = f"/api/v1/channels/{channel['id']}"
    await data_of(await client.delete(path, headers=auth))
    resp = await send(client, channel, secret, message("u-1", "Hi", "m-2"))
    await assert_error(resp, 404, "NOT_FOUND")
    # A channel whose agent is deleted went with it (a cascade, no channel call).
    other = await new_channel(client, auth, agent["id"], HOOK)
    await data_of(await send(client, other, other["secret"], message("u-1", "Hi", "m-3")), 202)
    await turns_done(client)
    cache = client.app[app_keys.channels_key].cache
    assert cache.get(other["id"]) is not None
    await data_of(await client.delete(f"/api/v1/agents/{agent['id']}", headers=auth))
    assert cache.get(other["id"]) is None  # dropped, not found at the write
    resp = await send(client, other, other["secret"], message("u-1", "Hi", "m-4"))
    await assert_error(resp, 404, "NOT_FOUND")


async def test_replaced_credentials_refuse_the_old_signature_at_once(make_client, graph):
    client = await make_client()
    auth = await owner(client)
    agent = await new_agent(client, auth, systemPrompt=PROMPT)
    channel = await number(client, auth, graph, agent["id"])
    assert (await data_of(await notify(client, graph, channel, graph.text(USER, "Hi")), 202))[
        "received"
    ]
    await turns_done(client)
    path = f"/api/v1/channels/{channel['id']}"
    config = {"phoneNumberId": PHONE, "graphBaseUrl": graph.base_url, "appSecret": NEW_SECRET}
    patch = {"config": config}
    resp = await client.patch(path, json=patch, headers=auth)
    await data_of(resp)
    refused = await notify(client, graph, channel, graph.text(USER, "Again"))
    await assert_error(refused, 401, "UNAUTHORIZED", "signature")
    fresh = await notify(client, graph, channel, graph.text(USER, "Again"), secret=NEW_SECRET)
    assert (await data_of(fresh, 202))["received"]
    await turns_done(client)
    assert APP_SECRET != NEW_SECRET


async def test_a_cached_channel_costs_no_read_and_a_flood_of_unknown_ids_fills_nothing(client):
    _, _, channel = await setup(client)
    secret = channel["secret"]
    await data_of(await send(client, channel, secret, message("u-1", "Hi", "m-1")), 202)
    cache = client.app[app_keys.channels_key].cache
    assert cache.get(channel["id"]) is not None
    for n in range(20):
        unknown = {**channel, "id": f"ch_unknown{n}"}
        resp = await send(client, unknown, secret, message("u-1", "Hi", f"x-{n}"))
        await assert_error(resp, 404, "NOT_FOUND")
        assert cache.get(unknown["id"]) is None
    await turns_done(client)


@pg.postgres_only
async def test_another_process_refuses_a_channel_disabled_here(tmp_path, make_client):
    """Two processes on one database: the one that did not make the change hears of it
    (NOTIFY) before the next message."""
    settings = make_settings(tmp_path)
    one = await make_client(settings)
    two = await make_client(settings)
    auth, _, channel = await setup(one)
    secret = channel["secret"]
    await data_of(await send(two, channel, secret, message("u-1", "Hi", "m-1")), 202)
    await turns_done(two)
    path = f"/api/v1/channels/{channel['id']}"
    await data_of(await one.patch(path, json={"enabled": False}, headers=auth))
    for _ in range(100):  # NOTIFY arrives within milliseconds
        if two.app[app_keys.channels_key].cache.get(channel["id"]) is None:
            break
        await asyncio.sleep(0.02)
    resp = await send(two, channel, secret, message("u-1", "Hi", "m-2"))
    await assert_error(resp, 404, "NOT_FOUND")
