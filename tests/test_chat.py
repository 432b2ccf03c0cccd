"""POST /chat end to end: the builtin model, both provider kinds, the tool loop, persistence."""

from __future__ import annotations

import asyncio
import time

import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from agentsvc.api import app_keys
from agentsvc.llm.builtin import NOTHING_FOUND
from tests.support.accounts import bearer, new_api_key
from tests.support.chat import Stream, chat, get_conversation, new_agent, new_tool, user
from tests.support.errors import assert_error
from tests.support.fakes import anthropic_server as anth
from tests.support.fakes import openai_server as oai

PROMPT = (
    "You are the assistant of Velo, a bicycle shop in Lyon. "
    "Our opening hours are 9:00 to 18:00 from Monday to Saturday. "
    "Repairs take two working days. We sell city bikes and cargo bikes."
)
CITY = {
    "type": "object",
    "properties": {"city": {"type": "string"}},
    "required": ["city"],
}


@pytest.fixture
async def pclient(make_client, openai_fake, anthropic_fake):
    """A client whose configuration names both fake providers."""
    return await make_client(
        providers={
            "oai": {"kind": "openai", "base_url": openai_fake.base_url, "api_key": "k"},
            "anth": {"kind": "anthropic", "base_url": anthropic_fake.base_url, "api_key": "k"},
        },
        chat={"keepalive_seconds": 0.05},
    )


@pytest.fixture
async def pauth(pclient):
    return bearer(await new_api_key(pclient))


@pytest.fixture
async def slow_tool_server():
    """An HTTP tool target answering after 0.3 s, recording when each call arrived."""
    arrivals: list[float] = []

    async def handle(request: web.Request) -> web.Response:
        arrivals.append(time.monotonic())
        await asyncio.sleep(0.3)
        return web.json_response({"city": request.query.get("city"), "sky": "clear"})

    app = web.Application()
    app.router.add_get("/weather", handle)
    server = TestServer(app, host="127.0.0.1")
    await server.start_server()
    yield f"http://127.0.0.1:{server.port}/weather", arrivals
    await server.close()


# ── The builtin model ──────────────────────────────────────────────────────────────────


async def test_builtin_answer_streams_in_order_and_is_stored(client, auth):
    agent = await new_agent(client, auth, systemPrompt=PROMPT)
    stream = await chat(
        client, {"agentId": agent["id"], "messages": user("What are your opening hours?")}
    )
    assert stream.names[0] == "message_start"
    assert stream.names[1] == "content_block_start"
    assert stream.names[-2:] == ["content_block_stop", "message_stop"]
    assert stream.start["conversationId"].startswith("conv_")
    assert stream.start["messageId"].startswith("msg_")
    assert len(stream.of("content_block_delta")) >= 2
    assert stream.text == "Our opening hours are 9:00 to 18:00 from Monday to Saturday."
    assert stream.of("content_block_start")[0]["index"] == 0

    conv = await get_conversation(client, auth, stream.start["conversationId"])
    assert conv["title"] == "What are your opening hours?"
    assert [(m["role"], m["content"]) for m in conv["messages"]] == [
        ("user", "What are your opening hours?"),
        ("assistant", stream.text),
    ]
    assert conv["messages"][1]["id"] == stream.start["messageId"]
    assert conv["messages"][1]["status"] == "complete"


async def test_builtin_is_deterministic_and_says_when_it_found_nothing(client, auth):
    agent = await new_agent(client, auth, systemPrompt=PROMPT)
    body = {"agentId": agent["id"], "messages": user("How long do REPAIRS take?")}
    first, second = await chat(client, body), await chat(client, body)
    assert first.text == second.text == "Repairs take two working days."
    nothing = await chat(client, {"agentId": agent["id"], "messages": user("Quantum flux?")})
    assert nothing.text == NOTHING_FOUND


async def test_title_is_first_user_message_shortened(client, auth):
    agent = await new_agent(client, auth)
    long = "word " * 40
    stream = await chat(client, {"agentId": agent["id"], "messages": user(long)})
    conv = await get_conversation(client, auth, stream.start["conversationId"])
    assert len(conv["title"]) == 80 and conv["title"].startswith("word word")


