"""HTTP tools keep their shape, and outbound addresses are checked when they are saved.

Tool calls go through public chat with the builtin model's `/tool NAME {json}` command, as
a visitor would drive them; a real receiver on 127.0.0.1 records exactly what arrived.
"""

from __future__ import annotations

import json
import socket
from typing import Any

import pytest
from aiohttp import web
from aiohttp.abc import AbstractResolver, ResolveResult

from agentsvc.api import app_keys
from agentsvc.app import create_app
from agentsvc.services.tools.url import UrlRefused, build_url
from tests.support.accounts import bearer, new_api_key
from tests.support.chat import Stream, chat, get_conversation, new_agent, user
from tests.support.errors import assert_error
from tests.support.fakes.http_receiver import HttpReceiver
from tests.support.fakes.webhook_receiver import free_port
from tests.support.outbound import StubResolver
from tests.support.settings import make_settings

SECRET = "tok-9f8e7d6c5b4a"  # noqa: S105 (a test secret)
PROPERTIES = {
    "id": {"type": "string"},
    "part": {"type": "string"},
    "q": {"type": "string"},
    "token": {"type": "string"},
    "format": {"type": "string"},
}


@pytest.fixture
async def receiver(aiohttp_server):
    fake = HttpReceiver()
    server = await aiohttp_server(fake.app, host="127.0.0.1")
    fake.base = f"http://127.0.0.1:{server.port}"  # type: ignore[attr-defined]
    fake.port = server.port  # type: ignore[attr-defined]
    return fake


async def _secret(client, auth, name: str, value: str) -> None:
    resp = await client.put(f"/api/v1/secrets/{name}", json={"value": value}, headers=auth)
    assert resp.status == 200, await resp.text()


async def _http_tool(client, auth, agent_id: str, url: str, **over: Any) -> dict:
    body = {
        "agentId": agent_id,
        "name": over.pop("name", "fetch"),
        "description": "Fetch",
        "executionType": "http",
        "inputSchema": {"type": "object", "properties": PROPERTIES},
        "httpUrl": url,
        "httpHeaders": {"Authorization": "Bearer {{TOK}}"},
        **over,
    }
    resp = await client.post("/api/v1/tools", json=body, headers=auth)
    assert resp.status == 201, await resp.text()
    return await resp.json()


async def _call(client, agent_id: str, tool_input: dict, name: str = "fetch") -> tuple[Any, bool]:
    """Call a tool as a visitor would; return its output and isError (the secret never shown)."""
    text = f"/tool {name} {json.dumps(tool_input)}"
    stream: Stream = await chat(client, {"agentId": agent_id, "messages": user(text)})
    assert SECRET not in stream.raw.decode(), stream.raw
    result = stream.of("tool_result")[0]
    return result["output"], result["isError"]


@pytest.fixture
async def shop(client, auth):
    """An agent and the team secret TOK; returns the agent id."""
    await _secret(client, auth, "TOK", SECRET)
    return (await new_agent(client, auth))["id"]


# ── query parameters fixed in httpUrl ──────────────────────────────────────────────────


async def test_model_input_cannot_override_a_fixed_query_parameter(client, auth, receiver, shop):
    await _http_tool(client, auth, shop, receiver.base + "/search?token={{TOK}}&format=json")
    for key in ("token", "format"):
        output, is_error = await _call(client, shop, {key: "override", "q": "shoes"})
        assert is_error is True
        assert output == (f"Input parameter(s) {key} cannot be sent: the tool's URL fixes them"), (
            output
        )
    assert receiver.requests == []  # nothing was sent
    output, is_error = await _call(client, shop, {"q": "shoes"})
    assert is_error is False, output
    got = receiver.requests[-1]
    assert got.query == [("token", SECRET), ("format", "json"), ("q", "shoes")]
    assert got.raw_query == f"token={SECRET}&format=json&q=shoes"


@pytest.mark.parametrize("key", ["TOKEN", " token", "token[]", "token[a]", "Format"])
async def test_fixed_query_parameter_cannot_be_set_by_a_lenient_spelling(
    client, auth, receiver, shop, key
):
    schema = {"type": "object", "properties": {}, "additionalProperties": {"type": "string"}}
    await _http_tool(
        client, auth, shop, receiver.base + "/s?token={{TOK}}&format=json", inputSchema=schema
    )
    output, is_error = await _call(client, shop, {key: "override"})
    assert is_error is True and "the tool's URL fixes them" in output, output
    assert receiver.requests == []


