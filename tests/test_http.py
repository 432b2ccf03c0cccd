"""HTTP behaviour shared by every route: errors, API keys, rate limits, body limits, CORS."""

from __future__ import annotations

import asyncio

from agentsvc.api import all_endpoints, app_keys
from agentsvc.api.routing import Call, RouteTable
from agentsvc.store import accounts
from tests.support.accounts import bearer, new_api_key
from tests.support.errors import assert_error
from tests.support.pg import stored_bytes


async def test_healthz(client):
    resp = await client.get("/healthz")
    assert resp.status == 200
    assert await resp.json() == {"status": "ok"}


async def test_missing_and_invalid_keys_are_401(client, api_key):
    for headers in (bearer("asvc_nope"), bearer(api_key + "x")):
        resp = await client.get("/api/v1/agents", headers=headers)
        await assert_error(resp, 401, "UNAUTHORIZED", "Invalid API key")


async def test_invalid_api_key_says_which_mistake_it_was_and_what_to_send(client, api_key):
    """Issue 29 item 10: a missing header, a key without `Bearer ` and an `X-API-Key`
    header each get their own message, every one naming what to send."""
    for headers, says in (
        ({}, "No API key or session"),
        ({"Authorization": api_key}, "must start with 'Bearer '"),
        ({"Authorization": "Basic abc"}, "must start with 'Bearer '"),
        ({"Authorization": "Bearer "}, "no key after 'Bearer '"),
        ({"X-API-Key": api_key}, "does not read the X-API-Key header"),
    ):
        resp = await client.get("/api/v1/agents", headers=headers)
        body = await assert_error(resp, 401, "UNAUTHORIZED", says)
        assert "'Authorization: Bearer YOUR_KEY'" in body["message"], headers


async def test_keys_are_stored_hashed(client, api_key):
    db = client.app[app_keys.db_key]
    rows = await db.reader.fetchall("SELECT key_hash, prefix, last4 FROM api_keys")
    assert api_key.startswith("asvc_") and len(api_key) > 40
    assert all(api_key not in r[0] for r in rows)
    assert api_key.encode() not in await stored_bytes(client.app)


async def test_unknown_route_and_method(client, auth):
    await assert_error(await client.get("/api/v1/nothing", headers=auth), 404, "NOT_FOUND")
    resp = await client.put("/api/v1/agents", headers=auth)
    await assert_error(resp, 405, "METHOD_NOT_ALLOWED")
    assert "GET" in resp.headers["Allow"]


async def test_unknown_path_with_an_encoded_line_break_answers_the_envelope(client, auth):
    # Found by fuzzing: the catch-all's `.*` stopped at a decoded "\n", leaving aiohttp's
    # plain-text 404.
    for path in ("/x%0Ay", "/api/v1/tools/a%0Ab", "/api/v1/agents/%0D%0A"):
        await assert_error(await client.get(path, headers=auth), 404, "NOT_FOUND")


async def test_allow_names_the_methods_of_the_resource_itself(client, auth):
    # A fixed path next to an id path (/tools/limits, /tools/{id}) is its own resource: ids
    # carry their prefix, so the router never reads "limits" as an id.
    for path, allowed in [
        ("/api/v1/tools/limits", {"GET"}),
        ("/api/v1/team/invitations/accept", {"POST"}),
        ("/api/v1/tools/tool_x", {"GET", "PUT", "DELETE"}),
    ]:
        resp = await client.request("OPTIONS", path, headers=auth)
        await assert_error(resp, 405, "METHOD_NOT_ALLOWED")
        assert set(resp.headers["Allow"].split(",")) == allowed, (path, resp.headers["Allow"])
    resp = await client.get("/api/v1/tools/not-a-tool-id", headers=auth)
    await assert_error(resp, 404, "NOT_FOUND")


async def test_malformed_multipart_and_huge_offsets_are_400(client, auth):
    resp = await client.post("/api/v1/agents", json={"name": "A"}, headers=auth)
    agent_id = (await resp.json())["data"]["id"]
    boundary = "b0d7"
    resp = await client.post(
        f"/api/v1/agents/{agent_id}/documents",
        data=f"--{boundary}\r\nTrue--{boundary}--\r\n".encode(),
        headers={**auth, "Content-Type": f"multipart/form-data; boundary={boundary}"},
    )
    await assert_error(resp, 400, "VALIDATION_ERROR", "multipart")
    resp = await client.get(
        f"/api/v1/conversations?agentId={agent_id}&offset=200401805491757809664", headers=auth
    )
    await assert_error(resp, 400, "VALIDATION_ERROR", "offset")


async def test_body_over_the_limit_is_413(make_client):
    client = await make_client(server={"max_body_mb": 0.001})
    auth = bearer(await new_api_key(client))
    big = b'{"name":"' + b"x" * 5000 + b'"}'
    resp = await client.post("/api/v1/agents", data=big, headers=auth)
    await assert_error(resp, 413, "PAYLOAD_TOO_LARGE")

    async def chunked():
        yield b'{"name":"'
        yield b"x" * 5000
        yield b'"}'

    resp = await client.post("/api/v1/agents", data=chunked(), headers=auth)
    await assert_error(resp, 413, "PAYLOAD_TOO_LARGE")
    resp = await client.get("/api/v1/agents", headers=auth)
    assert (await resp.json())["data"] == []


