"""MCP sessions kept between tool calls (issue 37 item 4): one session per team, URL and
headers, reused by the next call; a new one when the server forgot it (expired, restarted)
with the call sent again only when it surely never ran; idle expiry, the cap, the close at
shutdown; and the settings' abuse."""

from __future__ import annotations

import asyncio

import pytest

from agentsvc.api import app_keys
from agentsvc.config import ConfigError
from agentsvc.mcp_client import McpFailure
from tests.support.accounts import bearer, new_api_key
from tests.support.fakes.hostile_mcp import HostileMcp
from tests.support.fakes.mcp_server import FakeMcpServer
from tests.support.mcp_tools import create, mcp_body, new_agent, run_call
from tests.support.settings import make_settings


def provider(fake) -> dict:
    return {"oai": {"kind": "openai", "base_url": fake.base_url, "api_key": "k"}}


@pytest.fixture
async def legacy():
    """A 2025-era server: sessions, which it forgets after 1 s unused."""
    server = await FakeMcpServer(sessions=True, session_idle_timeout=1).start()
    yield server
    await server.close()


@pytest.fixture
async def modern():
    server = await FakeMcpServer().start()
    yield server
    await server.close()


async def start(make_client, openai_fake, **tools):
    client = await make_client(
        providers=provider(openai_fake), tools={"mcp_timeout_seconds": 3, **tools}
    )
    return client, bearer(await new_api_key(client))


async def order(client, auth, fake_llm, agent_id, number: str = "7") -> dict:
    return await run_call(
        client, auth, fake_llm, agent_id, "shop__get_order", f'{{"id":"{number}"}}'
    )


def pool(client):
    return client.app[app_keys.mcp_client_key].sessions


async def test_a_second_call_is_one_request_on_the_same_session(
    make_client, openai_fake, modern, legacy
):
    client, auth = await start(make_client, openai_fake)
    for server in (modern, legacy):
        agent_id = await new_agent(client, auth)
        await create(client, auth, mcp_body(agent_id, server.url))
        assert (await order(client, auth, openai_fake, agent_id, "1"))["isError"] is False
        before = len(server.http)
        result = await order(client, auth, openai_fake, agent_id, "2")
        assert result["output"].startswith("Order 2: shipped")
        # The tools/call alone: no connection, handshake or listing again.
        assert server.http[before:] == [("POST", server.http[-1][1])]
    assert legacy.sessions_called() == 1
    assert [call[1] for call in legacy.calls] == [{"id": "1"}, {"id": "2"}]


async def test_a_session_the_server_expired_is_opened_again_and_the_call_runs_once(
    make_client, openai_fake, legacy
):
    client, auth = await start(make_client, openai_fake)
    agent_id = await new_agent(client, auth)
    await create(client, auth, mcp_body(agent_id, legacy.url))
    await order(client, auth, openai_fake, agent_id, "1")
    await asyncio.sleep(1.6)  # the server forgets the session (404 for its id)
    result = await order(client, auth, openai_fake, agent_id, "2")
    assert result["isError"] is False, result
    assert [call[1] for call in legacy.calls] == [{"id": "1"}, {"id": "2"}]
    assert legacy.sessions_called() == 2


async def test_a_restarted_server_gets_a_new_session_and_the_call_runs_once(
    make_client, openai_fake, legacy
):
    client, auth = await start(make_client, openai_fake)
    agent_id = await new_agent(client, auth)
    await create(client, auth, mcp_body(agent_id, legacy.url))
    await order(client, auth, openai_fake, agent_id, "1")
    await legacy.restart()
    legacy.calls.clear()
    result = await order(client, auth, openai_fake, agent_id, "2")
    assert result["isError"] is False, result
    assert [call[1] for call in legacy.calls] == [{"id": "2"}]


async def test_a_kept_connection_the_server_closed_is_replaced(make_client, openai_fake, modern):
    client, auth = await start(make_client, openai_fake)
    agent_id = await new_agent(client, auth)
    await create(client, auth, mcp_body(agent_id, modern.url))
    await order(client, auth, openai_fake, agent_id, "1")
    await modern.restart()  # no session to forget (2026 protocol): only the connection died
    result = await order(client, auth, openai_fake, agent_id, "2")
    assert result["isError"] is False, result
    assert [call[1] for call in modern.calls] == [{"id": "1"}, {"id": "2"}]
    assert len(pool(client)) == 1