async def test_fixed_query_parameter_stays_for_body_methods(client, auth, receiver, shop):
    await _http_tool(client, auth, shop, receiver.base + "/orders?token={{TOK}}", httpMethod="POST")
    output, is_error = await _call(client, shop, {"token": "override", "q": "x"})
    assert is_error is False, output
    got = receiver.requests[-1]
    assert got.query == [("token", SECRET)]  # the body carries input; the query is the URL's
    assert json.loads(got.body) == {"token": "override", "q": "x"}


async def test_query_placeholder_is_one_query_value(client, auth, receiver, shop):
    await _http_tool(client, auth, shop, receiver.base + "/search?q={q}&token={{TOK}}")
    output, is_error = await _call(client, shop, {"q": "a&token=evil#x+y"})
    assert is_error is False, output
    got = receiver.requests[-1]
    assert got.query == [("q", "a&token=evil#x+y"), ("token", SECRET)]


# ── {param} is one encoded path segment ─────────────────────────────────────────────────


@pytest.mark.parametrize(
    ("value", "raw_path"),
    [
        ("a/b", "/items/a%2Fb/detail"),
        ("../admin", "/items/..%2Fadmin/detail"),
        (";jsessionid=1", "/items/%3Bjsessionid%3D1/detail"),
        ("..;", "/items/..%3B/detail"),
        ("x?y#z", "/items/x%3Fy%23z/detail"),
        ("%2e%2e", "/items/%252e%252e/detail"),
        ("a b\\c", "/items/a%20b%5Cc/detail"),
        ("...", "/items/.../detail"),
        ("é", "/items/%C3%A9/detail"),
    ],
)
async def test_path_param_is_one_encoded_segment(client, auth, receiver, shop, value, raw_path):
    await _http_tool(client, auth, shop, receiver.base + "/items/{id}/detail")
    output, is_error = await _call(client, shop, {"id": value})
    assert is_error is False, output
    got = receiver.requests[-1]
    assert got.path == raw_path
    assert got.headers["Authorization"] == f"Bearer {SECRET}"  # went to that path only


@pytest.mark.parametrize(
    ("tool_input", "message"),
    [
        ({"id": ".."}, 'cannot be "." or ".."'),
        ({"id": "."}, 'cannot be "." or ".."'),
        ({"id": ".", "part": "."}, 'cannot be "." or ".."'),  # "{id}{part}" makes ".."
        ({"id": ""}, "id, part: a URL path segment cannot be empty"),
        ({"part": "x"}, "Missing input parameter(s) for the URL: id"),
    ],
)
async def test_dot_and_empty_path_segments_are_refused(
    client, auth, receiver, shop, tool_input, message
):
    await _http_tool(client, auth, shop, receiver.base + "/items/{id}{part}/secret")
    tool_input.setdefault("part", "")
    output, is_error = await _call(client, shop, tool_input)
    assert is_error is True and message in output, output
    assert receiver.requests == []


# ── scheme, host and port are the template's ────────────────────────────────────────────


async def test_param_in_host_is_refused_on_save(client, auth, shop):
    for url in (
        "https://{id}.api.example.com/x",
        "https://api.example.com:{id}/x",
        "https://{{TOK}}@{id}/x",
    ):
        resp = await client.post(
            "/api/v1/tools",
            json={
                "agentId": shop,
                "name": "fetch",
                "description": "Fetch",
                "executionType": "http",
                "inputSchema": {"type": "object", "properties": PROPERTIES},
                "httpUrl": url,
            },
            headers=auth,
        )
        await assert_error(resp, 400, "VALIDATION_ERROR", "httpUrl")