# ── Validation before the stream opens ─────────────────────────────────────────────────


async def test_bad_requests_are_json_errors(client, auth):
    agent = await new_agent(client, auth)
    cases = [
        ({"messages": user("hi")}, 400, "agentId"),
        ({"agentId": agent["id"], "messages": []}, 400, "messages"),
        ({"agentId": agent["id"], "messages": [{"role": "system", "content": "x"}]}, 400, "role"),
        (
            {"agentId": agent["id"], "messages": [{"role": "assistant", "content": "x"}]},
            400,
            "last",
        ),
        ({"agentId": agent["id"], "messages": user("   ")}, 400, "empty"),
        ({"agentId": agent["id"], "messages": user("hi"), "extra": 1}, 400, "extra"),
        ({"agentId": "agt_nope", "messages": user("hi")}, 404, "Agent"),
        ({"agentId": agent["id"], "messages": user("hi"), "conversationId": "conv_x"}, 404, None),
    ]
    for body, status, text in cases:
        resp = await client.post("/api/v1/chat", json=body)
        code = {400: "VALIDATION_ERROR", 404: "NOT_FOUND"}[status]
        await assert_error(resp, status, code, text)
    resp = await client.post("/api/v1/chat", data=b"{not json", headers={})
    await assert_error(resp, 400, "VALIDATION_ERROR", "JSON")


async def test_bearer_is_optional_but_checked(client, auth):
    agent = await new_agent(client, auth)
    resp = await client.post(
        "/api/v1/chat",
        json={"agentId": agent["id"], "messages": user("hi")},
        headers=bearer("sk_wrong"),
    )
    await assert_error(resp, 401, "UNAUTHORIZED", "Invalid API key")
    other = bearer(await new_api_key(client, "other@example.com"))
    resp = await client.post(
        "/api/v1/chat", json={"agentId": agent["id"], "messages": user("hi")}, headers=other
    )
    await assert_error(resp, 404, "NOT_FOUND")
    ok = await chat(client, {"agentId": agent["id"], "messages": user("hi")}, headers=auth)
    assert ok.names[-1] == "message_stop"


async def test_public_chat_is_rate_limited_per_ip(make_client):
    client = await make_client(ratelimit={"public_chat_per_minute": 2})
    auth = bearer(await new_api_key(client))
    agent = await new_agent(client, auth)
    body = {"agentId": agent["id"], "messages": user("hi")}
    for _ in range(2):
        await chat(client, body)
    resp = await client.post("/api/v1/chat", json=body)
    await assert_error(resp, 429, "RATE_LIMITED")
    assert int(resp.headers["Retry-After"]) >= 1
    # An API key is limited by its team's plan instead.
    stream = await chat(client, body, headers=auth)
    assert stream.names[-1] == "message_stop"


async def test_cors_headers_on_the_stream(client, auth):
    agent = await new_agent(client, auth)
    resp = await client.post("/api/v1/chat", json={"agentId": agent["id"], "messages": user("hi")})
    assert resp.headers["Access-Control-Allow-Origin"] == "*"
    assert resp.headers["Cache-Control"] == "no-cache"
    await resp.read()


# ── Conversations, sessions and identified users ───────────────────────────────────────