async def test_a_stopped_server_is_a_clear_error_then_works_again(make_client, openai_fake, legacy):
    client, auth = await start(make_client, openai_fake)
    agent_id = await new_agent(client, auth)
    await create(client, auth, mcp_body(agent_id, legacy.url))
    await order(client, auth, openai_fake, agent_id, "1")
    await legacy.close()
    result = await order(client, auth, openai_fake, agent_id, "2")
    assert result["isError"] is True
    assert result["output"].startswith("MCP call failed: could not connect to 127.0.0.1"), result
    await legacy.start()
    result = await order(client, auth, openai_fake, agent_id, "3")
    assert result["isError"] is False, result
    assert [call[1] for call in legacy.calls] == [{"id": "1"}, {"id": "3"}]


async def test_a_call_the_server_received_is_never_sent_again(
    make_client, openai_fake, aiohttp_server
):
    hostile = HostileMcp("drops_calls")
    server = await aiohttp_server(hostile.app())
    client, auth = await start(make_client, openai_fake)
    agent_id = await new_agent(client, auth)
    await create(client, auth, mcp_body(agent_id, str(server.make_url("/mcp"))))
    first = await run_call(client, auth, openai_fake, agent_id, "shop__lookup", "{}")
    assert first["output"] == "done"
    # On the kept session the server takes the call and drops the connection: it may have
    # run it, so the call fails instead of running twice.
    second = await run_call(client, auth, openai_fake, agent_id, "shop__lookup", "{}")
    assert second["isError"] is True
    assert second["output"].startswith("MCP call failed:"), second
    assert hostile.calls == 2
    assert len(pool(client)) == 0  # the failed session was ended


async def test_sessions_are_per_team_and_per_credentials(make_client, openai_fake, legacy):
    client, auth = await start(make_client, openai_fake)
    other = bearer(await new_api_key(client, email="other@example.com"))
    agents = [await new_agent(client, auth), await new_agent(client, other)]
    for agent_id, team in zip(agents, (auth, other), strict=True):
        await create(client, team, mcp_body(agent_id, legacy.url))
        await order(client, team, openai_fake, agent_id)
    assert legacy.sessions_called() == 2  # same URL, no headers: still one per team
    # A changed secret changes the headers sent: a new session, with the new credentials.
    resp = await client.put("/api/v1/secrets/SHOP_TOKEN", json={"value": "tok-1"}, headers=auth)
    assert resp.status == 200, await resp.text()
    headers = {"Authorization": "Bearer {{SHOP_TOKEN}}"}
    await create(client, auth, mcp_body(agents[0], legacy.url, name="auth", mcpHeaders=headers))
    await run_call(client, auth, openai_fake, agents[0], "auth__whoami", "{}")
    resp = await client.put("/api/v1/secrets/SHOP_TOKEN", json={"value": "tok-2"}, headers=auth)
    assert resp.status == 200, await resp.text()
    await run_call(client, auth, openai_fake, agents[0], "auth__whoami", "{}")
    assert [call[2] for call in legacy.calls[-2:]] == ["Bearer tok-1", "Bearer tok-2"]
    assert legacy.sessions_called() == 4


async def test_concurrent_calls_each_have_a_session_of_their_own(make_client, openai_fake, legacy):
    client, _ = await start(make_client, openai_fake)
    mcp = client.app[app_keys.mcp_client_key]
    outcomes = await asyncio.gather(
        *(mcp.call_tool(legacy.url, {}, "get_order", {"id": str(n)}, team="t") for n in range(3))
    )
    assert [o.content[0]["text"] for o in outcomes] == [f"Order {n}: shipped" for n in range(3)]
    assert len(legacy.calls) == 3 and legacy.sessions_called() == 3
    assert len(pool(client)) == 3  # all kept for the next calls