def test_param_in_host_is_refused_when_run():
    """A tool saved before the save-time rule still cannot send input to another host."""
    for template in ("https://{id}.example.com/x", "http://h.example:{id}/", "https://{id}/"):
        with pytest.raises(UrlRefused, match="host"):
            build_url(template, {}, {"id": "evil.example"})
    built = build_url("https://{{SUB}}.example.com/{id}", {"SUB": "acme"}, {"id": "@evil.com"})
    assert str(built.url) == "https://acme.example.com/%40evil.com"
    assert built.url.host == "acme.example.com"


async def test_secret_host_is_kept_and_input_stays_in_the_path(aiohttp_client, tmp_path, receiver):
    app = create_app(make_settings(tmp_path))
    app[app_keys.outbound_resolver_key] = StubResolver("127.0.0.1")
    client = await aiohttp_client(app)
    auth = bearer(await new_api_key(client))
    await _secret(client, auth, "TOK", SECRET)
    await _secret(client, auth, "SUB", "acme-7f3a")
    agent_id = (await new_agent(client, auth))["id"]
    await _http_tool(client, auth, agent_id, f"http://{{{{SUB}}}}.example:{receiver.port}/u/{{id}}")
    output, is_error = await _call(client, agent_id, {"id": "x@evil.example:1/"})
    assert is_error is False, output
    got = receiver.requests[-1]
    assert got.headers["Host"] == f"acme-7f3a.example:{receiver.port}"
    assert got.path == "/u/x%40evil.example%3A1%2F"


# ── errors and outputs never show a secret value ────────────────────────────────────────


class _NoSuchHost(AbstractResolver):
    """DNS that knows no name, failing the way getaddrinfo does (naming the host)."""

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        raise OSError(socket.EAI_NONAME, f"Name or service not known: {host}")

    async def close(self) -> None:
        pass


async def test_unreachable_secret_host_is_not_shown(aiohttp_client, tmp_path):
    app = create_app(make_settings(tmp_path))
    app[app_keys.outbound_resolver_key] = _NoSuchHost()
    client = await aiohttp_client(app)
    auth = bearer(await new_api_key(client))
    await _secret(client, auth, "TOK", SECRET)
    await _secret(client, auth, "SUB", "Acme-Private-7f3a")  # hosts come back lowercased
    agent_id = (await new_agent(client, auth))["id"]
    await _http_tool(client, auth, agent_id, "https://{{SUB}}.example/x?key={{TOK}}")
    text = '/tool fetch {"q": "hi"}'
    stream = await chat(client, {"agentId": agent_id, "messages": user(text)})
    result = stream.of("tool_result")[0]
    assert result["isError"] is True
    assert "{{SUB}}.example" in result["output"], result
    raw = stream.raw.decode().lower()
    assert "acme-private-7f3a" not in raw and SECRET not in raw
    conv = await get_conversation(client, auth, stream.start["conversationId"])
    shown = json.dumps(conv).lower()
    assert "acme-private-7f3a" not in shown and SECRET not in shown


async def test_connection_error_to_secret_host_is_not_shown(aiohttp_client, tmp_path):
    app = create_app(make_settings(tmp_path))
    app[app_keys.outbound_resolver_key] = StubResolver("127.0.0.1")
    client = await aiohttp_client(app)
    auth = bearer(await new_api_key(client))
    await _secret(client, auth, "TOK", SECRET)
    await _secret(client, auth, "SUB", "billing-7f3a")
    agent_id = (await new_agent(client, auth))["id"]
    await _http_tool(client, auth, agent_id, f"http://{{{{SUB}}}}.example:{free_port()}/x")
    output, is_error = await _call(client, agent_id, {})
    assert is_error is True
    assert output.startswith("HTTP call failed: could not connect to {{SUB}}.example"), output
    assert "billing-7f3a" not in output


async def test_echoed_secret_is_replaced_by_its_name(client, auth, receiver, shop):
    await _secret(client, auth, "PATHKEY", "k/ey 1")
    await _http_tool(client, auth, shop, receiver.base + "/echo/{{PATHKEY}}?token={{TOK}}")
    output, is_error = await _call(client, shop, {"q": "x"})
    assert is_error is False, output
    got = receiver.requests[-1]
    assert got.path == "/echo/k%2Fey%201" and ("token", SECRET) in got.query  # sent as is
    # The echo (path and query) comes back with every secret spelled as its name.
    assert output["body"]["path"] == "/echo/{{PATHKEY}}"
    assert output["body"]["query"] == [["token", "{{TOK}}"], ["q", "x"]]