async def test_public_continuation_is_bound_to_the_session(client, auth):
    agent = await new_agent(client, auth, systemPrompt=PROMPT)
    first = await chat(
        client,
        {
            "agentId": agent["id"],
            "messages": user("Do you sell cargo bikes?"),
            "sessionId": "sess-1",
            "user": {"id": "u-42", "email": "ann@example.com", "name": "Ann"},
        },
    )
    conv_id = first.start["conversationId"]
    again = {
        "agentId": agent["id"],
        "conversationId": conv_id,
        "messages": user("And repairs?"),
    }
    for session in (None, "sess-2"):
        body = {**again, "sessionId": session} if session else again
        await assert_error(await client.post("/api/v1/chat", json=body), 404, "NOT_FOUND")
    second = await chat(client, {**again, "sessionId": "sess-1"})
    assert second.start["conversationId"] == conv_id
    assert second.text == "Repairs take two working days."
    third = await chat(client, {**again, "messages": user("Hours?")}, headers=auth)
    assert third.start["conversationId"] == conv_id

    conv = await get_conversation(client, auth, conv_id)
    assert conv["sessionId"] == "sess-1"
    # Public, and the agent has no identity secret: recorded as declared, nothing checked.
    assert conv["user"] == {
        "id": "u-42",
        "email": "ann@example.com",
        "name": "Ann",
        "verified": False,
        "verifiedBy": None,
    }
    assert [m["role"] for m in conv["messages"]] == ["user", "assistant"] * 3
    assert conv["title"] == "Do you sell cargo bikes?"


async def test_conversation_of_another_agent_cannot_be_continued(client, auth):
    a = await new_agent(client, auth)
    b = await new_agent(client, auth)
    s = await chat(client, {"agentId": a["id"], "messages": user("hi")}, headers=auth)
    resp = await client.post(
        "/api/v1/chat",
        json={
            "agentId": b["id"],
            "conversationId": s.start["conversationId"],
            "messages": user("hi"),
        },
        headers=auth,
    )
    await assert_error(resp, 404, "NOT_FOUND", "Conversation")


async def test_continuation_sends_stored_history_to_the_model(pclient, pauth, openai_fake):
    agent = await new_agent(pclient, pauth, model="oai/gpt-4o-mini", systemPrompt="Be nice.")
    openai_fake.script(
        oai.stream(oai.text_events(["Hi Ann"])), oai.stream(oai.text_events(["Sure"]))
    )
    first = await chat(pclient, {"agentId": agent["id"], "messages": user("I am Ann")}, pauth)
    await chat(
        pclient,
        {
            "agentId": agent["id"],
            "conversationId": first.start["conversationId"],
            "messages": user("Who am I?"),
        },
        pauth,
    )
    sent = openai_fake.requests[1]["json"]["messages"]
    assert sent == [
        {"role": "system", "content": "Be nice."},
        {"role": "user", "content": "I am Ann"},
        {"role": "assistant", "content": "Hi Ann"},
        {"role": "user", "content": "Who am I?"},
    ]


async def test_a_long_conversation_sends_its_newest_messages_only(pclient, pauth, openai_fake):
    """The model reads a stored conversation's newest 100 messages, within 100,000
    characters: a channel's conversation with one person goes on for months."""
    agent = await new_agent(pclient, pauth, model="oai/gpt-4o-mini", systemPrompt="Be nice.")
    openai_fake.script(*(oai.stream(oai.text_events(["Yes"])) for _ in range(3)))
    first = await chat(pclient, {"agentId": agent["id"], "messages": user("m-first")}, pauth)
    conversation_id = first.start["conversationId"]
    db = pclient.app[app_keys.db_key]

    async def stored(tag: str, count: int, size: int) -> None:
        # Set-up: `count` more messages, as the service writes them, alternately the
        # visitor's and the agent's, each `size` characters long.
        async with db.write() as tx:
            await tx.execute(
                "WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < ?)"
                " INSERT INTO messages (id, conversation_id, role, content, created_at)"
                " SELECT 'msg_' || ? || i, ?,"
                " CASE WHEN i % 2 = 0 THEN 'user' ELSE 'assistant' END,"
                " ? || i || ?, '2026-02-01T00:00:00.000Z' FROM n",
                (count - 1, tag, conversation_id, tag, "." * (size - len(tag) - 3)),
            )

    async def sent_after(question: str) -> list[dict]:
        turn = {"agentId": agent["id"], "conversationId": conversation_id}
        await chat(pclient, {**turn, "messages": user(question)}, pauth)
        return openai_fake.requests[-1]["json"]["messages"]

    await stored("a", 150, 10)
    sent = await sent_after("m-second")
    assert len(sent) == 1 + 100 + 1  # the system prompt, the newest 100, the question
    assert sent[1]["content"].startswith("a50") and sent[-2]["content"].startswith("a149")
    assert sent[-1] == {"role": "user", "content": "m-second"}
    await stored("b", 60, 2_000)  # 1,998 to 2,000 characters each: 119,900 in all
    sent = await sent_after("m-third")
    history = sent[1:-1]  # the newest 50 of the long ones: 99,950 characters
    assert len(history) == 50 and sum(len(m["content"]) for m in history) == 99_950
    assert history[0]["content"].startswith("b10") and history[-1]["content"].startswith("b59")