async def test_rate_limit_by_plan_with_headers(client):
    auth = bearer(await new_api_key(client, "free@example.com", plan="free"))
    for i in range(20):
        resp = await client.get("/api/v1/agents", headers=auth)
        assert resp.status == 200
        assert resp.headers["X-RateLimit-Limit"] == "20"
        assert int(resp.headers["X-RateLimit-Remaining"]) == 19 - i
        assert int(resp.headers["X-RateLimit-Reset"]) > 1_700_000_000
    resp = await client.get("/api/v1/agents", headers=auth)
    await assert_error(resp, 429, "RATE_LIMITED")
    assert int(resp.headers["Retry-After"]) >= 1
    assert resp.headers["X-RateLimit-Remaining"] == "0"
    # Another team is not affected.
    other = bearer(await new_api_key(client, "pro@example.com"))
    resp = await client.get("/api/v1/agents", headers=other)
    assert resp.status == 200 and resp.headers["X-RateLimit-Limit"] == "1000"


async def test_plan_change_applies_within_seconds(client):
    key = await new_api_key(client, "up@example.com", plan="free")
    resp = await client.get("/api/v1/agents", headers=bearer(key))
    assert resp.headers["X-RateLimit-Limit"] == "20"
    db = client.app[app_keys.db_key]
    user = await accounts.get_user_by_email(db.reader, "up@example.com")
    team = await accounts.get_owned_team(db.reader, user.id)
    async with db.write() as conn:  # what `agentsvc team set-plan` does from another process
        await accounts.set_plan(conn, team.id, "growth", "2026-01-01T00:00:00.000Z")
    for _ in range(60):
        resp = await client.get("/api/v1/agents", headers=bearer(key))
        if resp.headers["X-RateLimit-Limit"] == "200":
            break
        await asyncio.sleep(0.1)
    assert resp.headers["X-RateLimit-Limit"] == "200"


async def test_unexpected_errors_are_masked_and_logged(make_client, caplog):
    from agentsvc.app import create_app

    client = await make_client()
    table = RouteTable("test")

    @table.get("/boom", auth="public")
    async def boom(call: Call):
        """Fail."""
        raise RuntimeError("secret detail")

    app = create_app(client.app[app_keys.settings_key])
    from agentsvc.api.routing import make_handler

    app.router.add_route("GET", "/boom", make_handler(table.endpoints[0]))
    from aiohttp.test_utils import TestClient, TestServer

    async with TestClient(TestServer(app)) as other:
        resp = await other.get("/boom")
        error = await assert_error(resp, 500, "INTERNAL_ERROR")
        assert "secret" not in error["message"]
    assert "secret detail" in caplog.text and "Traceback" in caplog.text


async def test_cors_preflight(client):
    resp = await client.options(
        "/api/v1/openapi.json",
        headers={"Origin": "https://shop.example", "Access-Control-Request-Method": "GET"},
    )
    assert resp.status == 204
    assert resp.headers["Access-Control-Allow-Origin"] == "*"
    assert "POST" in resp.headers["Access-Control-Allow-Methods"]
    assert "X-Session-Id" in resp.headers["Access-Control-Allow-Headers"]
    assert resp.headers["Access-Control-Max-Age"] == "86400"
    assert resp.headers["X-Request-Id"]
    # Any path: the browser asks before it knows whether the route exists.
    resp = await client.options(
        "/api/v1/nowhere",
        headers={"Origin": "https://shop.example", "Access-Control-Request-Method": "POST"},
    )
    assert resp.status == 204


async def test_actual_cors_responses_name_only_the_origin(client):
    resp = await client.get("/api/v1/openapi.json", headers={"Origin": "https://shop.example"})
    assert resp.headers["Access-Control-Allow-Origin"] == "*"
    # Methods, headers and max-age are read from preflights only.
    assert "Access-Control-Allow-Methods" not in resp.headers
    assert "Access-Control-Max-Age" not in resp.headers


def test_every_route_has_a_docstring_summary():
    for endpoint in all_endpoints():
        assert endpoint.summary, endpoint.path


async def test_public_endpoints_carry_cors_headers_even_on_errors(client):
    resp = await client.get("/api/v1/openapi.json")
    assert resp.headers["Access-Control-Allow-Origin"] == "*"
    resp = await client.get("/api/v1/agents")
    assert "Access-Control-Allow-Origin" not in resp.headers


