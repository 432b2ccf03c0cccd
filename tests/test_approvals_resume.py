"""Paused turns nobody waits for (issue 36): the visitor left, the app restarted, the turn
came through a channel. Once decided, any process takes the turn up and its answer is
stored in the conversation (shown the next time), the tool having run once."""

from __future__ import annotations

import asyncio

import orjson
import pytest

from agentsvc.llm.sse import SseParser
from tests.support.accounts import bearer, new_api_key
from tests.support.approvals import (
    FAST,
    ORDER_SCHEMA,
    OpenStream,
    agent_with_refund,
    answer_of,
    ask_refund,
    data_of,
    decide,
    pending_of,
)
from tests.support.channel_platforms import TELEGRAM_TOKEN, bot, post_update
from tests.support.channels import message, new_channel, send, turns_done
from tests.support.chat import new_agent, new_tool, user
from tests.support.fakes import openai_server as oai
from tests.support.fakes.telegram import FakeTelegram
from tests.support.fakes.webhook_receiver import WebhookReceiver
from tests.support.settings import make_settings, with_new_database


@pytest.fixture
async def fast(make_client):
    return await make_client(**FAST)


@pytest.fixture
async def fast_auth(fast):
    return bearer(await new_api_key(fast))


async def _visitor_events(client, conversation_id: str, session_id: str) -> list[tuple]:
    """What the visitor's widget reads when it comes back: the conversation's events."""
    resp = await client.get(
        f"/api/v1/conversations/{conversation_id}/events",
        params={"sessionId": session_id, "lastEventId": "0"},
    )
    assert resp.status == 200
    parser, events = SseParser(), []

    def answered() -> bool:
        return any(n == "message" and d["message"]["role"] == "assistant" for n, d in events)

    async with asyncio.timeout(10):
        while not answered():
            chunk = await resp.content.readany()
            assert chunk, events
            events += [(e.event, orjson.loads(e.data)) for e in parser.feed(chunk)]
    resp.close()
    return events


async def test_the_visitor_left_the_outcome_waits_in_the_conversation(fast, fast_auth):
    client, auth = fast, fast_auth
    agent_id = await agent_with_refund(client, auth)
    stream = await ask_refund(client, agent_id, sessionId="visitor-session-1")
    conversation_id, approval_id = await pending_of(client, auth, stream)
    stream.close()  # the visitor leaves while the call waits
    await asyncio.sleep(0.5)  # the stream notices (keep-alives every 0.2 s) and lets go
    found = await data_of(await decide(client, auth, approval_id, "approve"))
    assert found["status"] == "approved"
    answer = await answer_of(client, auth, conversation_id)
    assert "refunded" in answer["content"] and answer["status"] == "complete"
    events = await _visitor_events(client, conversation_id, "visitor-session-1")
    shown = [d["message"]["content"] for name, d in events if name == "message"]
    assert shown[-1] == answer["content"]
    found = await data_of(await client.get(f"/api/v1/approvals/{approval_id}", headers=auth))
    assert found["ranAt"] and found["output"] == {"refunded": True}


async def test_the_visitor_left_a_denial_is_answered_too(fast, fast_auth):
    client, auth = fast, fast_auth
    agent_id = await agent_with_refund(client, auth)
    stream = await ask_refund(client, agent_id)
    conversation_id, approval_id = await pending_of(client, auth, stream)
    stream.close()
    await asyncio.sleep(0.5)
    await data_of(await decide(client, auth, approval_id, "deny", {"reason": "Too late"}))
    answer = await answer_of(client, auth, conversation_id)
    assert "Too late" in answer["content"]
    assert answer["toolCalls"][0]["isError"] is True