# ── The tool loop ──────────────────────────────────────────────────────────────────────


async def test_builtin_calls_a_mock_tool_and_answers_with_its_output(client, auth):
    agent = await new_agent(client, auth)
    await new_tool(
        client,
        auth,
        agent["id"],
        "get_price",
        mockResponse='{"price": 42}',
        displayConfig={"type": "product_card", "fieldMappings": {"price": "price"}},
    )
    stream = await chat(client, {"agentId": agent["id"], "messages": user("/tool get_price")})
    assert stream.names == [
        "message_start",
        "tool_use_start",
        "tool_result",
        "content_block_start",
        *["content_block_delta"] * len(stream.of("content_block_delta")),
        "content_block_stop",
        "message_stop",
    ]
    start = stream.of("tool_use_start")[0]
    assert start["toolName"] == "get_price" and start["input"] == {}
    result = stream.of("tool_result")[0]
    assert result["toolUseId"] == start["toolUseId"]
    assert result["output"] == {"price": 42} and result["isError"] is False
    assert result["displayConfig"]["type"] == "product_card"
    assert '"price":42' in stream.text

    conv = await get_conversation(client, auth, stream.start["conversationId"])
    reply = conv["messages"][1]
    assert reply["content"] == stream.text
    assert reply["toolCalls"] == [
        {
            "toolUseId": start["toolUseId"],
            "toolName": "get_price",
            "input": {},
            "output": {"price": 42},
            "isError": False,
        }
    ]


async def test_unknown_tool_and_invalid_input_are_errors_for_the_model(client, auth):
    agent = await new_agent(client, auth)
    await new_tool(client, auth, agent["id"], "weather", inputSchema=CITY, mockResponse="sunny")
    unknown = await chat(client, {"agentId": agent["id"], "messages": user("/tool nope {}")})
    result = unknown.of("tool_result")[0]
    assert result["isError"] is True and "nope" in result["output"]
    assert unknown.text.startswith("The tool nope failed")
    assert unknown.names[-1] == "message_stop"

    bad = await chat(client, {"agentId": agent["id"], "messages": user('/tool weather {"c": 1}')})
    result = bad.of("tool_result")[0]
    assert result["isError"] is True and "city" in result["output"]
    good = await chat(
        client, {"agentId": agent["id"], "messages": user('/tool weather {"city": "Lyon"}')}
    )
    assert good.of("tool_result")[0] == {
        "type": "tool_result",
        "toolUseId": good.of("tool_use_start")[0]["toolUseId"],
        "toolName": "weather",
        "output": "sunny",
        "isError": False,
        "displayConfig": None,
    }


async def test_disabled_tools_are_not_offered(pclient, pauth, openai_fake):
    agent = await new_agent(pclient, pauth, model="oai/gpt-4o-mini")
    await new_tool(pclient, pauth, agent["id"], "on_tool")
    await new_tool(pclient, pauth, agent["id"], "off_tool", isEnabled=False)
    openai_fake.script(oai.stream(oai.tool_events([("c1", "off_tool", ["{}"])])))
    openai_fake.script(oai.stream(oai.text_events(["ok"])))
    stream = await chat(pclient, {"agentId": agent["id"], "messages": user("go")}, pauth)
    offered = [t["function"]["name"] for t in openai_fake.requests[0]["json"]["tools"]]
    assert offered == ["on_tool"]
    # The model named a disabled tool anyway: an error result, not a run.
    assert stream.of("tool_result")[0]["isError"] is True