async def test_unused_sessions_close_after_the_idle_time(make_client, openai_fake, legacy):
    client, auth = await start(make_client, openai_fake, mcp_session_idle_seconds=0.3)
    agent_id = await new_agent(client, auth)
    await create(client, auth, mcp_body(agent_id, legacy.url))
    await order(client, auth, openai_fake, agent_id)
    assert len(pool(client)) == 1
    await asyncio.sleep(0.8)
    assert len(pool(client)) == 0
    assert legacy.http[-1][0] == "DELETE"  # the server was told the session ends


async def test_no_reuse_with_zero_idle_seconds(make_client, openai_fake, legacy):
    client, auth = await start(make_client, openai_fake, mcp_session_idle_seconds=0)
    agent_id = await new_agent(client, auth)
    await create(client, auth, mcp_body(agent_id, legacy.url))
    for number in "12":
        await order(client, auth, openai_fake, agent_id, number)
    assert legacy.sessions_called() == 2
    await asyncio.sleep(0.2)
    ended = {session for method, session in legacy.http if method == "DELETE"}
    assert ended >= set(legacy.call_sessions)  # each ended right after its call


async def test_the_least_recently_used_session_closes_past_the_cap(
    make_client, openai_fake, legacy
):
    client, _ = await start(make_client, openai_fake, mcp_max_sessions=1)
    mcp = client.app[app_keys.mcp_client_key]
    await mcp.call_tool(legacy.url, {}, "get_order", {"id": "1"}, team="a")
    first = legacy.http[-1][1]
    await mcp.call_tool(legacy.url, {}, "get_order", {"id": "2"}, team="b")
    await asyncio.sleep(0.2)
    assert ("DELETE", first) in legacy.http
    assert len(pool(client)) == 1


async def test_shutdown_ends_every_session(make_client, openai_fake, legacy):
    client, _ = await start(make_client, openai_fake)
    mcp = client.app[app_keys.mcp_client_key]
    for team in "ab":
        await mcp.call_tool(legacy.url, {}, "get_order", {"id": "1"}, team=team)
    assert len(pool(client)) == 2
    # A call in flight ends with a message, not as a cancellation of its caller.
    hanging = asyncio.create_task(mcp.call_tool(legacy.url, {}, "hang", {}, team="c"))
    while not any(call[0] == "hang" for call in legacy.calls):
        await asyncio.sleep(0.01)
    await client.close()
    assert len(pool(client)) == 0
    assert [method for method, _ in legacy.http].count("DELETE") == 2  # the idle ones
    with pytest.raises(McpFailure, match="stopped: the service is shutting down"):
        await hanging


async def test_a_timed_out_call_leaves_no_session_and_the_next_call_works(
    make_client, openai_fake, modern
):
    client, auth = await start(make_client, openai_fake, mcp_timeout_seconds=1)
    agent_id = await new_agent(client, auth)
    await create(client, auth, mcp_body(agent_id, modern.url))
    hung = await run_call(client, auth, openai_fake, agent_id, "shop__hang", "{}")
    assert hung["output"] == "MCP call failed: timed out after 1 s"
    assert len(pool(client)) == 0
    assert (await order(client, auth, openai_fake, agent_id))["isError"] is False
    assert len(pool(client)) == 1


@pytest.mark.parametrize(
    ("key", "value", "words"),
    [
        ("mcp_session_idle_seconds", -1, "tools.mcp_session_idle_seconds"),
        ("mcp_session_idle_seconds", 99999, "tools.mcp_session_idle_seconds"),
        ("mcp_session_idle_seconds", "soon", "tools.mcp_session_idle_seconds"),
        ("mcp_max_sessions", 0, "tools.mcp_max_sessions"),
        ("mcp_max_sessions", 10**9, "tools.mcp_max_sessions"),
    ],
)
def test_bad_session_settings_stop_start_up_naming_the_key(tmp_path, key, value, words):
    with pytest.raises(ConfigError) as raised:
        make_settings(tmp_path, tools={key: value})
    assert words in str(raised.value)


async def test_a_listing_still_opens_its_own_session(make_client, openai_fake, legacy):
    client, auth = await start(make_client, openai_fake)
    agent_id = await new_agent(client, auth)
    await create(client, auth, mcp_body(agent_id, legacy.url))
    # The listing's session was its own, ended with it; none is kept.
    assert len(pool(client)) == 0
    assert [method for method, _ in legacy.http][-1] == "DELETE"
