"""Cookie sessions: password sign-in, sign-out, rolling expiry, origins, limits, isolation."""

from __future__ import annotations

import asyncio
import hashlib
import re
import threading
import time

from agentsvc.api import app_keys
from agentsvc.passwords import MAX_CONCURRENT, verify_password_async
from tests.support.accounts import SESSION_COOKIE, bearer, create_user, key_for, session, sign_in
from tests.support.errors import assert_error
from tests.support.settings import PUBLIC_ORIGIN

ISO = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")


async def test_sign_in_sets_the_session_cookie_and_answers_the_user(client):
    user, _ = await create_user(client, "ada@example.com", name="Ada")
    resp = await client.post(
        "/api/v1/auth/sign-in/email",
        json={"email": "Ada@Example.com", "password": "correct horse battery"},
    )
    assert resp.status == 200
    assert await resp.json() == {
        "data": {"user": {"id": user.id, "email": "ada@example.com", "name": "Ada"}},
        "error": None,
    }
    header = resp.headers["Set-Cookie"]
    assert header.startswith(f"{SESSION_COOKIE}=")
    assert "HttpOnly" in header
    assert "SameSite=Lax" in header
    assert "Path=/" in header
    assert "Max-Age=604800" in header
    assert "Secure" not in header  # public_url is plain http here
    token = resp.cookies[SESSION_COOKIE].value
    assert len(token) >= 43
    # Stored hashed only.
    rows = await client.app[app_keys.db_key].reader.fetchall("SELECT token_hash FROM sessions")
    assert [r[0] for r in rows] == [hashlib.sha256(token.encode()).hexdigest()]


async def test_secure_cookie_behind_https(make_client):
    client = await make_client(server={"public_url": "https://agents.example.com"})
    await create_user(client, "ada@example.com")
    resp = await client.post(
        "/api/v1/auth/sign-in/email",
        json={"email": "ada@example.com", "password": "correct horse battery"},
    )
    assert resp.status == 200
    assert "Secure" in resp.headers["Set-Cookie"]


async def test_session_endpoint_and_cookie_authenticates_management(client):
    user, team = await create_user(client, "ada@example.com", name="Ada")
    token = await sign_in(client, "ada@example.com")
    resp = await client.get("/api/v1/auth/session", headers=session(token))
    assert resp.status == 200
    data = (await resp.json())["data"]
    assert data["user"] == {"id": user.id, "email": "ada@example.com", "name": "Ada"}
    assert data["team"] == {"id": team.id, "name": team.name, "role": "owner", "plan": "pro"}
    assert data["teams"] == [{"id": team.id, "name": team.name, "role": "owner"}]
    assert data["authenticatedBy"] == "session"
    resp = await client.post("/api/v1/agents", json={"name": "Bot"}, headers=session(token))
    assert resp.status == 201
    resp = await client.get("/api/v1/agents", headers=session(token))
    assert resp.status == 200
    assert [a["name"] for a in (await resp.json())["data"]] == ["Bot"]
    assert "X-RateLimit-Limit" in resp.headers  # same team limits as API keys


async def test_session_without_cookie_is_401(client):
    await assert_error(await client.get("/api/v1/auth/session"), 401, "UNAUTHORIZED")
    resp = await client.get("/api/v1/auth/session", headers=session("not-a-session"))
    await assert_error(resp, 401, "UNAUTHORIZED")


async def test_bearer_key_wins_over_cookie(client):
    _, team_a = await create_user(client, "a@example.com")
    user_b, team_b = await create_user(client, "b@example.com")
    token_a = await sign_in(client, "a@example.com")
    key_b = await key_for(client, team_b.id, user_b.id)
    resp = await client.get("/api/v1/auth/session", headers={**session(token_a), **bearer(key_b)})
    data = (await resp.json())["data"]
    assert data["team"]["id"] == team_b.id
    assert data["authenticatedBy"] == "apiKey"


