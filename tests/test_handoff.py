"""Handoff to a person: statuses, members' replies, the chat while a person has it, the
reserved `request_human` tool, settings, roles and isolation, and the handoff figures."""

from __future__ import annotations

import asyncio

import pytest

from agentsvc.api import app_keys
from tests.support.accounts import add_member, bearer, create_user, key_for
from tests.support.chat import chat, get_conversation, new_agent, new_tool, user
from tests.support.errors import assert_error
from tests.support.fakes import openai_server as oai
from tests.support.live import (
    VISITOR_SESSION,
    handoff_agent,
    visitor_chat,
    visitor_conversation,
)

VISITOR = {"X-Session-Id": VISITOR_SESSION}


async def owner_of_team(client, email="owner@example.com", name="Olivia"):
    user_, team = await create_user(client, email, name=name)
    return user_, team, bearer(await key_for(client, team.id, user_.id))


async def post(client, path: str, json=None, headers=None):
    return await client.post(f"/api/v1{path}", json=json, headers=headers or {})


async def data_of(resp, status: int = 200):
    assert resp.status == status, await resp.text()
    return (await resp.json())["data"]


async def test_new_conversations_are_bot_and_the_list_filters_by_status(client):
    _, _, auth = await owner_of_team(client)
    agent = await handoff_agent(client, auth)
    first = await visitor_conversation(client, agent["id"])
    second = await visitor_conversation(client, agent["id"], "Another question")
    listed = await data_of(
        await client.get("/api/v1/conversations", params={"agentId": agent["id"]}, headers=auth)
    )
    assert {c["status"] for c in listed} == {"bot"}
    assert all(c["assignee"] is None for c in listed)
    await data_of(await post(client, f"/conversations/{first}/handoff", {}, VISITOR))
    resp = await client.get(
        "/api/v1/conversations",
        params={"agentId": agent["id"], "status": "waiting"},
        headers=auth,
    )
    body = await resp.json()
    assert [c["id"] for c in body["data"]] == [first]
    assert body["pagination"]["total"] == 1
    resp = await client.get(
        "/api/v1/conversations", params={"agentId": agent["id"], "status": "bot"}, headers=auth
    )
    assert [c["id"] for c in (await resp.json())["data"]] == [second]
    resp = await client.get(
        "/api/v1/conversations", params={"agentId": agent["id"], "status": "asleep"}, headers=auth
    )
    await assert_error(resp, 400, "VALIDATION_ERROR", "status")


async def test_the_whole_flow_over_http(client):
    owner, team, auth = await owner_of_team(client)
    agent = await handoff_agent(client, auth)
    conv_id = await visitor_conversation(client, agent["id"], "Where is my parcel?")

    state = await data_of(await post(client, f"/conversations/{conv_id}/handoff", {}, VISITOR))
    assert state == {
        "conversationId": conv_id,
        "status": "waiting",
        "assignee": None,
        "online": True,
        "offlineMessage": None,
    }
    # While a person is asked for, the visitor's messages are kept and the model is quiet.
    held = await visitor_chat(client, agent["id"], "Hello? Anyone?", conv_id)
    assert held.names == ["message_start", "handoff", "message_stop"]
    assert held.of("handoff")[0]["status"] == "waiting"
    conv = await get_conversation(client, auth, conv_id)
    assert [m["role"] for m in conv["messages"]] == ["user", "assistant", "user"]

    taken = await data_of(await post(client, f"/conversations/{conv_id}/assign", {}, auth))
    assert taken["status"] == "human"
    assert taken["assignee"] == {"id": owner.id, "name": "Olivia", "avatarUrl": None}
    reply = await data_of(
        await post(client, f"/conversations/{conv_id}/messages", {"content": "On its way!"}, auth),
        201,
    )
    assert reply["role"] == "assistant"
    assert reply["author"] == {"type": "human", "id": owner.id, "name": "Olivia", "avatarUrl": None}
    held = await visitor_chat(client, agent["id"], "Thanks, when?", conv_id)
    assert held.of("handoff")[0]["assignee"] == {"id": owner.id, "name": "Olivia"}

    conv = await get_conversation(client, auth, conv_id)
    assert conv["status"] == "human"
    assert conv["assignee"] == {"id": owner.id, "name": "Olivia", "avatarUrl": None}
    authors = [m["author"]["type"] for m in conv["messages"]]
    assert authors == ["visitor", "ai", "visitor", "human", "visitor"]

    released = await data_of(await post(client, f"/conversations/{conv_id}/release", None, auth))
    assert released["status"] == "bot" and released["assignee"] is None
    answer = await visitor_chat(client, agent["id"], "And the price?", conv_id)
    assert "content_block_delta" in answer.names
    assert "handoff" not in answer.names

    closed = await data_of(await post(client, f"/conversations/{conv_id}/close", None, auth))
    assert closed["status"] == "closed"
    # A visitor writing again reopens it with the agent.
    again = await visitor_chat(client, agent["id"], "One more thing", conv_id)
    assert "content_block_delta" in again.names
    assert (await get_conversation(client, auth, conv_id))["status"] == "bot"


