"""Traces (`[telemetry]`): spans exported over OTLP/HTTP to a real receiver on 127.0.0.1,
decoded with opentelemetry-proto; the W3C traceparent as a tool server and a webhook
receiver get it; people's words only with capture_content; nothing loaded when unset."""

from __future__ import annotations

import ast
import asyncio
import logging
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from aiohttp.test_utils import TestServer

from agentsvc.config import ConfigError, load_settings
from tests.support.accounts import bearer, new_api_key
from tests.support.chat import add_document, chat, new_agent, new_tool, user
from tests.support.fakes import openai_server as oai
from tests.support.fakes.http_receiver import HttpReceiver
from tests.support.fakes.otlp_receiver import OtlpReceiver
from tests.support.fakes.webhook_receiver import free_port
from tests.support.forms import FAST, make_form, submitted, wait_status
from tests.support.knowledge import wait_status as document_ready

ROOT = Path(__file__).resolve().parent.parent
# Words that are the visitor's, the model's or a tool's: never on a span unless captured.
QUESTION = "Where is parcel zebracrossing42 now?"
ANSWER = "Parcel quokkalantern7 is in Lyon."
TOOL_OUTPUT_WORD = "marmaladeharbour"
DOCUMENT = "Parcels are tracked with the tracking tool. Lyon is our hub for parcels."


@pytest.fixture
async def collector():
    receiver = await OtlpReceiver().start()
    yield receiver
    await receiver.close()


@pytest.fixture
async def tool_server():
    fake = HttpReceiver()
    server = TestServer(fake.app, host="127.0.0.1")
    await server.start_server()
    fake.url = str(server.make_url("")).rstrip("/")  # type: ignore[attr-defined]
    yield fake
    await server.close()


def telemetry(endpoint: str, **more) -> dict:
    return {"otlp_endpoint": endpoint, "export_interval_seconds": 0.05, **more}


async def traced_client(make_client, collector, openai_fake, **more):
    client = await make_client(
        providers={"oai": {"kind": "openai", "base_url": openai_fake.base_url, "api_key": "k"}},
        telemetry=telemetry(collector.endpoint, **more),
    )
    return client, bearer(await new_api_key(client))


async def chat_with_a_tool(client, auth, openai_fake, tool_server) -> tuple[dict, object]:
    """An agent with knowledge and an HTTP tool; a turn that calls the tool, then answers."""
    agent = await new_agent(client, auth, model="oai/gpt-4o-mini", systemPrompt="Track parcels.")
    document = await add_document(client, auth, agent["id"], "Parcels", DOCUMENT)
    await document_ready(client, auth, document["id"])
    await new_tool(
        client,
        auth,
        agent["id"],
        "track",
        executionType="http",
        httpMethod="GET",
        httpUrl=f"{tool_server.url}/track?word={TOOL_OUTPUT_WORD}",
        inputSchema={"type": "object", "properties": {"parcel": {"type": "string"}}},
    )
    openai_fake.script(
        oai.stream(oai.tool_events([("call_1", "track", ['{"parcel": "zebracrossing42"}'])])),
        oai.stream(oai.text_events([ANSWER[:10], ANSWER[10:]], usage=(30, 9))),
    )
    stream = await chat(client, {"agentId": agent["id"], "messages": user(QUESTION)}, auth)
    assert stream.text == ANSWER
    return agent, stream


