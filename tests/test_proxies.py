"""Behind a load balancer: the visitor's address comes from X-Forwarded-For, but only when
the request comes from a trusted proxy (`[server] trusted_proxies`)."""

from __future__ import annotations

import pytest

from agentsvc.config import ConfigError
from tests.support.accounts import bearer, new_api_key
from tests.support.chat import chat, new_agent, user
from tests.support.errors import assert_error
from tests.support.settings import make_settings


def forwarded(address: str) -> dict[str, str]:
    return {"X-Forwarded-For": address}


async def test_each_visitor_behind_a_trusted_proxy_has_their_own_limit(make_client):
    client = await make_client(
        server={"trusted_proxies": ["127.0.0.1"]}, ratelimit={"public_chat_per_minute": 2}
    )
    agent = await new_agent(client, bearer(await new_api_key(client)))
    body = {"agentId": agent["id"], "messages": user("hi")}
    for _ in range(2):
        await chat(client, body, headers=forwarded("203.0.113.7"))
    refused = await client.post("/api/v1/chat", json=body, headers=forwarded("203.0.113.7"))
    await assert_error(refused, 429, "RATE_LIMITED")
    # Another visitor through the same proxy; the proxy appends what it saw to a client's
    # own (forged) header, and the last untrusted hop is the one that counts.
    await chat(client, body, headers=forwarded("203.0.113.8"))
    await chat(client, body, headers=forwarded("203.0.113.7, 198.51.100.1"))


async def test_the_header_is_ignored_from_anyone_else(make_client):
    client = await make_client(ratelimit={"public_chat_per_minute": 2})
    agent = await new_agent(client, bearer(await new_api_key(client)))
    body = {"agentId": agent["id"], "messages": user("hi")}
    # A visitor who invents a new address per request is still one address.
    for n in range(2):
        await chat(client, body, headers=forwarded(f"203.0.113.{n}"))
    refused = await client.post("/api/v1/chat", json=body, headers=forwarded("203.0.113.99"))
    await assert_error(refused, 429, "RATE_LIMITED")


@pytest.mark.parametrize(
    "header", ["not-an-address", ", , ,", "127.0.0.1", "1.2.3.4" + ",x" * 2000]
)
async def test_hostile_headers_leave_the_proxy_address(make_client, header):
    client = await make_client(
        server={"trusted_proxies": ["127.0.0.0/8"]}, ratelimit={"public_chat_per_minute": 1}
    )
    agent = await new_agent(client, bearer(await new_api_key(client)))
    body = {"agentId": agent["id"], "messages": user("hi")}
    await chat(client, body, headers=forwarded(header))
    # Any header that names no untrusted address counts against the proxy's own address.
    refused = await client.post("/api/v1/chat", json=body, headers=forwarded("junk"))
    await assert_error(refused, 429, "RATE_LIMITED")


def test_a_bad_proxy_entry_is_a_configuration_error(tmp_path):
    with pytest.raises(ConfigError, match="server.trusted_proxies"):
        make_settings(tmp_path, server={"trusted_proxies": ["10.0.0.0/99"]})