async def test_the_model_answers_with_the_whole_conversation_after_a_release(
    make_client, openai_fake
):
    client = await make_client(
        providers={"oai": {"kind": "openai", "base_url": openai_fake.base_url, "api_key": "k"}}
    )
    _, _, auth = await owner_of_team(client)
    agent = await new_agent(client, auth, model="oai/gpt-fake")
    await client.patch(
        f"/api/v1/agents/{agent['id']}", json={"handoff": {"enabled": True}}, headers=auth
    )
    openai_fake.script(oai.stream(oai.text_events(["Hi, I am the bot."])))
    conv_id = await visitor_conversation(client, agent["id"], "Hello")
    offered = [t["function"]["name"] for t in openai_fake.requests[0]["json"]["tools"]]
    assert offered == ["request_human"]
    await post(client, f"/conversations/{conv_id}/handoff", {}, VISITOR)
    await post(client, f"/conversations/{conv_id}/messages", {"content": "Olivia here."}, auth)
    await post(client, f"/conversations/{conv_id}/release", None, auth)
    openai_fake.script(oai.stream(oai.text_events(["Back to me."])))
    stream = await visitor_chat(client, agent["id"], "Thanks", conv_id)
    assert stream.text == "Back to me."
    sent = openai_fake.requests[-1]["json"]["messages"]
    contents = [(m["role"], m.get("content")) for m in sent if m["role"] != "system"]
    assert contents == [
        ("user", "Hello"),
        ("assistant", "Hi, I am the bot."),
        ("assistant", "Olivia here."),
        ("user", "Thanks"),
    ]


async def test_the_model_asks_for_a_person_with_request_human(make_client, openai_fake):
    client = await make_client(
        providers={"oai": {"kind": "openai", "base_url": openai_fake.base_url, "api_key": "k"}}
    )
    _, _, auth = await owner_of_team(client)
    agent = await new_agent(client, auth, model="oai/gpt-fake")
    openai_fake.script(oai.stream(oai.text_events(["No handoff here."])))
    await visitor_conversation(client, agent["id"])
    assert "tools" not in openai_fake.requests[0]["json"]  # not offered while disabled

    await client.patch(
        f"/api/v1/agents/{agent['id']}", json={"handoff": {"enabled": True}}, headers=auth
    )
    openai_fake.script(
        oai.stream(oai.tool_events([("call_1", "request_human", ['{"reason":"refund"}'])]))
    )
    stream = await visitor_chat(client, agent["id"], "I want to talk to a human")
    assert stream.names[-3:] == ["tool_result", "handoff", "message_stop"]
    handoff = stream.of("handoff")[0]
    assert handoff["status"] == "waiting" and handoff["online"] is True
    conv = await get_conversation(client, auth, stream.start["conversationId"])
    assert conv["status"] == "waiting"
    assert conv["messages"][-1]["toolCalls"][0]["toolName"] == "request_human"
    assert len(openai_fake.requests) == 2  # the turn ended at the handoff


async def test_the_builtin_model_calls_request_human(client):
    _, _, auth = await owner_of_team(client)
    agent = await handoff_agent(client, auth)
    stream = await visitor_chat(client, agent["id"], "/tool request_human")
    assert "handoff" in stream.names
    conv = await get_conversation(client, auth, stream.start["conversationId"])
    assert conv["status"] == "waiting"


async def test_request_human_is_a_reserved_tool_name(client):
    _, _, auth = await owner_of_team(client)
    agent = await new_agent(client, auth)
    resp = await client.post(
        "/api/v1/tools",
        json={
            "agentId": agent["id"],
            "name": "request_human",
            "description": "mine",
            "executionType": "mock",
            "mockResponse": "x",
            "inputSchema": {"type": "object", "properties": {}},
        },
        headers=auth,
    )
    await assert_error(resp, 400, "VALIDATION_ERROR", "reserved")
    tool = await new_tool(client, auth, agent["id"], "lookup")
    resp = await client.put(
        f"/api/v1/tools/{tool['id']}", json={"name": "request_human"}, headers=auth
    )
    await assert_error(resp, 400, "VALIDATION_ERROR", "reserved")