async def test_wrong_password_and_unknown_email_answer_identically(client):
    await create_user(client, "ada@example.com")

    async def attempt(email: str) -> tuple[int, bytes, float]:
        started = time.perf_counter()
        resp = await client.post(
            "/api/v1/auth/sign-in/email", json={"email": email, "password": "wrong password"}
        )
        body = await resp.read()
        return resp.status, body, time.perf_counter() - started

    wrong, unknown = [], []
    for _ in range(7):  # interleaved, so drift in machine speed hits both alike
        wrong.append(await attempt("ada@example.com"))
        unknown.append(await attempt("nobody@example.com"))
    assert {(s, b) for s, b, _ in wrong} == {(s, b) for s, b, _ in unknown}
    await assert_error(
        await client.post(
            "/api/v1/auth/sign-in/email",
            json={"email": "nobody@example.com", "password": "x"},
        ),
        401,
        "UNAUTHORIZED",
        "Invalid email or password",
    )
    # Both run one argon2 verification: similar time. The fastest of each is compared, the
    # least disturbed by other load on a shared machine; the bounds stay loose.
    t_wrong = min(t for *_, t in wrong)
    t_unknown = min(t for *_, t in unknown)
    assert t_unknown > 0.4 * t_wrong and t_wrong > 0.4 * t_unknown, (t_wrong, t_unknown)


async def test_user_without_password_cannot_sign_in_by_password(client):
    from agentsvc.services.team import accounts

    await accounts.ensure_user_with_team(
        client.app[app_keys.db_key], email="keyonly@example.com", name="", plan="pro"
    )
    resp = await client.post(
        "/api/v1/auth/sign-in/email", json={"email": "keyonly@example.com", "password": "x"}
    )
    await assert_error(resp, 401, "UNAUTHORIZED", "Invalid email or password")


async def test_sign_in_bad_input(client):
    for body, field in [
        ({"email": "ada@example.com"}, "password"),
        ({"password": "x"}, "email"),
        ({"email": "not-an-address", "password": "x"}, "email"),
        ({"email": "a@b.c\r\nBcc: x@y.z", "password": "x"}, "email"),
        ({"email": "ada@example.com", "password": "x", "remember": True}, "remember"),
        ({"email": "ada@example.com", "password": 5}, "password"),
    ]:
        resp = await client.post("/api/v1/auth/sign-in/email", json=body)
        await assert_error(resp, 400, "VALIDATION_ERROR", field)


async def test_sign_in_is_limited_per_email_and_per_ip(make_client):
    client = await make_client(auth={"sign_in_per_minute_email": 3, "sign_in_per_minute_ip": 5})
    await create_user(client, "ada@example.com")
    body = {"email": "ada@example.com", "password": "wrong password"}
    for _ in range(3):
        resp = await client.post("/api/v1/auth/sign-in/email", json=body)
        assert resp.status == 401
    resp = await client.post("/api/v1/auth/sign-in/email", json=body)
    await assert_error(resp, 429, "RATE_LIMITED")
    assert int(resp.headers["Retry-After"]) >= 1
    # Even the right password is refused while the address is limited.
    resp = await client.post(
        "/api/v1/auth/sign-in/email",
        json={"email": "ada@example.com", "password": "correct horse battery"},
    )
    await assert_error(resp, 429, "RATE_LIMITED")
    # The IP bucket (5) is spent by now, whatever the address.
    resp = await client.post(
        "/api/v1/auth/sign-in/email", json={"email": "other@example.com", "password": "x"}
    )
    await assert_error(resp, 429, "RATE_LIMITED")