async def test_form_tool_ends_the_turn_with_the_form(pclient, pauth, openai_fake):
    agent = await new_agent(pclient, pauth, model="oai/gpt-4o-mini")
    schema = {
        "fields": [{"name": "email", "label": "E-mail", "type": "email"}],
        "submitLabel": "Send",
    }
    tool = await new_tool(
        pclient,
        pauth,
        agent["id"],
        "contact",
        executionType="form",
        formSchema=schema,
        formExecutionMode="client",
        formClientHandler="saveLead",
    )
    openai_fake.script(oai.stream(oai.tool_events([("c1", "contact", ["{}"])], text="Fill this:")))
    stream = await chat(pclient, {"agentId": agent["id"], "messages": user("contact me")}, pauth)
    result = stream.of("tool_result")[0]
    assert result["form"] == {
        "toolId": tool["id"],
        "toolName": "contact",
        "formSchema": schema,
        "executionMode": "client",
        "clientHandler": "saveLead",
    }
    assert stream.names[-2:] == ["tool_result", "message_stop"]
    assert len(openai_fake.requests) == 1  # the model is not called again


async def test_parallel_calls_run_concurrently_results_in_call_order(
    pclient, pauth, openai_fake, slow_tool_server
):
    url, arrivals = slow_tool_server
    agent = await new_agent(pclient, pauth, model="oai/gpt-4o-mini")
    await new_tool(
        pclient,
        pauth,
        agent["id"],
        "weather",
        executionType="http",
        httpUrl=url,
        httpMethod="GET",
        inputSchema=CITY,
    )
    calls = [
        ("call_a", "weather", ['{"city": ', '"Paris"}']),
        ("call_b", "weather", ['{"city": "Oslo"}']),
    ]
    openai_fake.script(
        oai.stream(oai.tool_events(calls, interleave=True)),
        oai.stream(oai.text_events(["Both clear."])),
    )
    stream = await chat(pclient, {"agentId": agent["id"], "messages": user("weather?")}, pauth)
    assert len(arrivals) == 2 and abs(arrivals[1] - arrivals[0]) < 0.2  # not one after another
    assert [r["toolUseId"] for r in stream.of("tool_result")] == ["call_a", "call_b"]
    assert stream.of("tool_result")[1]["output"]["body"] == {"city": "Oslo", "sky": "clear"}
    assert stream.comments >= 1  # keep-alive while the tools ran
    second = openai_fake.requests[1]["json"]["messages"]
    assert [m.get("tool_call_id") for m in second if m["role"] == "tool"] == ["call_a", "call_b"]
    assert stream.text == "Both clear."


async def test_at_most_eight_model_calls_the_last_without_tools(pclient, pauth, openai_fake):
    agent = await new_agent(pclient, pauth, model="oai/gpt-4o-mini")
    await new_tool(pclient, pauth, agent["id"], "again", mockResponse="more")
    for i in range(7):
        openai_fake.script(oai.stream(oai.tool_events([(f"c{i}", "again", ["{}"])])))
    openai_fake.script(oai.stream(oai.text_events(["Giving up."])))
    stream = await chat(pclient, {"agentId": agent["id"], "messages": user("loop")}, pauth)
    assert len(openai_fake.requests) == 8
    assert all("tools" in r["json"] for r in openai_fake.requests[:7])
    assert "tools" not in openai_fake.requests[7]["json"]
    assert len(stream.of("tool_result")) == 7
    assert stream.text == "Giving up." and stream.names[-1] == "message_stop"