async def test_a_visitor_may_not_ask_when_the_agent_does_not_hand_over(client):
    _, _, auth = await owner_of_team(client)
    agent = await new_agent(client, auth)
    conv_id = await visitor_conversation(client, agent["id"])
    resp = await post(client, f"/conversations/{conv_id}/handoff", {}, VISITOR)
    await assert_error(resp, 403, "FORBIDDEN", "does not hand conversations")
    # The team may still take it over.
    state = await data_of(await post(client, f"/conversations/{conv_id}/handoff", None, auth))
    assert state["status"] == "waiting"


async def test_isolation_and_roles(client):
    owner, team, auth = await owner_of_team(client)
    agent = await handoff_agent(client, auth)
    conv_id = await visitor_conversation(client, agent["id"])
    _, _, other = await owner_of_team(client, "eve@example.com", "Eve")
    for path, body in [
        ("handoff", {}),
        ("assign", {}),
        ("messages", {"content": "hi"}),
        ("release", None),
        ("close", None),
        ("contact", {"email": "a@example.com"}),
    ]:
        resp = await post(client, f"/conversations/{conv_id}/{path}", body, other)
        await assert_error(resp, 404, "NOT_FOUND")
    resp = await client.get(f"/api/v1/conversations/{conv_id}/events", headers=other)
    await assert_error(resp, 404, "NOT_FOUND")
    resp = await client.get(f"/api/v1/agents/{agent['id']}/handoff-stats", headers=other)
    await assert_error(resp, 404, "NOT_FOUND")
    # A visitor without the conversation's session (or with another) finds nothing.
    for headers in ({}, {"X-Session-Id": "someone-else"}):
        for path, body in [("handoff", {}), ("contact", {"email": "a@example.com"})]:
            resp = await post(client, f"/conversations/{conv_id}/{path}", body, headers)
            await assert_error(resp, 404, "NOT_FOUND")
        resp = await client.get(f"/api/v1/conversations/{conv_id}/events", headers=headers)
        await assert_error(resp, 404, "NOT_FOUND")
    resp = await post(client, f"/conversations/{conv_id}/handoff", {"sessionId": "nope"})
    await assert_error(resp, 404, "NOT_FOUND")
    # Visitors cannot use the team's routes.
    for path in ("assign", "release", "close"):
        resp = await post(client, f"/conversations/{conv_id}/{path}", {}, VISITOR)
        await assert_error(resp, 401, "UNAUTHORIZED")
    resp = await post(client, f"/conversations/{conv_id}/messages", {"content": "x"}, VISITOR)
    await assert_error(resp, 401, "UNAUTHORIZED")
    # A member (not only the owner) takes, replies, gives it to the owner, and closes.
    member = await add_member(client, team.id, "mia@example.com")
    member_auth = bearer(await key_for(client, team.id, member.id))
    taken = await data_of(await post(client, f"/conversations/{conv_id}/assign", {}, member_auth))
    assert taken["assignee"]["id"] == member.id
    reply = await data_of(
        await post(client, f"/conversations/{conv_id}/messages", {"content": "Hi"}, member_auth),
        201,
    )
    assert reply["author"]["id"] == member.id
    given = await data_of(
        await post(client, f"/conversations/{conv_id}/assign", {"memberId": owner.id}, member_auth)
    )
    assert given["assignee"] == {"id": owner.id, "name": "Olivia", "avatarUrl": None}
    # Only members of the team can be assigned.
    eve = (await (await client.get("/api/v1/team/members", headers=other)).json())[0]
    for ref in (eve["id"], eve["memberId"], "mem_nobody"):
        resp = await post(client, f"/conversations/{conv_id}/assign", {"memberId": ref}, auth)
        await assert_error(resp, 400, "VALIDATION_ERROR", "memberId")
    await data_of(await post(client, f"/conversations/{conv_id}/close", None, member_auth))