async def test_error_status_body_echoing_a_secret_is_scrubbed(client, auth, receiver, shop):
    await _http_tool(client, auth, shop, receiver.base + "/status/401?token={{TOK}}")
    output, is_error = await _call(client, shop, {})
    assert is_error is True and output == {"status": 401, "body": {"error": "nope"}}
    await _http_tool(client, auth, shop, receiver.base + "/x?t={{TOK}}", name="plain")
    output, _ = await _call(client, shop, {}, name="plain")
    assert json.dumps(output).count("{{TOK}}") == 1, output


# ── outbound addresses checked on save (allow_private = false) ──────────────────────────

PRIVATE_HOSTS = [
    ("127.0.0.1", "127.0.0.1"),
    ("10.0.0.5", "10.0.0.5"),
    ("172.16.3.4", "172.16.3.4"),
    ("192.168.1.1", "192.168.1.1"),
    ("169.254.169.254", "169.254.169.254"),
    ("[::1]", "::1"),
    ("[fe80::1]", "fe80::1"),
    ("[::ffff:127.0.0.1]", "::ffff:7f00:1, that is 127.0.0.1"),
    ("2130706433", "2130706433, that is 127.0.0.1"),
    ("0x7f000001", "0x7f000001, that is 127.0.0.1"),
    ("127.1", "127.1, that is 127.0.0.1"),
    ("0177.0.0.1", "0177.0.0.1, that is 127.0.0.1"),
    ("127.0.0.1.", "127.0.0.1"),
    ("[fe80::1%25eth0]", "fe80::1%25eth0"),
    ("localhost", "localhost"),
    ("LOCALHOST.", "localhost"),
    ("api.localhost", "api.localhost"),
    ("0.0.0.0", "0.0.0.0"),
]


def _refusal(field: str, shown: str) -> str:
    return (
        f"{field}: points to a private address ({shown}); "
        "set [outbound] allow_private = true to allow it"
    )


@pytest.fixture
async def guarded(make_client):
    client = await make_client(outbound={"allow_private": False})
    auth = bearer(await new_api_key(client))
    agent_id = (await new_agent(client, auth))["id"]
    return client, auth, agent_id


def _http_body(agent_id: str, url: str) -> dict:
    return {
        "agentId": agent_id,
        "name": "fetch",
        "description": "Fetch",
        "executionType": "http",
        "inputSchema": {"type": "object", "properties": PROPERTIES},
        "httpUrl": url,
    }


def _form_body(agent_id: str, **over: Any) -> dict:
    return {
        "agentId": agent_id,
        "name": "contact",
        "description": "Contact form",
        "executionType": "form",
        "formSchema": {"fields": [{"name": "email", "label": "E-mail", "type": "email"}]},
        "formExecutionMode": "webhook",
        "formWebhookUrl": "https://hooks.example.com/in",
        **over,
    }


@pytest.mark.parametrize(("host", "shown"), PRIVATE_HOSTS)
async def test_private_tool_url_is_refused_on_create(guarded, host, shown):
    client, auth, agent_id = guarded
    url = f"http://{host}:8080/items/{{id}}?key={{{{TOK}}}}"
    resp = await client.post("/api/v1/tools", json=_http_body(agent_id, url), headers=auth)
    error = await assert_error(resp, 400, "VALIDATION_ERROR")
    assert error["message"] == _refusal("httpUrl", shown)


async def test_private_tool_url_is_refused_on_update(guarded):
    client, auth, agent_id = guarded
    resp = await client.post(
        "/api/v1/tools", json=_http_body(agent_id, "https://api.example.com/x"), headers=auth
    )
    assert resp.status == 201, await resp.text()
    tool_id = (await resp.json())["id"]
    resp = await client.put(
        f"/api/v1/tools/{tool_id}", json={"httpUrl": "http://192.168.0.10/x"}, headers=auth
    )
    error = await assert_error(resp, 400, "VALIDATION_ERROR")
    assert error["message"] == _refusal("httpUrl", "192.168.0.10")
    resp = await client.get(f"/api/v1/tools/{tool_id}", headers=auth)
    assert (await resp.json())["httpUrl"] == "https://api.example.com/x"  # unchanged