async def test_anthropic_tool_loop_and_usage(pclient, pauth, anthropic_fake):
    agent = await new_agent(pclient, pauth, model="anth/claude-fake-1")
    await new_tool(pclient, pauth, agent["id"], "weather", inputSchema=CITY, mockResponse="rain")
    anthropic_fake.script(
        anth.stream(
            anth.tool_events([("toolu_1", "weather", ['{"city"', ': "Brest"}'])], "One sec.")
        ),
        anth.stream(anth.text_events(["It ", "rains."])),
    )
    stream = await chat(pclient, {"agentId": agent["id"], "messages": user("weather?")}, pauth)
    assert stream.text == "One sec.It rains."
    idx = [d["index"] for d in stream.of("content_block_start")]
    assert idx == [0, 1]
    assert stream.of("tool_use_start")[0]["input"] == {"city": "Brest"}
    second = anthropic_fake.requests[1]["json"]["messages"]
    assert second[-1]["content"][0]["tool_use_id"] == "toolu_1"
    conv = await get_conversation(pclient, pauth, stream.start["conversationId"])
    reply = conv["messages"][1]
    assert reply["content"] == "One sec.\n\nIt rains."
    assert reply["usage"] == {"inputTokens": 50, "outputTokens": 55, "cost": None}  # no price


# ── Failures ───────────────────────────────────────────────────────────────────────────


async def test_provider_error_mid_stream_keeps_partial_text(pclient, pauth, anthropic_fake):
    agent = await new_agent(pclient, pauth, model="anth/claude-fake-1")
    events = [anth.message_start(), *anth.text_block(0, ["Partial ", "ans"])[:4]]
    anthropic_fake.script(anth.stream([*events, anth.error_event()]))
    stream = await chat(pclient, {"agentId": agent["id"], "messages": user("hi")}, pauth)
    assert stream.text == "Partial ans"
    assert stream.names[-1] == "error"
    assert stream.of("error")[0] == {
        "type": "error",
        "error": {"code": "PROVIDER_ERROR", "message": "provider error: Overloaded"},
    }
    conv = await get_conversation(pclient, pauth, stream.start["conversationId"])
    assert conv["messages"][1]["content"] == "Partial ans"
    assert conv["messages"][1]["status"] == "failed"


async def test_provider_429_before_stream_is_retried(pclient, pauth, openai_fake):
    agent = await new_agent(pclient, pauth, model="oai/gpt-4o-mini")
    openai_fake.script(oai.rate_limited("0"), oai.stream(oai.text_events(["fine"])))
    stream = await chat(pclient, {"agentId": agent["id"], "messages": user("hi")}, pauth)
    assert stream.text == "fine" and len(openai_fake.requests) == 2


async def test_provider_down_is_an_error_event(pclient, pauth, openai_fake):
    agent = await new_agent(pclient, pauth, model="oai/gpt-4o-mini")
    openai_fake.script(*[oai.server_error(500)] * 3)
    stream = await chat(pclient, {"agentId": agent["id"], "messages": user("hi")}, pauth)
    assert stream.names == ["message_start", "error"]
    assert stream.of("error")[0]["error"]["code"] == "PROVIDER_ERROR"
    conv = await get_conversation(pclient, pauth, stream.start["conversationId"])
    assert [m["role"] for m in conv["messages"]] == ["user", "assistant"]
    assert conv["messages"][1]["status"] == "failed"


async def test_dropped_provider_connection_is_an_error_event(pclient, pauth, openai_fake):
    agent = await new_agent(pclient, pauth, model="oai/gpt-4o-mini")
    openai_fake.script(oai.stream(oai.text_events(["Half ", "way"])[:2], drop=True))
    stream = await chat(pclient, {"agentId": agent["id"], "messages": user("hi")}, pauth)
    assert stream.names[-1] == "error" and stream.text == "Half "


async def _wait_for_reply(client, auth, conv_id: str) -> dict:
    for _ in range(100):
        conv = await get_conversation(client, auth, conv_id)
        if len(conv["messages"]) == 2:
            return conv["messages"][1]
        await asyncio.sleep(0.02)
    raise AssertionError("assistant message never stored")