async def test_bad_bodies_are_refused_and_lose_nothing(client):
    _, _, auth = await owner_of_team(client)
    agent = await handoff_agent(client, auth)
    conv_id = await visitor_conversation(client, agent["id"])
    for body in (
        {},
        {"content": ""},
        {"content": "   "},
        {"content": 5},
        {"content": "x" * 20_001},
    ):
        resp = await post(client, f"/conversations/{conv_id}/messages", body, auth)
        await assert_error(resp, 400, "VALIDATION_ERROR", "content")
    resp = await post(client, f"/conversations/{conv_id}/messages", {"content": "x", "y": 1}, auth)
    await assert_error(resp, 400, "VALIDATION_ERROR")
    resp = await post(client, f"/conversations/{conv_id}/handoff", {"sessionId": 7}, VISITOR)
    await assert_error(resp, 400, "VALIDATION_ERROR", "sessionId")
    for email in ("not-an-email", "a@b", "a b@example.com", "a@example.com\r\nBcc: x@y.z", ""):
        resp = await post(client, f"/conversations/{conv_id}/contact", {"email": email}, VISITOR)
        await assert_error(resp, 400, "VALIDATION_ERROR", "email")
    conv = await get_conversation(client, auth, conv_id)
    assert conv["status"] == "bot" and len(conv["messages"]) == 2


async def test_handoff_settings_are_validated_and_returned(client):
    _, _, auth = await owner_of_team(client)
    agent = await new_agent(client, auth)
    got = await data_of(await client.get(f"/api/v1/agents/{agent['id']}", headers=auth))
    assert got["handoff"]["enabled"] is False
    assert got["handoff"]["businessHours"] is None
    assert got["handoff"]["notify"] == {"email": False, "teamChat": None, "teamChatSecret": None}
    path = f"/api/v1/agents/{agent['id']}"
    bad = [
        ({"businessHours": {"timezone": "Mars/Olympus", "intervals": []}}, "time zone"),
        ({"businessHours": {"timezone": "../../etc/passwd", "intervals": []}}, "time zone"),
        (
            {
                "businessHours": {
                    "timezone": "UTC",
                    "intervals": [{"day": "mon", "start": "17:00", "end": "09:00"}],
                }
            },
            "end must be after start",
        ),
        (
            {
                "businessHours": {
                    "timezone": "UTC",
                    "intervals": [{"day": "mon", "start": "09:61", "end": "10:00"}],
                }
            },
            "09:61",
        ),
        (
            {
                "businessHours": {
                    "timezone": "UTC",
                    "intervals": [{"day": "someday", "start": "09:00", "end": "10:00"}],
                }
            },
            "day",
        ),
        ({"notify": {"teamChat": "ftp://example.com/x"}}, "teamChat"),
        ({"offlineMessage": ""}, "offlineMessage"),
        ({"enabled": "yes"}, "enabled"),
    ]
    for handoff, message in bad:
        resp = await client.patch(path, json={"handoff": handoff}, headers=auth)
        await assert_error(resp, 400, "VALIDATION_ERROR", message)
    got = await data_of(await client.get(path, headers=auth))
    assert got["handoff"]["enabled"] is False  # nothing of the refused bodies was kept
    hours = {
        "timezone": "Europe/Berlin",
        "intervals": [{"day": "mon", "start": "09:00", "end": "24:00"}],
    }
    patched = await data_of(
        await client.patch(
            path,
            json={"handoff": {"enabled": True, "businessHours": hours, "offlineMessage": "Away"}},
            headers=auth,
        )
    )
    assert patched["handoff"]["businessHours"] == hours
    assert patched["handoff"]["offlineMessage"] == "Away"
    # A partial update keeps the rest; null removes the hours (always online).
    patched = await data_of(
        await client.patch(path, json={"handoff": {"businessHours": None}}, headers=auth)
    )
    assert patched["handoff"]["enabled"] is True
    assert patched["handoff"]["businessHours"] is None
    assert patched["handoff"]["offlineMessage"] == "Away"


async def test_a_team_chat_on_a_private_address_is_refused(make_client):
    """SSRF: the team chat URL is a tenant's input; private addresses need the operator."""
    client = await make_client(outbound={"allow_private": False})
    _, _, auth = await owner_of_team(client)
    agent = await new_agent(client, auth)
    for url in ("http://127.0.0.1:9/hook", "http://169.254.169.254/latest", "http://[::1]/x"):
        resp = await client.patch(
            f"/api/v1/agents/{agent['id']}",
            json={"handoff": {"notify": {"teamChat": url}}},
            headers=auth,
        )
        await assert_error(resp, 400, "VALIDATION_ERROR", "private address")