async def test_a_chat_turn_is_a_trace_of_genai_spans(
    make_client, collector, openai_fake, tool_server
):
    client, auth = await traced_client(make_client, collector, openai_fake)
    agent, stream = await chat_with_a_tool(client, auth, openai_fake, tool_server)
    request = "POST /api/v1/chat"
    turn = "invoke_agent Helper"
    await collector.wait_for(request, turn, "execute_tool track", f"retrieval {agent['id']}")

    http = collector.one(request)
    assert http.kind == "server" and http.parent_span_id == ""
    assert http.attributes["http.route"] == "/api/v1/chat"
    assert http.attributes["http.response.status_code"] == 200
    assert http.service == "agentsvc"

    invoke = collector.one(turn)
    assert invoke.trace_id == http.trace_id and invoke.parent_span_id == http.span_id
    conversation_id = stream.start["conversationId"]
    assert invoke.attributes["gen_ai.operation.name"] == "invoke_agent"
    assert invoke.attributes["gen_ai.agent.id"] == agent["id"]
    assert invoke.attributes["gen_ai.conversation.id"] == conversation_id

    first, second = collector.named("chat gpt-4o-mini")
    for span in (first, second):
        assert span.kind == "client" and span.parent_span_id == invoke.span_id
        assert span.attributes["gen_ai.operation.name"] == "chat"
        assert span.attributes["gen_ai.provider.name"] == "openai"
        assert span.attributes["gen_ai.request.model"] == "gpt-4o-mini"
        assert span.attributes["gen_ai.conversation.id"] == conversation_id
        assert span.attributes["server.address"] == "127.0.0.1"
    # The fake reports usage as OpenAI does with stream_options.include_usage.
    assert first.attributes["gen_ai.response.finish_reasons"] == ["tool_call"]
    assert second.attributes["gen_ai.response.finish_reasons"] == ["stop"]
    usage = [
        (s.attributes["gen_ai.usage.input_tokens"], s.attributes["gen_ai.usage.output_tokens"])
        for s in (first, second)
    ]
    assert usage[1] == (30, 9) and all(isinstance(n, int) for n in usage[0])

    tool = collector.one("execute_tool track")
    assert tool.parent_span_id == invoke.span_id and tool.trace_id == http.trace_id
    assert tool.attributes["gen_ai.tool.call.id"] == "call_1"
    assert tool.attributes["agentsvc.tool.execution_type"] == "http"
    assert not tool.error

    retrieval = collector.one(f"retrieval {agent['id']}")
    assert retrieval.trace_id == http.trace_id
    assert retrieval.attributes["gen_ai.operation.name"] == "retrieval"
    assert retrieval.attributes["agentsvc.retrieval.passages"] >= 1

    # The tool server got the trace: same trace id, the tool call's span as parent.
    (call,) = tool_server.requests
    version, trace_id, parent_id, flags = call.headers["traceparent"].split("-")
    assert (version, trace_id, parent_id) == ("00", http.trace_id, tool.span_id)
    assert int(flags, 16) & 1  # sampled

    # Without capture_content, nobody's words: not the question, the answer, the tool's
    # input or output, nor the knowledge or the system prompt.
    raw = b"".join(collector.raw)
    for words in ("zebracrossing42", "quokkalantern7", TOOL_OUTPUT_WORD, "Track parcels", "hub"):
        assert words.encode() not in raw
    assert collector.content_types == {"application/x-protobuf"}


async def test_capture_content_records_the_words(make_client, collector, openai_fake, tool_server):
    client, auth = await traced_client(make_client, collector, openai_fake, capture_content=True)
    agent, _ = await chat_with_a_tool(client, auth, openai_fake, tool_server)
    await collector.wait_for("execute_tool track", f"retrieval {agent['id']}")
    await collector.wait_for("invoke_agent Helper")
    first, second = collector.named("chat gpt-4o-mini")
    assert "zebracrossing42" in first.attributes["gen_ai.input.messages"]
    assert "Track parcels." in first.attributes["gen_ai.system_instructions"]
    assert '"tool_call"' in first.attributes["gen_ai.output.messages"]
    assert "quokkalantern7" in second.attributes["gen_ai.output.messages"]
    assert TOOL_OUTPUT_WORD in second.attributes["gen_ai.input.messages"]
    tool = collector.one("execute_tool track")
    assert "zebracrossing42" in tool.attributes["gen_ai.tool.call.arguments"]
    assert TOOL_OUTPUT_WORD in tool.attributes["gen_ai.tool.call.result"]
    retrieval = collector.one(f"retrieval {agent['id']}")
    assert retrieval.attributes["gen_ai.retrieval.query.text"] == QUESTION


async def test_a_request_sampling_leaves_out_makes_no_span(make_client, collector, tool_server):
    client = await make_client(telemetry=telemetry(collector.endpoint, sample_ratio=0))
    auth = bearer(await new_api_key(client))
    agent = await new_agent(client, auth)
    await new_tool(
        client,
        auth,
        agent["id"],
        "ping",
        executionType="http",
        httpMethod="GET",
        httpUrl=f"{tool_server.url}/ping",
    )
    await chat(client, {"agentId": agent["id"], "messages": user("/tool ping")}, auth)
    await asyncio.sleep(0.5)  # ten export intervals
    assert collector.spans == [] and collector.posts == 0
    # The tool still hears of the trace, marked not sampled.
    (call,) = tool_server.requests
    assert not int(call.headers["traceparent"].rsplit("-", 1)[1], 16) & 1