async def test_unknown_paths_and_methods_carry_rate_limit_headers_for_a_caller(client):
    from tests.support.accounts import create_user, session, sign_in

    auth = bearer(await new_api_key(client, "free@example.com", plan="free"))
    resp = await client.get("/api/v1/agents", headers=auth)
    assert resp.headers["X-RateLimit-Remaining"] == "19"
    resp = await client.get("/api/v1/nothing", headers=auth)
    await assert_error(resp, 404, "NOT_FOUND")
    assert resp.headers["X-RateLimit-Limit"] == "20"
    assert resp.headers["X-RateLimit-Remaining"] == "18"  # a wrong path spends the budget too
    assert int(resp.headers["X-RateLimit-Reset"]) > 1_700_000_000
    resp = await client.put("/api/v1/agents", headers=auth)
    await assert_error(resp, 405, "METHOD_NOT_ALLOWED")
    assert resp.headers["X-RateLimit-Remaining"] == "17" and resp.headers["Allow"]
    # A dashboard session counts the same way.
    await create_user(client, "cookie@example.com")
    cookie = session(await sign_in(client, "cookie@example.com"))
    resp = await client.get("/api/v1/nothing", headers=cookie)
    await assert_error(resp, 404, "NOT_FOUND")
    assert resp.headers["X-RateLimit-Limit"] == "1000"
    # No credential, or one that does not authenticate: the plain 404, no team, no headers.
    for headers in ({}, bearer("asvc_nope"), {"Cookie": "agentsvc_session=stale"}):
        resp = await client.get("/api/v1/nothing", headers=headers)
        await assert_error(resp, 404, "NOT_FOUND")
        assert "X-RateLimit-Limit" not in resp.headers


async def test_probing_unknown_paths_is_rate_limited(client):
    auth = bearer(await new_api_key(client, "probe@example.com", plan="free"))
    for i in range(20):
        resp = await client.get(f"/api/v1/probe-{i}", headers=auth)
        await assert_error(resp, 404, "NOT_FOUND")
    resp = await client.get("/api/v1/probe-20", headers=auth)
    await assert_error(resp, 429, "RATE_LIMITED")
    assert int(resp.headers["Retry-After"]) >= 1 and resp.headers["X-RateLimit-Remaining"] == "0"


async def _raw_request(port: int, data: bytes) -> tuple[int, dict[str, str], bytes]:
    """Send raw bytes to 127.0.0.1:port; return the status, headers and body answered."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        writer.write(data)
        await writer.drain()
        raw = await asyncio.wait_for(reader.read(), timeout=30)  # the server closes
    finally:
        writer.close()
    head, _, body = raw.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    headers = dict(line.split(": ", 1) for line in lines[1:])
    return int(lines[0].split()[1]), {k.lower(): v for k, v in headers.items()}, body


async def test_requests_refused_before_routing_answer_the_envelope_without_traceback(
    tmp_path, caplog
):
    """The runner of `agentsvc serve`, access log on: aiohttp's parser refuses a request line
    over the limit and too many headers before any route runs; the answer is still ours."""
    import json
    import logging

    from aiohttp import web

    from agentsvc.api.server import MAX_HEADERS, MAX_LINE_BYTES, make_runner
    from agentsvc.app import create_app
    from tests.support.settings import make_settings

    caplog.set_level(logging.INFO)
    settings = make_settings(tmp_path, server={"access_log": True})
    runner = make_runner(create_app(settings), settings)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # noqa: SLF001 (the port 0 became)
    try:
        long_line = b"GET /api/v1/" + b"a" * (MAX_LINE_BYTES + 10) + b" HTTP/1.1\r\nHost: x\r\n\r\n"
        many = b"".join(b"X-H%d: v\r\n" % i for i in range(MAX_HEADERS + 10))
        cases = [
            (long_line, 431, "HEADERS_TOO_LARGE", f"over {MAX_LINE_BYTES} bytes"),
            (b"GET / HTTP/1.1\r\nHost: x\r\n" + many + b"\r\n", 431, "HEADERS_TOO_LARGE", "128"),
            (
                b"GET / HTTP/1.1\r\nHost: x\r\nX-Big: "
                + b"b" * (MAX_LINE_BYTES + 10)
                + b"\r\n\r\n",
                431,
                "HEADERS_TOO_LARGE",
                "header",
            ),
            (b"NOT HTTP AT ALL\r\n\r\n", 400, "BAD_REQUEST", "Malformed HTTP request"),
            (
                b"GET / HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n",
                400,
                "BAD_REQUEST",
                "Content-Length",
            ),
        ]
        for data, status, code, text in cases:
            got, headers, body = await _raw_request(port, data)
            assert got == status, (data[:40], body)
            assert headers["content-type"].startswith("application/json")
            envelope = json.loads(body)
            assert envelope["data"] is None and envelope["error"]["code"] == code
            assert text in envelope["error"]["message"], envelope
            assert "^" not in envelope["error"]["message"]  # no echo of the client's bytes
            assert headers["x-request-id"]
        # Under the limit, a long query string still reaches the router.
        path = b"/api/v1/nowhere?q=" + b"c" * 20_000
        got, _, body = await _raw_request(
            port, b"GET " + path + b" HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
        )
        assert got == 404 and json.loads(body)["error"]["code"] == "NOT_FOUND"
    finally:
        await runner.cleanup()
    assert not [r for r in caplog.records if r.exc_info], "a traceback was logged"
    assert "Traceback" not in caplog.text
    access = [json.loads(r.getMessage()) for r in caplog.records if r.name == "agentsvc.access"]
    assert [a["status"] for a in access] == [431, 431, 431, 400, 400, 404]
    assert all(a["route"] is None for a in access)