async def test_client_disconnect_stores_what_was_produced(make_client):
    client = await make_client(chat={"builtin_chunk_delay_ms": 20})
    auth = bearer(await new_api_key(client))
    agent = await new_agent(client, auth, systemPrompt="Bikes " + "bikes are great. " * 40)
    resp = await client.post(
        "/api/v1/chat", json={"agentId": agent["id"], "messages": user("bikes")}
    )
    seen = b""
    while b"content_block_delta" not in seen:
        seen += await resp.content.readany()
    start = Stream(seen.split(b"event: content_block_start")[0]).start
    resp.close()
    reply = await _wait_for_reply(client, auth, start["conversationId"])
    assert reply["status"] == "interrupted"
    assert reply["content"].startswith("Bikes")
    assert len(reply["content"]) < len("Bikes " + "bikes are great. " * 3)


async def test_shutdown_ends_open_streams_cleanly(make_client):
    client = await make_client(chat={"builtin_chunk_delay_ms": 50})
    auth = bearer(await new_api_key(client))
    agent = await new_agent(client, auth, systemPrompt="Bikes " + "bikes are great. " * 40)
    resp = await client.post(
        "/api/v1/chat", json={"agentId": agent["id"], "messages": user("bikes")}
    )
    seen = b""
    while b"content_block_delta" not in seen:
        seen += await resp.content.readany()
    assert len(client.app[app_keys.chat_streams_key]) == 1
    await client.app[app_keys.chat_streams_key].close_all()  # what on_shutdown runs
    stream = Stream(seen + await resp.read())
    assert stream.names[-1] == "error"
    assert stream.of("error")[0]["error"]["code"] == "SHUTTING_DOWN"
    reply = await _wait_for_reply(client, auth, stream.start["conversationId"])
    assert reply["status"] == "interrupted" and reply["content"] == stream.text
    assert len(client.app[app_keys.chat_streams_key]) == 0


async def test_text_deltas_are_grouped_into_timed_writes(make_client):
    prompt = "Bikes " + "bikes are great and bikes are fast. " * 3
    counts = {}
    for interval in (0, 150):
        client = await make_client(
            chat={"builtin_chunk_delay_ms": 10, "flush_interval_ms": interval}
        )
        auth = bearer(await new_api_key(client))
        agent = await new_agent(client, auth, systemPrompt=prompt)
        stream = await chat(client, {"agentId": agent["id"], "messages": user("bikes")})
        assert stream.text.startswith("Bikes bikes are great")
        assert stream.names[-2:] == ["content_block_stop", "message_stop"]
        counts[interval] = len(stream.of("content_block_delta"))
        await client.close()
    # Without grouping, one event per chunk of three words; grouped, far fewer.
    assert counts[0] >= len(stream.text.split()) // 3
    assert 2 <= counts[150] < counts[0]


async def test_model_id_split_on_first_slash_and_temperature_mapped(pclient, pauth, openai_fake):
    agent = await new_agent(
        pclient, pauth, model="oai/meta-llama/llama-3.1-8b:free", temperature=30
    )
    openai_fake.script(oai.stream(oai.text_events(["hi"])))
    await chat(pclient, {"agentId": agent["id"], "messages": user("hi")}, pauth)
    sent = openai_fake.requests[0]["json"]
    assert sent["model"] == "meta-llama/llama-3.1-8b:free"
    assert sent["temperature"] == pytest.approx(0.3)


async def test_agent_whose_provider_is_no_longer_configured(make_client, tmp_path, openai_fake):
    from tests.support.settings import make_settings

    providers = {"oai": {"kind": "openai", "base_url": openai_fake.base_url}}
    client = await make_client(providers=providers)
    auth = bearer(await new_api_key(client))
    agent = await new_agent(client, auth, model="oai/gpt-4o-mini")
    await client.close()
    # The operator removed the provider: the same database, a configuration without it.
    restarted = await make_client(make_settings(tmp_path))
    resp = await restarted.post(
        "/api/v1/chat", json={"agentId": agent["id"], "messages": user("hi")}
    )
    await assert_error(resp, 400, "VALIDATION_ERROR", "oai/gpt-4o-mini")
