"""The guarded outbound client: address checks at connect time, timeouts, caps, redirects."""

from __future__ import annotations

import ipaddress
import socket

import pytest

from agentsvc.api import app_keys
from agentsvc.app import create_app
from agentsvc.outbound import OutboundClient, OutboundError, forbidden_reason, literal_address
from agentsvc.services.team import accounts
from agentsvc.store import tools as tools_store
from tests.support.accounts import bearer, new_api_key
from tests.support.fakes.http_receiver import HttpReceiver
from tests.support.outbound import FORBIDDEN, StubResolver
from tests.support.saved_tools import save_tool_as_if_private_allowed
from tests.support.settings import make_settings

PUBLIC = ["8.8.8.8", "93.184.216.34", "2606:4700:4700::1111", "::ffff:8.8.8.8"]


@pytest.fixture
async def receiver(aiohttp_server):
    fake = HttpReceiver()
    server = await aiohttp_server(fake.app, host="127.0.0.1")
    fake.port = server.port  # type: ignore[attr-defined]
    return fake


async def open_client(**kwargs) -> OutboundClient:
    client = OutboundClient(**kwargs)
    await client.open()
    return client


@pytest.mark.parametrize("address", FORBIDDEN)
def test_forbidden_addresses(address):
    assert forbidden_reason(ipaddress.ip_address(address)) is not None


@pytest.mark.parametrize("address", PUBLIC)
def test_public_addresses(address):
    assert forbidden_reason(ipaddress.ip_address(address)) is None


@pytest.mark.parametrize(
    ("host", "expected"),
    [
        ("2130706433", "127.0.0.1"),
        ("0x7f000001", "127.0.0.1"),
        ("017700000001", "127.0.0.1"),
        ("127.1", "127.0.0.1"),
        ("0177.0.0.1", "127.0.0.1"),
        ("[::1]", "::1"),
        ("example.com", None),
        ("1.example", None),
    ],
)
def test_numeric_aliases_are_recognised(host, expected):
    addr = literal_address(host)
    assert (str(addr) if addr else None) == expected


async def test_positive_control_stub_reaches_receiver_when_private_allowed(receiver):
    stub = StubResolver("127.0.0.1")
    client = await open_client(allow_private=True, resolver=stub)
    try:
        resp = await client.request("GET", f"http://internal.example:{receiver.port}/ok")
    finally:
        await client.close()
    assert resp.status == 200 and stub.lookups == ["internal.example"]
    assert [r.path for r in receiver.requests] == ["/ok"]


@pytest.mark.parametrize("address", [a for a in FORBIDDEN if "." in a and ":" not in a][:12])
async def test_names_resolving_to_forbidden_ipv4_never_connect(receiver, address):
    # Every address here would be refused; 127.x would really reach the receiver otherwise.
    stub = StubResolver(address)
    client = await open_client(allow_private=False, resolver=stub, connect_timeout=1)
    try:
        with pytest.raises(OutboundError) as caught:
            await client.request("GET", f"http://internal.example:{receiver.port}/x")
    finally:
        await client.close()
    assert caught.value.kind == "refused" and address in caught.value.message
    assert stub.lookups == ["internal.example"]  # checked at connect time, by the connector
    assert receiver.requests == []


@pytest.mark.parametrize("address", [a for a in FORBIDDEN if ":" in a])
async def test_names_resolving_to_forbidden_ipv6_never_connect(receiver, address):
    stub = StubResolver(address)
    client = await open_client(allow_private=False, resolver=stub, connect_timeout=1)
    try:
        with pytest.raises(OutboundError) as caught:
            await client.request("POST", f"http://v6.example:{receiver.port}/x", json={})
    finally:
        await client.close()
    assert caught.value.kind == "refused"
    assert receiver.requests == []


async def test_one_forbidden_address_among_public_ones_refuses_the_host(receiver):
    stub = StubResolver("8.8.8.8", "127.0.0.1")
    client = await open_client(allow_private=False, resolver=stub)
    try:
        with pytest.raises(OutboundError, match="127.0.0.1"):
            await client.request("GET", f"http://mixed.example:{receiver.port}/")
    finally:
        await client.close()
    assert receiver.requests == []


async def test_every_connection_is_checked_again(receiver):
    # A name that answers loopback is refused on every request, not once then trusted.
    stub = StubResolver("127.0.0.1")
    client = await open_client(allow_private=False, resolver=stub)
    try:
        for _ in range(2):
            with pytest.raises(OutboundError):
                await client.request("GET", f"http://rebind.example:{receiver.port}/")
    finally:
        await client.close()
    assert receiver.requests == []


@pytest.mark.parametrize(
    "host",
    [
        "127.0.0.1",
        "[::1]",
        "[::ffff:127.0.0.1]",
        "[::ffff:7f00:1]",
        "2130706433",
        "0x7f000001",
        "017700000001",
        "127.1",
        "0.0.0.0",
        "169.254.169.254",
        "[fd00:ec2::254]",
        "100.64.0.1",
    ],
)
async def test_ip_literal_hosts_are_refused(receiver, host):
    stub = StubResolver("127.0.0.1")
    client = await open_client(allow_private=False, resolver=stub)
    try:
        with pytest.raises(OutboundError) as caught:
            await client.request("GET", f"http://{host}:{receiver.port}/")
    finally:
        await client.close()
    assert caught.value.kind in ("refused", "invalid")
    assert receiver.requests == []