async def test_the_live_list_of_waiting_calls(fast, fast_auth):
    client, auth = fast, fast_auth
    agent_id = await agent_with_refund(client, auth)
    resp = await client.get("/api/v1/approvals/events", headers=auth)
    assert resp.status == 200 and resp.content_type == "text/event-stream"
    live = OpenStream(resp)
    assert (await live.until("approvals"))["approvals"] == []
    stream = await ask_refund(client, agent_id)
    _, approval_id = await pending_of(client, auth, stream)
    shown = (await live.until("approvals"))["approvals"]
    assert [(a["id"], a["toolName"], a["status"]) for a in shown] == [
        (approval_id, "refund", "pending")
    ]
    await data_of(await decide(client, auth, approval_id, "approve"))
    assert (await live.until("approvals"))["approvals"] == []
    other = bearer(await new_api_key(client, "other@example.com"))
    resp = await client.get("/api/v1/approvals/events", headers=other)
    theirs = OpenStream(resp)
    assert (await theirs.until("approvals"))["approvals"] == []
    for opened in (live, theirs, stream):
        opened.close()


@pytest.fixture
async def hits():
    receiver = await WebhookReceiver().start()
    yield receiver
    await receiver.close()


async def test_a_pending_call_survives_a_restart_and_runs_once(
    make_client, tmp_path, hits, openai_fake
):
    """The model (an OpenAI-compatible server) calls the tool; the app stops while the call
    waits and the visitor's stream is open; after the restart the call is still there, is
    approved, the tool runs once and the model answers from its output."""
    providers = {"oai": {"kind": "openai", "base_url": openai_fake.base_url, "api_key": "k"}}
    settings = with_new_database(make_settings(tmp_path, providers=providers, **FAST))
    client = await make_client(settings)
    auth = bearer(await new_api_key(client))
    agent = await new_agent(client, auth, model="oai/gpt-4o-mini")
    await new_tool(
        client,
        auth,
        agent["id"],
        "refund",
        executionType="http",
        httpUrl=hits.url("/refunds"),
        httpMethod="POST",
        inputSchema=ORDER_SCHEMA,
        requiresApproval=True,
    )
    openai_fake.script(
        oai.stream(oai.tool_events([("call_1", "refund", ['{"order":', ' "A7"}'])], "On it.")),
        oai.stream(oai.text_events(["Your refund ", "is done."])),
    )
    stream = await OpenStream.start(
        client, {"agentId": agent["id"], "messages": user("Refund order A7 please")}
    )
    conversation_id, approval_id = await pending_of(client, auth, stream)
    await client.close()  # the app stops with the stream open and the call waiting
    assert hits.at("/refunds") == []

    client = await make_client(settings)
    pending = await data_of(await client.get("/api/v1/approvals?status=pending", headers=auth))
    assert [(a["id"], a["input"]) for a in pending] == [(approval_id, {"order": "A7"})]
    await data_of(await decide(client, auth, approval_id, "approve"))
    answer = await answer_of(client, auth, conversation_id)
    assert answer["content"] == "On it.\n\nYour refund is done."
    assert answer["toolCalls"][0]["output"]["status"] == 200
    sent = openai_fake.requests[1]["json"]["messages"]
    assert sent[-2]["tool_calls"][0]["function"]["name"] == "refund"
    assert sent[-1]["role"] == "tool" and '"status":200' in sent[-1]["content"]
    await asyncio.sleep(0.6)  # a sweep or two later, nothing runs it again
    assert [h.json for h in hits.at("/refunds")] == [{"order": "A7"}]
    assert len(openai_fake.requests) == 2


async def test_a_channel_hears_that_it_waits_then_the_answer(make_client, hits):
    client = await make_client(
        webhooks={"retry_schedule_seconds": [0, 0.2, 0.2], "timeout_seconds": 1}, **FAST
    )
    auth = bearer(await new_api_key(client))
    agent_id = await agent_with_refund(client, auth)
    channel = await new_channel(client, auth, agent_id, hits.url("/replies"))
    text = '/tool refund {"order": "A3"}'
    await send(client, channel, channel["secret"], message("u-1", text, "m-1"))
    await turns_done(client)
    await hits.wait_for(1, "/replies")
    first = hits.at("/replies")[0].json
    assert "must approve this first" in first["text"]
    pending = await data_of(await client.get("/api/v1/approvals?status=pending", headers=auth))
    assert [a["conversationId"] for a in pending] == [first["conversationId"]]
    await data_of(await decide(client, auth, pending[0]["id"], "approve"))
    await hits.wait_for(2, "/replies")
    second = hits.at("/replies")[1].json
    assert "refunded" in second["text"] and second["conversationId"] == first["conversationId"]
    assert second["inReplyTo"] == first["inReplyTo"] == "m-1"  # the message it answers
    answer = await answer_of(client, auth, first["conversationId"])
    assert answer["id"] == second["messageId"] == first["messageId"]