async def test_a_failing_tool_marks_its_span(make_client, collector, openai_fake, tool_server):
    client, auth = await traced_client(make_client, collector, openai_fake)
    agent = await new_agent(client, auth, model="oai/gpt-4o-mini")
    await new_tool(
        client,
        auth,
        agent["id"],
        "broken",
        executionType="http",
        httpMethod="GET",
        httpUrl=f"{tool_server.url}/status/503",
    )
    openai_fake.script(
        oai.stream(oai.tool_events([("call_9", "broken", ["{}"])])),
        oai.stream(oai.text_events(["Sorry."])),
    )
    await chat(client, {"agentId": agent["id"], "messages": user("hi")}, auth)
    await collector.wait_for("execute_tool broken")
    span = collector.one("execute_tool broken")
    assert span.error and span.attributes["error.type"] == "tool_error"


async def test_an_mcp_tool_call_carries_the_trace(make_client, collector, openai_fake):
    from tests.support.fakes.mcp_server import FakeMcpServer

    server = await FakeMcpServer().start()
    try:
        client, auth = await traced_client(make_client, collector, openai_fake)
        agent = await new_agent(client, auth, model="oai/gpt-4o-mini")
        body = {
            "agentId": agent["id"],
            "name": "shop",
            "description": "The shop's MCP server",
            "executionType": "mcp",
            "mcpUrl": server.url,
            "mcpTools": ["get_order"],
        }
        resp = await client.post("/api/v1/tools", json=body, headers=auth)
        assert resp.status == 201, await resp.text()
        openai_fake.script(
            oai.stream(oai.tool_events([("call_5", "shop__get_order", ['{"id": "A1"}'])])),
            oai.stream(oai.text_events(["Shipped."])),
        )
        await chat(client, {"agentId": agent["id"], "messages": user("A1?")}, auth)
        await collector.wait_for("execute_tool shop__get_order")
        span = collector.one("execute_tool shop__get_order")
        assert span.attributes["agentsvc.tool.execution_type"] == "mcp" and not span.error
        (traceparent,) = server.traceparents
        _, trace_id, parent_id, _ = traceparent.split("-")
        assert (trace_id, parent_id) == (span.trace_id, span.span_id)
    finally:
        await server.close()


async def test_a_form_webhook_delivery_is_a_span_the_receiver_continues(
    make_client, collector, receiver
):
    client = await make_client(webhooks=FAST, telemetry=telemetry(collector.endpoint))
    auth = bearer(await new_api_key(client))
    form = await make_form(client, auth, formWebhookUrl=receiver.url("/hook"))
    sub = await submitted(client, form["id"], {"email": "ann@example.com"})
    await wait_status(client, auth, sub["submissionId"], "webhook_success")
    await collector.wait_for("deliver webhook")
    span = collector.one("deliver webhook")
    assert span.kind == "client" and not span.error
    assert span.attributes["http.response.status_code"] == 200
    assert span.attributes["agentsvc.delivery.attempt"] == 1
    # Its first attempt, made at once, belongs to the submit's trace.
    await collector.wait_for("POST /api/v1/form-submissions/submit")
    submit = collector.one("POST /api/v1/form-submissions/submit")
    assert span.trace_id == submit.trace_id
    (hook,) = receiver.at("/hook")
    _, trace_id, parent_id, _ = hook.headers["traceparent"].split("-")
    assert (trace_id, parent_id) == (span.trace_id, span.span_id)
    assert b"ann@example.com" not in b"".join(collector.raw)


async def test_an_incoming_traceparent_is_continued(make_client, collector):
    client = await make_client(telemetry=telemetry(collector.endpoint))
    parent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
    resp = await client.get("/api/v1/agents/agt_nothing", headers={"traceparent": parent})
    assert resp.status == 401
    await collector.wait_for("GET /api/v1/agents/{id}")
    span = collector.one("GET /api/v1/agents/{id}")
    assert span.trace_id == "0af7651916cd43dd8448eb211c80319c"
    assert span.parent_span_id == "b7ad6b7169203331"
    # A traceparent that is not one starts a trace of its own; the request is answered.
    for bad in ("garbage", "00-" + "0" * 32 + "-" + "0" * 16 + "-01", "00-" + "z" * 2000):
        resp = await client.get("/api/v1/agents/agt_nothing", headers={"traceparent": bad})
        assert resp.status == 401
    await collector.wait_for("GET /api/v1/agents/{id}")
    while len(collector.named("GET /api/v1/agents/{id}")) < 4:
        await asyncio.sleep(0.02)
    for span in collector.named("GET /api/v1/agents/{id}")[1:]:
        assert span.parent_span_id == "" and span.trace_id != "0" * 32
    # An unknown path: the method alone names it (no path, no query).
    await client.get("/no/such/path?secret=1")
    await collector.wait_for("GET")
    assert b"secret" not in b"".join(collector.raw) and b"/no/such" not in b"".join(collector.raw)


