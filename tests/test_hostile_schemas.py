"""Hostile tenants and visitors: schemas that fetch, patterns that backtrack, deep nesting.

A tenant's inputSchema and form patterns are run on every anonymous chat and public
submit: nothing in them may make the service fetch a URL or a file, or take unbounded
time on the event loop (issue 15, items 1-3).
"""

from __future__ import annotations

import statistics
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import orjson
import pytest

from agentsvc.api import app_keys
from agentsvc.services.tenant_input import schemas as tenant_schemas
from tests.support.accounts import bearer, new_api_key
from tests.support.chat import chat, new_agent, new_tool, user
from tests.support.errors import assert_error

EVIL = "^(a+)+$"  # exponential in a backtracking engine: 26 characters took 2.3 s
EVIL_TEXT = "a" * 9_999 + "!"  # 10,000 characters, the most a form text value may have


class LoopbackReceiver:
    """A plain HTTP server in its own thread that records every request it gets.

    Its own thread, so a regression (jsonschema fetching with blocking urllib on the event
    loop) is recorded and answered instead of dead-locking the test.
    """

    def __init__(self) -> None:
        seen = self.requests = []

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 (http.server's name)
                seen.append(self.path)
                body = b'{"type": "string"}'
                self.send_response(200)
                self.send_header("Content-Type", "application/schema+json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def loopback():
    receiver = LoopbackReceiver()
    yield receiver
    receiver.close()


@pytest.fixture
async def app(make_client):
    client = await make_client(ratelimit={"public_chat_per_minute": 1_000_000})
    auth = bearer(await new_api_key(client))
    agent = await new_agent(client, auth)
    return client, auth, agent["id"]


def tool_body(agent_id: str, schema: dict, name: str = "lookup") -> dict:
    return {
        "agentId": agent_id,
        "name": name,
        "description": "Look things up",
        "executionType": "mock",
        "inputSchema": schema,
        "mockResponse": '{"ok": true}',
    }


def with_ref(ref: str, keyword: str = "$ref") -> dict:
    return {"type": "object", "properties": {"q": {keyword: ref}}}


async def store_input_schema(client, tool_id: str, schema: dict) -> None:
    """Write a schema straight into the database, as if saved before the checks existed."""
    async with client.app[app_keys.db_key].write() as conn:
        await conn.execute(
            "UPDATE tools SET input_schema = ? WHERE id = ?",
            (orjson.dumps(schema).decode(), tool_id),
        )


async def run_tool(client, agent_id: str, command: str):
    """Call a tool anonymously through the builtin model; return its tool_result event."""
    stream = await chat(client, {"agentId": agent_id, "messages": user(command)})
    assert "error" not in stream.names, stream.events
    return stream.of("tool_result")[0]


# ── 1. no remote schema resolution ──────────────────────────────────────────────────────


@pytest.mark.parametrize("keyword", ["$ref", "$dynamicRef", "$id"])
async def test_remote_ref_is_refused_on_save_and_never_fetched(app, loopback, keyword):
    client, auth, agent_id = app
    body = tool_body(agent_id, with_ref(loopback.url + "/schema.json", keyword))
    resp = await client.post("/api/v1/tools", json=body, headers=auth)
    await assert_error(resp, 400, "VALIDATION_ERROR", f"inputSchema.properties.q.{keyword}")
    assert loopback.requests == []


async def test_file_ref_is_refused_on_save(app):
    client, auth, agent_id = app
    resp = await client.post(
        "/api/v1/tools", json=tool_body(agent_id, with_ref("file:///etc/hostname")), headers=auth
    )
    error = await assert_error(resp, 400, "VALIDATION_ERROR", "inputSchema.properties.q.$ref")
    assert "local reference" in error["message"]


async def test_remote_ref_is_refused_on_update(app, loopback):
    client, auth, agent_id = app
    tool = await new_tool(client, auth, agent_id, "lookup")
    nested = {"type": "object", "$defs": {"x": {"allOf": [{"$ref": loopback.url + "/x"}]}}}
    resp = await client.put(
        f"/api/v1/tools/{tool['id']}", json={"inputSchema": nested}, headers=auth
    )
    await assert_error(resp, 400, "VALIDATION_ERROR", "inputSchema.$defs.x.allOf.0.$ref")
    assert loopback.requests == []


async def test_local_refs_still_work(app):
    client, auth, agent_id = app
    schema = {
        "type": "object",
        "$defs": {"city": {"type": "string", "minLength": 2}},
        "properties": {"from": {"$ref": "#/$defs/city"}, "to": {"$ref": "#/$defs/city"}},
    }
    await new_tool(client, auth, agent_id, "route", inputSchema=schema)
    good = await run_tool(client, agent_id, '/tool route {"from": "Lyon", "to": "Nice"}')
    assert good["isError"] is False
    bad = await run_tool(client, agent_id, '/tool route {"from": "L"}')
    assert bad["isError"] is True and "from" in bad["output"]


@pytest.mark.parametrize("where", ["loopback", "file"])
async def test_stored_remote_ref_fetches_nothing_when_an_anonymous_chat_calls_the_tool(
    app, loopback, where
):
    client, auth, agent_id = app
    tool = await new_tool(client, auth, agent_id, "lookup")
    ref = loopback.url + "/schema.json" if where == "loopback" else "file:///etc/hostname"
    await store_input_schema(client, tool["id"], with_ref(ref))
    result = await run_tool(client, agent_id, '/tool lookup {"q": "x"}')
    assert result["isError"] is True
    assert "cannot be resolved" in result["output"]
    assert loopback.requests == []


# ── 2. tenant regular expressions run in linear time ────────────────────────────────────


async def make_form(client, auth, agent_id: str, pattern: str) -> dict:
    body = {
        "agentId": agent_id,
        "name": "signup",
        "description": "Sign up",
        "executionType": "form",
        "inputSchema": {"type": "object", "properties": {}},
        "formSchema": {
            "fields": [
                {
                    "name": "word",
                    "label": "Word",
                    "type": "text",
                    "validation": {"pattern": {"value": pattern, "message": "Only a's"}},
                }
            ]
        },
        "formExecutionMode": "client",
        "formClientHandler": "onSignup",
    }
    resp = await client.post("/api/v1/tools", json=body, headers=auth)
    assert resp.status == 201, await resp.text()
    return await resp.json()


async def timed(call) -> tuple[float, object]:
    started = time.perf_counter()
    result = await call()
    return time.perf_counter() - started, result


# The validation's time is measured against a 50 ms median: beside the busy workers of the
# parallel phase a nice-19 check thread waited its turn (62 ms on CI), so it runs alone.
@pytest.mark.needs_the_machine
async def test_catastrophic_form_pattern_on_public_submit_is_answered_fast(app):
    client, auth, agent_id = app
    form = await make_form(client, auth, agent_id, EVIL)
    body = {"toolId": form["id"], "formData": {"word": EVIL_TEXT}, "fieldsCompleted": ["word"]}
    times = []
    for _ in range(5):
        took, resp = await timed(lambda: client.post("/api/v1/form-submissions/submit", json=body))
        await assert_error(resp, 400, "VALIDATION_ERROR", "formData.word: Only a's")
        times.append(took)
    assert statistics.median(times) < 0.05, times
    ok = {"toolId": form["id"], "formData": {"word": "a" * 9_999}, "fieldsCompleted": ["word"]}
    resp = await client.post("/api/v1/form-submissions/submit", json=ok)
    assert resp.status == 200, await resp.text()


@pytest.mark.needs_the_machine
async def test_catastrophic_input_schema_patterns_via_chat_are_answered_fast(app):
    client, auth, agent_id = app
    schema = {
        "type": "object",
        "properties": {"w": {"type": "string", "pattern": EVIL}},
        "patternProperties": {"^(b+)+$": {"type": "integer"}},
    }
    await new_tool(client, auth, agent_id, "evil", inputSchema=schema)
    tool_input = {"w": EVIL_TEXT, "b" * 10_000 + "!": "x", "b" * 5000: "not an integer"}
    command = "/tool evil " + orjson.dumps(tool_input).decode()
    took, result = await timed(lambda: run_tool(client, agent_id, command))
    assert result["isError"] is True
    assert "does not match '^(a+)+$'" in result["output"]
    assert "is not of type 'integer'" in result["output"]
    assert len(result["output"]) < 2000  # the 10,000 characters are not echoed back
    # The whole chat turn, on a loaded machine (a backtracking engine would never end).
    assert took < 10, took
    # The validation itself: well under 50 ms.
    tool_schema = await client.get(f"/api/v1/tools?agentId={agent_id}", headers=auth)
    stored = (await tool_schema.json())[0]["inputSchema"]
    times = []
    for _ in range(5):
        started = time.perf_counter()
        tenant_schemas.validation_errors(stored, tool_input)
        times.append(time.perf_counter() - started)
    assert statistics.median(times) < 0.05, times


@pytest.mark.parametrize(
    "pattern, says",
    [
        (r"(a)\1", "no backreferences or lookaround"),
        (r"(?=a)a", "no backreferences or lookaround"),
        (r"(?<!x)y", "no backreferences or lookaround"),
        (r"(.?){1000}a{1000}", "too complex"),
        ("a" * 1001, "at most 1000 characters"),
    ],
    ids=["backreference", "lookahead", "lookbehind", "too-complex", "too-long"],
)
async def test_patterns_re2_cannot_run_are_refused_on_save(app, pattern, says):
    client, auth, agent_id = app
    field = {
        "name": "word",
        "label": "Word",
        "type": "text",
        "validation": {"pattern": {"value": pattern}},
    }
    body = {
        "agentId": agent_id,
        "name": "form_tool",
        "description": "d",
        "executionType": "form",
        "inputSchema": {"type": "object", "properties": {}},
        "formSchema": {"fields": [field]},
        "formExecutionMode": "client",
        "formClientHandler": "h",
    }
    resp = await client.post("/api/v1/tools", json=body, headers=auth)
    error = await assert_error(
        resp, 400, "VALIDATION_ERROR", "formSchema.fields.0.validation.pattern.value"
    )
    assert says in error["message"]

    in_schema = {"type": "object", "properties": {"w": {"type": "string", "pattern": pattern}}}
    resp = await client.post("/api/v1/tools", json=tool_body(agent_id, in_schema), headers=auth)
    error = await assert_error(resp, 400, "VALIDATION_ERROR", "inputSchema.properties.w")
    assert says in error["message"]

    keyed = {"type": "object", "patternProperties": {pattern: {"type": "string"}}}
    resp = await client.post("/api/v1/tools", json=tool_body(agent_id, keyed), headers=auth)
    error = await assert_error(resp, 400, "VALIDATION_ERROR", "inputSchema.patternProperties")
    assert says in error["message"]


async def test_stored_form_pattern_re2_cannot_run_refuses_the_value_quickly(app):
    client, auth, agent_id = app
    form = await make_form(client, auth, agent_id, "a+")
    schema = {
        "fields": [
            {
                "name": "word",
                "label": "Word",
                "type": "text",
                "validation": {"pattern": {"value": r"^(a|aa)+\1$"}},
            }
        ]
    }
    async with client.app[app_keys.db_key].write() as conn:
        await conn.execute(
            "UPDATE tools SET form_schema = ? WHERE id = ?",
            (orjson.dumps(schema).decode(), form["id"]),
        )
    body = {"toolId": form["id"], "formData": {"word": "a" * 40 + "!"}, "fieldsCompleted": []}
    resp = await client.post("/api/v1/form-submissions/submit", json=body)
    await assert_error(resp, 400, "VALIDATION_ERROR", "formData.word: cannot be checked")


# ── 3. bounded work on the loop ─────────────────────────────────────────────────────────


def nested_schema(levels: int, inner: str = '{"type": "string"}') -> str:
    """A tool body whose inputSchema nests objects `levels` deep, as JSON text."""
    schema = '{"type": "object", "properties": {"a": ' * levels + inner + "}}" * levels
    return (
        '{"agentId": "%s", "name": "deep", "description": "d", "executionType": "mock", '
        '"mockResponse": "x", "inputSchema": ' + schema + "}"
    )


async def post_raw(client, auth, text: str):
    headers = {**auth, "Content-Type": "application/json"}
    return await client.post("/api/v1/tools", data=text.encode(), headers=headers)


async def test_schema_deeper_than_the_limit_is_refused_with_400(app):
    client, auth, agent_id = app
    for levels in (97, 400):
        resp = await post_raw(client, auth, nested_schema(levels) % agent_id)
        await assert_error(resp, 400, "VALIDATION_ERROR", "inputSchema: must not nest deeper")
    any_of = '{"anyOf": [' * 97 + '{"type": "string"}' + "]}" * 97
    resp = await post_raw(client, auth, nested_schema(1, any_of) % agent_id)
    await assert_error(resp, 400, "VALIDATION_ERROR", "32 levels")
    # At the limit (32 levels of JSON: 15 nested objects, each `properties` one more).
    resp = await post_raw(client, auth, nested_schema(15) % agent_id)
    assert resp.status == 201, await resp.text()


async def test_schema_larger_than_the_limit_is_refused_with_400(app):
    client, auth, agent_id = app
    properties = {f"p{i}": {"type": "string", "description": "x" * 100} for i in range(1000)}
    resp = await client.post(
        "/api/v1/tools",
        json=tool_body(agent_id, {"type": "object", "properties": properties}),
        headers=auth,
    )
    await assert_error(resp, 400, "VALIDATION_ERROR", "inputSchema: must be at most 64 KB")


def nested_input(levels: int) -> str:
    """`{"a": {"a": ... {}}}` as JSON text (JSON encoders refuse to nest this deep)."""
    return '{"a": ' * levels + "{}" + "}" * levels


async def test_recursive_schema_with_deeply_nested_input_is_a_tool_error(app):
    client, auth, agent_id = app
    recursive = {"type": "object", "properties": {"a": {"$ref": "#"}}}
    await new_tool(client, auth, agent_id, "tree", inputSchema=recursive)
    shallow = "/tool tree " + nested_input(50)
    assert (await run_tool(client, agent_id, shallow))["isError"] is False
    for levels in (65, 200, 1000):
        command = "/tool tree " + nested_input(levels)
        stream = await chat(client, {"agentId": agent_id, "messages": user(command)})
        assert "error" not in stream.names, stream.events[-1]
        result = stream.of("tool_result")[0]
        assert result["isError"] is True
        assert "64 levels" in result["output"]
        assert stream.names[-1] == "message_stop"


async def test_unique_items_of_many_objects_is_checked_in_linear_time(app):
    client, auth, agent_id = app
    schema = {"type": "object", "properties": {"a": {"type": "array", "uniqueItems": True}}}
    await new_tool(client, auth, agent_id, "uniq", inputSchema=schema)
    distinct = {"a": [{"k": i} for i in range(5000)]}  # jsonschema alone: 64 s, pairwise
    took, result = await timed(
        lambda: run_tool(client, agent_id, "/tool uniq " + orjson.dumps(distinct).decode())
    )
    # 0.2 s on a quiet machine, 2.5 s once on a niced worker beside the browser tests:
    # the bound only has to tell linear from pairwise (64 s).
    assert result["isError"] is False and took < 10, took
    repeated = {"a": [{"k": 1}, [1], {"k": 1.0}]}
    result = await run_tool(client, agent_id, "/tool uniq " + orjson.dumps(repeated).decode())
    assert result["isError"] is True and "non-unique" in result["output"]
    result = await run_tool(client, agent_id, '/tool uniq {"a": [1, true, "1"]}')
    assert result["isError"] is False  # true is not 1 in JSON Schema


async def test_validation_that_runs_out_of_steps_is_a_tool_error(app):
    client, auth, agent_id = app
    # Every item is tried against every branch of a 40-way anyOf: 40 checks per item.
    branches = [{"type": "integer", "minimum": i, "maximum": i} for i in range(40)]
    schema = {
        "type": "object",
        "properties": {"a": {"type": "array", "items": {"anyOf": branches}}},
    }
    await new_tool(client, auth, agent_id, "many", inputSchema=schema)
    command = "/tool many " + orjson.dumps({"a": [99] * 20_000}).decode()
    took, result = await timed(lambda: run_tool(client, agent_id, command))
    assert result["isError"] is True
    assert "too large or complex" in result["output"]
    assert took < 5, took


async def test_deep_mock_response_is_shown_as_text_not_an_internal_error(app):
    client, auth, agent_id = app
    deep_json = "[" * 300 + "]" * 300  # valid JSON, deeper than the JSON encoder writes
    await new_tool(client, auth, agent_id, "deep", mockResponse=deep_json)
    result = await run_tool(client, agent_id, "/tool deep")
    assert result["isError"] is False and result["output"] == deep_json


async def test_post_action_payload_deeper_than_the_limit_is_refused(app):
    client, auth, agent_id = app
    payload = '{"a": ' * 40 + "1" + "}" * 40
    body = (
        '{"agentId": "%s", "name": "f", "description": "d", "executionType": "form", '
        '"inputSchema": {"type": "object", "properties": {}}, '
        '"formSchema": {"fields": [{"name": "n", "label": "N", "type": "text"}]}, '
        '"formExecutionMode": "webhook", "formWebhookUrl": "https://hooks.example.com/in", '
        '"formPostActions": [{"type": "webhook", "url": "https://hooks.example.com/2", '
        '"payload": ' + payload + "}]}"
    ) % agent_id
    resp = await post_raw(client, auth, body)
    await assert_error(resp, 400, "VALIDATION_ERROR", "formPostActions.0.payload: must not nest")