async def test_sign_out_ends_the_session(client):
    await create_user(client, "ada@example.com")
    token = await sign_in(client, "ada@example.com")
    assert (await client.get("/api/v1/auth/session", headers=session(token))).status == 200
    resp = await client.post("/api/v1/auth/sign-out", headers=session(token))
    assert resp.status == 200
    assert await resp.json() == {"data": {"success": True}, "error": None}
    assert resp.cookies[SESSION_COOKIE].value == ""
    assert "Max-Age=0" in resp.headers["Set-Cookie"]
    resp = await client.get("/api/v1/auth/session", headers=session(token))
    await assert_error(resp, 401, "UNAUTHORIZED")
    rows = await client.app[app_keys.db_key].reader.fetchall("SELECT * FROM sessions")
    assert rows == []


async def test_sign_out_from_a_foreign_origin_is_refused(client):
    await create_user(client, "ada@example.com")
    token = await sign_in(client, "ada@example.com")
    resp = await client.post("/api/v1/auth/sign-out", headers=session(token, "https://evil.test"))
    await assert_error(resp, 403, "FORBIDDEN", "origin")
    assert (await client.get("/api/v1/auth/session", headers=session(token))).status == 200


async def test_cookie_state_changes_need_a_trusted_origin(make_client):
    client = await make_client(auth={"trusted_origins": ["https://app.example.com"]})
    user, team = await create_user(client, "ada@example.com")
    token = await sign_in(client, "ada@example.com")
    create = {"name": "Bot"}
    for headers in [
        session(token, origin=None),
        session(token, origin="https://evil.test"),
        session(token, origin="null"),
        session(token, origin="http://127.0.0.1:8080.evil.test"),
        {**session(token, origin=None), "Referer": "https://evil.test/page"},
    ]:
        resp = await client.post("/api/v1/agents", json=create, headers=headers)
        await assert_error(resp, 403, "FORBIDDEN", "origin")
    ok = [
        session(token),
        session(token, origin="https://app.example.com"),
        {**session(token, origin=None), "Referer": f"{PUBLIC_ORIGIN}/dashboard/agents"},
    ]
    for headers in ok:
        resp = await client.post("/api/v1/agents", json=create, headers=headers)
        assert resp.status == 201, await resp.text()
    # Reads need no origin; API keys never do.
    assert (await client.get("/api/v1/agents", headers=session(token, None))).status == 200
    key = await key_for(client, team.id, user.id)
    resp = await client.post("/api/v1/agents", json=create, headers=bearer(key))
    assert resp.status == 201
    # Nothing was created by the refused requests.
    resp = await client.get("/api/v1/agents", headers=bearer(key))
    assert len((await resp.json())["data"]) == 4


async def test_sign_in_from_a_foreign_origin_is_refused(client):
    await create_user(client, "ada@example.com")
    resp = await client.post(
        "/api/v1/auth/sign-in/email",
        json={"email": "ada@example.com", "password": "correct horse battery"},
        headers={"Origin": "https://evil.test"},
    )
    await assert_error(resp, 403, "FORBIDDEN")
    assert SESSION_COOKIE not in resp.cookies


async def test_sign_in_at_localhost_works_for_a_loopback_public_url(make_client):
    """Issue 29 item 10: loopback names are the same origin for a loopback public_url (the
    same scheme and port); another port, scheme or host is still refused, and the refusal
    says which address to open and which setting to change."""
    client = await make_client(server={"public_url": "http://127.0.0.1:8080"})
    await create_user(client, "ada@example.com")
    body = {"email": "ada@example.com", "password": "correct horse battery"}
    for origin in ("http://localhost:8080", "http://127.0.0.1:8080", "http://[::1]:8080"):
        resp = await client.post(
            "/api/v1/auth/sign-in/email", json=body, headers={"Origin": origin}
        )
        assert resp.status == 200, (origin, await resp.text())
        token = resp.cookies[SESSION_COOKIE].value
        client.session.cookie_jar.clear()
        resp = await client.post(
            "/api/v1/agents", json={"name": "Bot"}, headers=session(token, origin)
        )
        assert resp.status == 201, (origin, await resp.text())
    for origin in (
        "http://localhost:8081",
        "https://localhost:8080",
        "http://localhost.evil.test:8080",
    ):
        resp = await client.post(
            "/api/v1/auth/sign-in/email", json=body, headers={"Origin": origin}
        )
        error = await assert_error(resp, 403, "FORBIDDEN", f"{origin} is not a trusted origin")
        assert "Open http://127.0.0.1:8080" in error["message"]
        assert "[server] public_url" in error["message"]
        assert "[auth] trusted_origins" in error["message"]
    resp = await client.post("/api/v1/auth/sign-in/email", json=body, headers={"Origin": "null"})
    error = await assert_error(resp, 403, "FORBIDDEN", "Open http://127.0.0.1:8080")