@pytest.mark.parametrize(
    ("endpoint", "words"),
    [
        ("ftp://collector:4318", "an http or https URL"),
        ("collector:4318", "an http or https URL"),
        ("http://", "an http or https URL"),
        ("http://collector:99999", "port"),
        ("http://collector:4318/v1/traces?key=1", "query"),
    ],
)
def test_a_bad_endpoint_stops_start_up_with_its_name(endpoint, words):
    with pytest.raises(ConfigError) as caught:
        load_settings(None, environ={}, overrides={"telemetry": {"otlp_endpoint": endpoint}})
    message = str(caught.value)
    assert "telemetry.otlp_endpoint" in message and words in message


def test_serve_with_a_bad_endpoint_stops_with_one_line(tmp_path):
    from tests.support.cli import run

    env = {"AGENTSVC_TELEMETRY_OTLP_ENDPOINT": "collector:4318", "AGENTSVC_SERVER_PORT": "0"}
    result = run(["serve", "--data-dir", str(tmp_path / "data")], tmp_path, **env)
    assert result.returncode != 0
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "telemetry.otlp_endpoint" in lines[0], result.stderr
    assert "Traceback" not in result.stderr


def test_endpoint_forms_and_bad_headers():
    def url(endpoint: str) -> str:
        overrides = {"telemetry": {"otlp_endpoint": endpoint}}
        return load_settings(None, environ={}, overrides=overrides).telemetry.traces_url

    assert url("http://c:4318") == "http://c:4318/v1/traces"
    assert url("https://c.example/otlp/") == "https://c.example/otlp/v1/traces"
    assert url("http://c:4318/v1/traces") == "http://c:4318/v1/traces"
    env = {"AGENTSVC_TELEMETRY_OTLP_ENDPOINT": "http://c:4318"}
    assert load_settings(None, environ=env).telemetry.otlp_endpoint == "http://c:4318"
    with pytest.raises(ConfigError, match="telemetry.headers"):
        load_settings(None, environ={}, overrides={"telemetry": {"headers": {"a": "b\nc"}}})
    with pytest.raises(ConfigError, match="telemetry.headers"):
        load_settings(None, environ={}, overrides={"telemetry": {"headers": {"a b": "c"}}})


# ── a collector that is down or hangs ──────────────────────────────────────────────────
@pytest.fixture
async def hanging_collector():
    receiver = await OtlpReceiver(hang=True).start()
    yield receiver
    await receiver.close()


async def timed_turns(client, auth, count: int) -> list[float]:
    agent = await new_agent(client, auth, systemPrompt="We open at nine on Saturdays.")
    seconds = []
    for _ in range(count):
        started = time.monotonic()
        question = user("When do you open on Saturdays?")
        stream = await chat(client, {"agentId": agent["id"], "messages": question}, auth)
        seconds.append(time.monotonic() - started)
        assert "nine" in stream.text
    return seconds


def telemetry_warnings(caplog) -> list[logging.LogRecord]:
    return [
        r
        for r in caplog.records
        if r.levelno >= logging.WARNING
        and r.name.startswith(("agentsvc.telemetry", "opentelemetry"))
    ]