@pytest.mark.parametrize(
    "url",
    ["ftp://example.com/", "file:///etc/passwd", "gopher://x/", "http:///nohost", "//x/y"],
)
async def test_only_http_and_https(url):
    client = await open_client(allow_private=True)
    try:
        with pytest.raises(OutboundError) as caught:
            await client.request("GET", url)
    finally:
        await client.close()
    assert caught.value.kind == "invalid"


async def test_header_values_with_line_breaks_are_refused(receiver):
    client = await open_client(allow_private=True)
    url = f"http://127.0.0.1:{receiver.port}/"
    try:
        for headers in ({"X-A": "1\r\nX-Injected: 2"}, {"X-A": "1\n"}, {"Bad Name": "x"}):
            with pytest.raises(OutboundError) as caught:
                await client.request("GET", url, headers=headers)
            assert caught.value.kind == "invalid"
    finally:
        await client.close()
    assert receiver.requests == []


async def test_redirects_are_not_followed(receiver):
    client = await open_client(allow_private=True)
    try:
        resp = await client.request("GET", f"http://127.0.0.1:{receiver.port}/redirect")
    finally:
        await client.close()
    assert resp.status == 302 and resp.headers["Location"] == "/echo"
    assert [r.path for r in receiver.requests] == ["/redirect"]


async def test_response_body_is_capped(receiver):
    client = await open_client(allow_private=True, max_response_bytes=1000)
    base = f"http://127.0.0.1:{receiver.port}"
    try:
        big = await client.request("GET", f"{base}/big/5000")
        exact = await client.request("GET", f"{base}/big/1000")
        default_cap = await client.request(
            "GET", f"{base}/big/{2 * 1024 * 1024}", max_response_bytes=1024 * 1024
        )
    finally:
        await client.close()
    assert big.truncated and big.body == b"x" * 1000
    assert not exact.truncated and len(exact.body) == 1000
    assert default_cap.truncated and len(default_cap.body) == 1024 * 1024


async def test_default_limits():
    client = OutboundClient()
    assert client.max_response_bytes == 1024 * 1024
    assert client._timeout.total == 30 and client._timeout.connect == 5  # noqa: SLF001


async def test_timeout(receiver):
    client = await open_client(allow_private=True, total_timeout=0.3)
    try:
        with pytest.raises(OutboundError) as caught:
            await client.request("GET", f"http://127.0.0.1:{receiver.port}/slow")
        with pytest.raises(OutboundError) as per_call:
            await client.request("GET", f"http://127.0.0.1:{receiver.port}/slow", timeout=0.2)
    finally:
        await client.close()
    assert caught.value.kind == "timeout" and per_call.value.kind == "timeout"


async def test_connection_refused_is_an_outbound_error(unused_tcp_port):
    client = await open_client(allow_private=True)
    try:
        with pytest.raises(OutboundError) as caught:
            await client.request("GET", f"http://127.0.0.1:{unused_tcp_port}/")
    finally:
        await client.close()
    assert caught.value.kind == "connect"
    assert caught.value.message == (
        "could not connect to 127.0.0.1: the connection was refused (nothing answers on that port)"
    )


class _UnknownNames(StubResolver):
    async def resolve(self, host, port=0, family=0):
        raise OSError(socket.EAI_NONAME, f"Name or service not known: {host}")


async def test_an_unknown_name_is_said_in_words_without_an_error_number():
    client = OutboundClient(resolver=_UnknownNames())
    await client.open()
    try:
        with pytest.raises(OutboundError) as caught:
            await client.request("GET", "https://help.shop.example/")
    finally:
        await client.close()
    assert caught.value.message == (
        "could not connect to help.shop.example: no address is known for that name"
    )


# ── through the app: HTTP tools with allow_private = false ────────────────────────────


@pytest.fixture
async def guarded_app_client(aiohttp_client, tmp_path):
    stub = StubResolver("127.0.0.1")
    app = create_app(make_settings(tmp_path, outbound={"allow_private": False}))
    app[app_keys.outbound_resolver_key] = stub
    client = await aiohttp_client(app)
    client.stub = stub  # type: ignore[attr-defined]
    return client


@pytest.mark.parametrize(
    "host", ["internal.example", "127.0.0.1", "2130706433", "[::ffff:127.0.0.1]"]
)
async def test_http_tool_cannot_reach_loopback(guarded_app_client, receiver, host):
    client = guarded_app_client
    db = client.app[app_keys.db_key]
    user, team = await accounts.ensure_user_with_team(
        db, email="o@example.com", name="", plan="pro"
    )
    auth = bearer(await new_api_key(client, "o@example.com"))
    resp = await client.post("/api/v1/agents", json={"name": "A"}, headers=auth)
    agent_id = (await resp.json())["data"]["id"]
    body = {
        "agentId": agent_id,
        "name": "internal",
        "description": "Calls an internal service",
        "executionType": "http",
        "inputSchema": {"type": "object", "properties": {}},
        "httpUrl": f"http://{host}:{receiver.port}/admin",
    }
    resp = await client.post("/api/v1/tools", json=body, headers=auth)
    if literal_address(host) is None:
        # A name: only its resolved address tells, so it is saved and checked on sending.
        assert resp.status == 201, await resp.text()
        tool_id = (await resp.json())["id"]
        tool = await tools_store.get_public(db.reader, tool_id)
    else:
        # A literal is refused on save (tests/test_http_tool_shape.py); one saved while
        # allow_private was on is still stopped on sending.
        assert resp.status == 400, await resp.text()
        tool = await save_tool_as_if_private_allowed(client, team.id, body)
    result = await client.app[app_keys.tool_runner_key].run(tool, {})
    assert result.is_error and "refused" in result.output
    assert receiver.requests == []