async def test_a_public_url_off_loopback_trusts_no_loopback_name(make_client):
    client = await make_client(server={"public_url": "https://chat.example.com"})
    await create_user(client, "ada@example.com")
    body = {"email": "ada@example.com", "password": "correct horse battery"}
    resp = await client.post(
        "/api/v1/auth/sign-in/email", json=body, headers={"Origin": "http://localhost:8080"}
    )
    await assert_error(resp, 403, "FORBIDDEN", "Open https://chat.example.com")


async def test_rolling_expiry_moves_forward_and_refreshes_the_cookie(make_client):
    # 3 s: a busy machine may take a second between two of the requests below.
    client = await make_client(auth={"session_ttl_seconds": 3})
    await create_user(client, "ada@example.com")
    token = await sign_in(client, "ada@example.com")
    db = client.app[app_keys.db_key]
    (before,) = [r[0] for r in await db.reader.fetchall("SELECT expires_at FROM sessions")]
    await asyncio.sleep(0.5)
    client.app[app_keys.key_resolver_key].invalidate()
    resp = await client.get("/api/v1/auth/session", headers=session(token))
    assert resp.status == 200
    assert "Max-Age=3" in resp.headers["Set-Cookie"]
    (after,) = [r[0] for r in await db.reader.fetchall("SELECT expires_at FROM sessions")]
    assert ISO.match(after) and after > before
    # Used again and again, it outlives its first expiry...
    for _ in range(4):
        await asyncio.sleep(0.8)
        assert (await client.get("/api/v1/auth/session", headers=session(token))).status == 200
    # ...and left alone, it expires.
    await asyncio.sleep(3.1)
    resp = await client.get("/api/v1/auth/session", headers=session(token))
    await assert_error(resp, 401, "UNAUTHORIZED")


async def test_sessions_are_isolated_between_teams(client):
    await create_user(client, "a@example.com")
    await create_user(client, "b@example.com")
    token_a = await sign_in(client, "a@example.com")
    token_b = await sign_in(client, "b@example.com")
    resp = await client.post("/api/v1/agents", json={"name": "A's bot"}, headers=session(token_a))
    agent = (await resp.json())["data"]
    resp = await client.get(f"/api/v1/agents/{agent['id']}", headers=session(token_b))
    await assert_error(resp, 404, "NOT_FOUND")
    resp = await client.patch(
        f"/api/v1/agents/{agent['id']}", json={"name": "stolen"}, headers=session(token_b)
    )
    await assert_error(resp, 404, "NOT_FOUND")
    resp = await client.delete(f"/api/v1/agents/{agent['id']}", headers=session(token_b))
    await assert_error(resp, 404, "NOT_FOUND")
    assert (await (await client.get("/api/v1/agents", headers=session(token_b))).json())[
        "data"
    ] == []
    members_b = await (await client.get("/api/v1/team/members", headers=session(token_b))).json()
    assert [m["email"] for m in members_b] == ["b@example.com"]
    resp = await client.get(f"/api/v1/agents/{agent['id']}", headers=session(token_a))
    assert (await resp.json())["data"]["name"] == "A's bot"