@pytest.mark.parametrize("collector_state", ["refused", "hanging"])
async def test_a_collector_down_or_hanging_never_slows_chat_and_warns_once(
    make_client, hanging_collector, caplog, collector_state
):
    caplog.set_level(logging.INFO)
    if collector_state == "refused":
        endpoint, why = f"http://127.0.0.1:{free_port()}", "the connection was refused"
    else:
        endpoint, why = hanging_collector.endpoint, "it did not answer within 2 s"
    client = await make_client(
        telemetry=telemetry(endpoint, export_timeout_seconds=2, max_queue_spans=64)
    )
    auth = bearer(await new_api_key(client))
    seconds = sorted(await timed_turns(client, auth, 40))
    # A turn never waits for the collector: each takes milliseconds, where waiting for an
    # export would take its 2 s timeout (generous bounds, for a busy machine).
    assert seconds[len(seconds) // 2] < 0.5 and seconds[int(len(seconds) * 0.9)] < 1.2, seconds
    # Several exports fail meanwhile (every 0.05 s, each up to 1 s): one warning in words.
    deadline = time.monotonic() + 10
    while not telemetry_warnings(caplog) and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    await asyncio.sleep(2.5)
    (warning,) = telemetry_warnings(caplog)
    assert warning.name == "agentsvc.telemetry"
    message = warning.getMessage()
    assert f"could not be sent to the collector at {endpoint}/v1/traces: {why}" in message
    assert "Traceback" not in caplog.text and not warning.exc_info
    assert not [r for r in caplog.records if r.name.startswith("opentelemetry")]
    # The app stops within about the export timeout, whatever the collector does.
    started = time.monotonic()
    await client.close()
    assert time.monotonic() - started < 5


async def test_the_warning_interval_is_the_settings(make_client, caplog):
    client = await make_client(
        telemetry=telemetry(
            f"http://127.0.0.1:{free_port()}",
            export_timeout_seconds=0.2,
            warning_interval_seconds=0.3,
        )
    )
    auth = bearer(await new_api_key(client))
    agent = await new_agent(client, auth)
    deadline = time.monotonic() + 10
    while len(telemetry_warnings(caplog)) < 2 and time.monotonic() < deadline:
        await chat(client, {"agentId": agent["id"], "messages": user("hi")}, auth)
        await asyncio.sleep(0.1)
    first, second = telemetry_warnings(caplog)[:2]
    assert second.created - first.created >= 0.3


async def test_spans_arrive_again_when_the_collector_comes_back(make_client, caplog):
    caplog.set_level(logging.INFO)
    port = free_port()
    client = await make_client(
        telemetry=telemetry(f"http://127.0.0.1:{port}", export_timeout_seconds=0.2)
    )
    auth = bearer(await new_api_key(client))
    await new_agent(client, auth)
    deadline = time.monotonic() + 10
    while not telemetry_warnings(caplog) and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    assert telemetry_warnings(caplog)
    back = OtlpReceiver()
    back.server = TestServer(_traces_app(back), host="127.0.0.1", port=port)
    await back.server.start_server()
    try:
        await new_agent(client, auth, name="Later")
        await back.wait_for("POST /api/v1/agents")
        assert any("reach the collector" in r.getMessage() for r in caplog.records)
    finally:
        await back.close()


def _traces_app(receiver: OtlpReceiver):
    from aiohttp import web

    app = web.Application()
    app.router.add_post("/v1/traces", receiver._traces)
    return app


# ── nothing of OpenTelemetry without an endpoint ─────────────────────────────────────
PROBE = """
import asyncio, sys, tempfile
from pathlib import Path
from aiohttp.test_utils import TestClient, TestServer
from agentsvc.app import create_app
from agentsvc.config import load_settings
from tests.support.accounts import bearer, new_api_key
from tests.support.chat import chat, new_agent, user

async def main(endpoint):
    overrides = {"server": {"data_dir": tempfile.mkdtemp()}}
    if endpoint:
        overrides["telemetry"] = {"otlp_endpoint": endpoint, "export_timeout_seconds": 0.3}
    app = create_app(load_settings(None, environ={}, overrides=overrides))
    client = TestClient(TestServer(app, host="127.0.0.1"))
    await client.start_server()
    try:
        auth = bearer(await new_api_key(client))
        agent = await new_agent(client, auth, systemPrompt="We open at nine on Saturdays.")
        question = user("When do you open on Saturdays?")
        stream = await chat(client, {"agentId": agent["id"], "messages": question}, auth)
        assert "nine" in stream.text, stream.text
    finally:
        await client.close()
    print(sorted(m for m in sys.modules if m.split(".")[0] == "opentelemetry"))

asyncio.run(main(sys.argv[1]))
"""


@pytest.mark.parametrize("endpoint", ["", "http://127.0.0.1:9"])
def test_without_an_endpoint_nothing_of_opentelemetry_is_imported(endpoint):
    """A real app in a process of its own serves a chat turn; then its modules are read."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TEST_", "AGENTSVC_"))}
    found = subprocess.run(
        [sys.executable, "-c", PROBE, endpoint],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        timeout=120,
    )
    assert found.returncode == 0, found.stderr
    loaded = ast.literal_eval(found.stdout.strip().splitlines()[-1])
    if endpoint:
        assert "opentelemetry.sdk.trace" in loaded  # the probe sees them when they load
    else:
        assert loaded == []