async def test_handoff_figures(client):
    owner, team, auth = await owner_of_team(client)
    agent = await handoff_agent(client, auth)
    stats_path = f"/api/v1/agents/{agent['id']}/handoff-stats"
    empty = await data_of(await client.get(stats_path, headers=auth))
    assert empty == {
        "agentId": agent["id"],
        "conversations": 0,
        "handoffs": 0,
        "handoffRate": 0.0,
        "medianFirstReplySeconds": None,
    }
    convs = [await visitor_conversation(client, agent["id"], f"q{i}") for i in range(4)]
    for conv_id in convs[:3]:
        await post(client, f"/conversations/{conv_id}/handoff", {}, VISITOR)
    # First replies after 10, 20 and (never) seconds: set the handoff times back.
    db = client.app[app_keys.db_key]
    async with db.write() as tx:
        for conv_id, ago in zip(convs[:2], (10, 20), strict=True):
            await tx.execute(
                "UPDATE conversations SET handoff_at = ? WHERE id = ?",
                (_ago(ago), conv_id),
            )
    for conv_id in convs[:2]:
        await post(client, f"/conversations/{conv_id}/messages", {"content": "hi"}, auth)
        await post(client, f"/conversations/{conv_id}/messages", {"content": "again"}, auth)
    stats = await data_of(await client.get(stats_path, headers=auth))
    assert stats["conversations"] == 4 and stats["handoffs"] == 3
    assert stats["handoffRate"] == 0.75
    assert 14.5 <= stats["medianFirstReplySeconds"] <= 16.5  # median of ~10 s and ~20 s


def _ago(seconds: float) -> str:
    from datetime import UTC, datetime, timedelta

    from agentsvc.ids import iso

    return iso(datetime.now(UTC) - timedelta(seconds=seconds))


async def test_the_team_can_follow_a_conversation_with_an_api_key(client):
    _, _, auth = await owner_of_team(client)
    agent = await handoff_agent(client, auth)
    conv_id = await visitor_conversation(client, agent["id"])
    resp = await client.get(f"/api/v1/conversations/{conv_id}/events", headers=auth)
    assert resp.status == 200
    resp.close()


@pytest.mark.parametrize("header", ["abc", "-1", "1" * 25, "9223372036854775808"])
async def test_a_bad_last_event_id_is_refused(client, header):
    _, _, auth = await owner_of_team(client)
    agent = await handoff_agent(client, auth)
    conv_id = await visitor_conversation(client, agent["id"])
    resp = await client.get(
        f"/api/v1/conversations/{conv_id}/events", headers={**VISITOR, "Last-Event-ID": header}
    )
    await assert_error(resp, 400, "VALIDATION_ERROR", "Last-Event-ID")
    resp = await client.get("/api/v1/inbox/events", headers={**auth, "Last-Event-ID": header})
    await assert_error(resp, 400, "VALIDATION_ERROR", "Last-Event-ID")


async def test_chat_held_for_a_person_does_not_call_the_model(make_client, openai_fake):
    client = await make_client(
        providers={"oai": {"kind": "openai", "base_url": openai_fake.base_url, "api_key": "k"}}
    )
    _, _, auth = await owner_of_team(client)
    agent = await new_agent(client, auth, model="oai/gpt-fake")
    openai_fake.script(oai.stream(oai.text_events(["Hi"])))
    conv_id = await visitor_conversation(client, agent["id"])
    await post(client, f"/conversations/{conv_id}/assign", {}, auth)
    for _ in range(3):
        stream = await chat(
            client,
            {
                "agentId": agent["id"],
                "messages": user("still there?"),
                "conversationId": conv_id,
                "sessionId": VISITOR_SESSION,
            },
        )
        assert stream.names == ["message_start", "handoff", "message_stop"]
    await asyncio.sleep(0)
    assert len(openai_fake.requests) == 1


async def test_visitors_handoff_requests_are_rate_limited_per_address(make_client):
    client = await make_client(ratelimit={"public_chat_per_minute": 3})
    _, _, auth = await owner_of_team(client)
    agent = await handoff_agent(client, auth)
    conv_id = await visitor_conversation(client, agent["id"])
    for _ in range(3):
        await data_of(await post(client, f"/conversations/{conv_id}/handoff", {}, VISITOR))
    resp = await post(client, f"/conversations/{conv_id}/handoff", {}, VISITOR)
    await assert_error(resp, 429, "RATE_LIMITED")
    assert resp.headers["Retry-After"]
    # The team is not limited by the visitors' bucket.
    await data_of(await post(client, f"/conversations/{conv_id}/handoff", {}, auth))