async def test_switching_teams(client):
    owner, team = await create_user(client, "owner@example.com")
    from tests.support.accounts import add_member

    member = await add_member(client, team.id, "member@example.com")
    token = await sign_in(client, "member@example.com")
    info = (await (await client.get("/api/v1/auth/session", headers=session(token))).json())["data"]
    # Signed in, a member lands in the team joined last.
    assert info["team"]["id"] == team.id and info["team"]["role"] == "member"
    own = [t for t in info["teams"] if t["id"] != team.id][0]
    resp = await client.post(
        "/api/v1/auth/session/team", json={"teamId": own["id"]}, headers=session(token)
    )
    assert resp.status == 200
    assert (await resp.json())["data"]["team"]["role"] == "owner"
    resp = await client.post("/api/v1/agents", json={"name": "Mine"}, headers=session(token))
    assert resp.status == 201
    resp = await client.post(
        "/api/v1/auth/session/team", json={"teamId": "team_nope"}, headers=session(token)
    )
    await assert_error(resp, 404, "NOT_FOUND")
    key = await key_for(client, team.id, member.id)
    resp = await client.post(
        "/api/v1/auth/session/team", json={"teamId": own["id"]}, headers=bearer(key)
    )
    await assert_error(resp, 403, "FORBIDDEN", "cookie session")
    assert owner.id != member.id


async def test_password_hashing_is_bounded_and_off_the_loop(client):
    await create_user(client, "ada@example.com")
    # Many verifications at once all finish; the loop stays responsive meanwhile.
    started = time.perf_counter()
    ticks = 0

    async def ticker():
        nonlocal ticks
        while True:
            await asyncio.sleep(0.01)
            ticks += 1

    tick_task = asyncio.create_task(ticker())
    results = await asyncio.gather(
        *[verify_password_async(None, "x") for _ in range(MAX_CONCURRENT * 3)]
    )
    tick_task.cancel()
    elapsed = time.perf_counter() - started
    assert results == [False] * (MAX_CONCURRENT * 3)
    # The loop kept running while the hashes were computed (loosely: shared machines)...
    assert ticks >= 3, (ticks, elapsed)
    # ...and never more than MAX_CONCURRENT hashing threads existed (19 MiB each).
    hashing = [t for t in threading.enumerate() if t.name.startswith("argon2")]
    assert 1 <= len(hashing) <= MAX_CONCURRENT


async def test_openapi_lists_the_cookie_scheme(client):
    doc = await (await client.get("/api/v1/openapi.json")).json()
    schemes = doc["components"]["securitySchemes"]
    assert schemes["cookieAuth"] == {"type": "apiKey", "in": "cookie", "name": SESSION_COOKIE}
    assert schemes["bearerAuth"] == {"type": "http", "scheme": "bearer"}
    assert {"cookieAuth": []} in doc["security"] and {"bearerAuth": []} in doc["security"]
    assert doc["paths"]["/api/v1/auth/sign-in/email"]["post"]["security"] == []
    assert "/api/v1/team/invitations/accept" in doc["paths"]


async def test_the_session_cookie_is_found_among_other_cookies(client):
    await create_user(client, "ada@example.com")
    token = await sign_in(client, "ada@example.com")
    for cookie in (
        f"theme=dark; x{SESSION_COOKIE}=nope; {SESSION_COOKIE}={token}; lang=en",
        f'{SESSION_COOKIE}="{token}"',
        f"  {SESSION_COOKIE} = {token} ;",
    ):
        resp = await client.get("/api/v1/auth/session", headers={"Cookie": cookie})
        assert resp.status == 200, (cookie, await resp.text())
    for cookie in (f"x{SESSION_COOKIE}={token}", f"{SESSION_COOKIE}", "theme=dark"):
        resp = await client.get("/api/v1/auth/session", headers={"Cookie": cookie})
        await assert_error(resp, 401, "UNAUTHORIZED")