async def test_a_telegram_groups_answer_follows_in_the_group(make_client):
    """Asked in a group, the answer decided later goes to that group, not to the person's
    private chat (where the bot may never have been started)."""
    telegram = await FakeTelegram(tokens={TELEGRAM_TOKEN}).start()
    try:
        client = await make_client(webhooks={"retry_schedule_seconds": [0, 0.2]}, **FAST)
        auth = bearer(await new_api_key(client))
        agent_id = await agent_with_refund(client, auth)
        channel = await bot(client, auth, telegram, agent_id)
        update = telegram.text_update(42, '/tool refund {"order": "A4"}', chat_id=-100777)
        assert (await post_update(client, telegram, channel, update)).status == 202
        await telegram.wait_for("sendMessage", 1)
        pending = await data_of(await client.get("/api/v1/approvals?status=pending", headers=auth))
        await data_of(await decide(client, auth, pending[0]["id"], "approve"))
        await telegram.wait_for("sendMessage", 2)
        waiting, answer = telegram.sent(TELEGRAM_TOKEN)
        assert "must approve this first" in waiting["text"] and "refunded" in answer["text"]
        assert waiting["chat_id"] == answer["chat_id"] == "-100777"
    finally:
        await telegram.close()


async def test_a_turn_that_pauses_twice_goes_on_in_its_stream(make_client, tmp_path, openai_fake):
    """The model calls the tool, is given the result, and calls it again: two approvals in
    one turn, the second asked in the same stream; one answer with both results."""
    providers = {"oai": {"kind": "openai", "base_url": openai_fake.base_url, "api_key": "k"}}
    client = await make_client(providers=providers, **FAST)
    auth = bearer(await new_api_key(client))
    agent = await new_agent(client, auth, model="oai/gpt-4o-mini")
    await new_tool(
        client,
        auth,
        agent["id"],
        "refund",
        inputSchema=ORDER_SCHEMA,
        mockResponse='{"refunded": true}',
        requiresApproval=True,
    )
    openai_fake.script(
        oai.stream(oai.tool_events([("call_1", "refund", ['{"order": "A1"}'])])),
        oai.stream(oai.tool_events([("call_2", "refund", ['{"order": "A2"}'])], "One done.")),
        oai.stream(oai.text_events(["Both ", "done."])),
    )
    stream = await OpenStream.start(
        client, {"agentId": agent["id"], "messages": user("Refund A1 and A2")}
    )
    conversation_id, first = await pending_of(client, auth, stream)
    await data_of(await decide(client, auth, first, "approve"))
    second = (await stream.until("approval_pending"))["approvalId"]
    assert second != first
    await data_of(await decide(client, auth, second, "deny", {"reason": "Only one per day"}))
    rest = [name for name, _ in await stream.rest()]
    assert rest[-1] == "message_stop" and "error" not in rest
    answer = await answer_of(client, auth, conversation_id)
    assert answer["content"] == "One done.\n\nBoth done."
    assert [c["isError"] for c in answer["toolCalls"]] == [False, True]
    assert "Only one per day" in answer["toolCalls"][1]["output"]
    sent = openai_fake.requests[2]["json"]["messages"]
    assert "Only one per day" in sent[-1]["content"]


async def test_the_live_list_ends_like_the_inbox_streams(make_client, tmp_path):
    """The live list lasts `[handoff] max_stream_seconds`, as the inbox's streams do (the
    dashboard reconnects); a client that never hangs up holds no stream for longer."""
    settings = make_settings(tmp_path, handoff={"max_stream_seconds": 0.5}, **FAST)
    client = await make_client(settings)
    auth = bearer(await new_api_key(client))
    resp = await client.get("/api/v1/approvals/events", headers=auth)
    names = [name for name, _ in await OpenStream(resp).rest(timeout=10)]  # then it closes
    assert names == ["approvals"], names