@pytest.mark.parametrize(
    "url",
    [
        "https://internal.example/x",  # a name: checked on its resolved address at send time
        "https://{{HOST}}/x",  # a host made of a secret is only known at send time
        "https://{{SUB}}.example.com/x",
        "http://8.8.8.8/x",
        "https://[2001:4860:4860::8888]/x",
        "https://localhost.example.com/x",
        "https://mylocalhost/x",
    ],
)
async def test_public_or_unknown_addresses_are_saved(guarded, url):
    client, auth, agent_id = guarded
    resp = await client.post("/api/v1/tools", json=_http_body(agent_id, url), headers=auth)
    assert resp.status == 201, await resp.text()


async def test_private_addresses_are_saved_when_allowed(client, auth, shop):
    resp = await client.post(
        "/api/v1/tools", json=_http_body(shop, "http://127.0.0.1:9/x"), headers=auth
    )
    assert resp.status == 201, await resp.text()


async def test_private_form_webhook_url_is_refused_on_create_and_update(guarded):
    client, auth, agent_id = guarded
    body = _form_body(agent_id, formWebhookUrl="http://10.1.2.3/hook")
    resp = await client.post("/api/v1/tools", json=body, headers=auth)
    error = await assert_error(resp, 400, "VALIDATION_ERROR")
    assert error["message"] == _refusal("formWebhookUrl", "10.1.2.3")

    resp = await client.post("/api/v1/tools", json=_form_body(agent_id), headers=auth)
    assert resp.status == 201, await resp.text()
    tool_id = (await resp.json())["id"]
    resp = await client.put(
        f"/api/v1/tools/{tool_id}", json={"formWebhookUrl": "http://localhost:8080/"}, headers=auth
    )
    error = await assert_error(resp, 400, "VALIDATION_ERROR")
    assert error["message"] == _refusal("formWebhookUrl", "localhost")


@pytest.mark.parametrize(
    ("action", "field"),
    [
        ({"type": "webhook", "url": "http://127.0.0.1:9/a"}, "formPostActions.1.url"),
        ({"type": "webhook", "webhookUrl": "http://127.0.0.1:9/a"}, "formPostActions.1.webhookUrl"),
        (
            {"type": "team_chat", "webhookUrl": "http://127.0.0.1:9/c", "message": "new"},
            "formPostActions.1.webhookUrl",
        ),
    ],
)
async def test_private_post_action_url_is_refused_on_create_and_update(guarded, action, field):
    client, auth, agent_id = guarded
    public = {"type": "webhook", "url": "https://hooks.example.com/a"}
    body = _form_body(agent_id, formPostActions=[public, action])
    resp = await client.post("/api/v1/tools", json=body, headers=auth)
    error = await assert_error(resp, 400, "VALIDATION_ERROR")
    assert error["message"] == _refusal(field, "127.0.0.1")

    resp = await client.post(
        "/api/v1/tools", json=_form_body(agent_id, formPostActions=[public]), headers=auth
    )
    assert resp.status == 201, await resp.text()
    tool_id = (await resp.json())["id"]
    resp = await client.put(
        f"/api/v1/tools/{tool_id}", json={"formPostActions": [public, action]}, headers=auth
    )
    error = await assert_error(resp, 400, "VALIDATION_ERROR")
    assert error["message"] == _refusal(field, "127.0.0.1")


async def test_secret_cut_by_the_response_cap_is_not_shown(client, auth, aiohttp_server, shop):
    cap = client.app[app_keys.outbound_key].max_response_bytes
    app = web.Application()

    async def big(request: web.Request) -> web.Response:
        return web.Response(text="a" * (cap - 6) + SECRET + "tail")

    app.router.add_get("/big", big)
    server = await aiohttp_server(app, host="127.0.0.1")
    await _http_tool(client, auth, shop, f"http://127.0.0.1:{server.port}/big?k={{{{TOK}}}}")
    output, is_error = await _call(client, shop, {})
    assert is_error is False and output["truncated"] is True
    assert SECRET[:6] not in output["body"] and output["body"].startswith("aaaa")
