"""Magic links: e-mailed, single use, 15 minutes, stored hashed, callbacks on trusted origins."""

from __future__ import annotations

import asyncio
import hashlib
import re

import pytest

from agentsvc.api import app_keys
from agentsvc.ids import now_iso
from agentsvc.services.team.sessions import after
from agentsvc.store import sign_in as sign_in_store
from tests.support.accounts import SESSION_COOKIE, create_user, session
from tests.support.errors import assert_error
from tests.support.mail import outbox

LINK = re.compile(r"http://127\.0\.0\.1:8080(/api/v1/auth/magic-link/verify\?token=([\w-]+))")


async def ask(client, email="ada@example.com", callback="/dashboard", **headers):
    return await client.post(
        "/api/v1/auth/magic-link", json={"email": email, "callbackUrl": callback}, headers=headers
    )


async def link_from_outbox(client, email="ada@example.com") -> tuple[str, str]:
    (message,) = await outbox(client, email)
    assert message.subject == "Your sign-in link"
    match = LINK.search(message.body)
    assert match, message.body
    return match.group(1), match.group(2)


async def test_magic_link_signs_in_once_and_redirects(client):
    user, _ = await create_user(client, "ada@example.com")
    resp = await ask(client, "ADA@example.com")
    assert resp.status == 200
    assert await resp.json() == {"data": {"success": True}, "error": None}
    path, token = await link_from_outbox(client)
    # Stored hashed only.
    rows = await client.app[app_keys.db_key].reader.fetchall("SELECT token_hash FROM magic_links")
    assert [r[0] for r in rows] == [hashlib.sha256(token.encode()).hexdigest()]
    resp = await client.get(path, allow_redirects=False)
    assert resp.status == 303
    # A path: the browser stays on the address it opened the link at (issue 29 item 10:
    # a link opened at localhost for a 127.0.0.1 public_url kept its cookie at localhost).
    assert resp.headers["Location"] == "/dashboard"
    cookie = resp.cookies[SESSION_COOKIE].value
    client.session.cookie_jar.clear()
    resp = await client.get("/api/v1/auth/session", headers=session(cookie))
    assert (await resp.json())["data"]["user"]["id"] == user.id
    # A second use fails.
    resp = await client.get(path, allow_redirects=False)
    await assert_error(resp, 401, "UNAUTHORIZED", "invalid, used or expired")


async def test_unknown_address_gets_the_same_answer_and_no_mail(client):
    await create_user(client, "ada@example.com")
    known = await ask(client, "ada@example.com")
    unknown = await ask(client, "nobody@example.com")
    assert (known.status, await known.read()) == (unknown.status, await unknown.read())
    assert await outbox(client, "nobody@example.com") == []
    assert len(await outbox(client, "ada@example.com")) == 1


async def test_magic_link_goes_through_smtp(make_client, smtp_server):
    client = await make_client(smtp=smtp_server.settings())
    await create_user(client, "ada@example.com")
    assert (await ask(client)).status == 200
    (mail,) = await smtp_server.wait_for(1)
    assert mail.rcpt_tos == ["ada@example.com"]
    assert mail.message["From"] == "agentsvc@localhost"
    path = LINK.search(mail.text).group(1)
    assert (await client.get(path, allow_redirects=False)).status == 303
    assert await outbox(client) == []


async def test_with_no_smtp_the_sign_in_page_learns_the_link_went_to_the_log(
    client, make_client, smtp_server
):
    """Issue 29 item 10: the sign-in page reads where mail goes, so without SMTP it says
    the link is in the server's log (and names `agentsvc login-link`), not "on its way"."""
    resp = await client.get("/api/v1/auth/providers")
    assert (await resp.json())["data"]["mailDelivery"] == "log"
    with_smtp = await make_client(smtp=smtp_server.settings())
    resp = await with_smtp.get("/api/v1/auth/providers")
    assert (await resp.json())["data"]["mailDelivery"] == "smtp"


async def test_concurrent_uses_sign_in_exactly_once(client):
    await create_user(client, "ada@example.com")
    await ask(client)
    path, _ = await link_from_outbox(client)
    responses = await asyncio.gather(*[client.get(path, allow_redirects=False) for _ in range(5)])
    assert sorted(r.status for r in responses) == [303, 401, 401, 401, 401]


async def test_magic_link_expires(make_client):
    client = await make_client(auth={"magic_link_ttl_seconds": 0.3})
    await create_user(client, "ada@example.com")
    await ask(client)
    path, _ = await link_from_outbox(client)
    await asyncio.sleep(0.4)
    resp = await client.get(path, allow_redirects=False)
    await assert_error(resp, 401, "UNAUTHORIZED")


async def test_default_lifetime_is_fifteen_minutes(client):
    await create_user(client, "ada@example.com")
    await ask(client)
    (message,) = await outbox(client)
    assert "within 15 minutes" in message.body
    rows = await client.app[app_keys.db_key].reader.fetchall(
        "SELECT created_at, expires_at FROM magic_links"
    )
    assert rows[0][1] == after(900, rows[0][0])


@pytest.mark.parametrize(
    "callback",
    [
        "//evil.test",
        "//evil.test/path",
        "/\\evil.test",
        "\\\\evil.test",
        "/%2f%2fevil.test",
        "/%2F%2Fevil.test",
        "%2f%2fevil.test",
        "/%252f%252fevil.test",
        "/%5cevil.test",
        "https://evil.test/",
        "http://127.0.0.1:8080@evil.test/",
        "https://127.0.0.1:8080.evil.test/",
        "javascript:alert(1)",
        "data:text/html,hi",
        "evil.test",
        "/ok\r\nSet-Cookie: x=1",
        "/tab\there",
    ],
)
async def test_untrusted_callbacks_are_refused(client, callback):
    await create_user(client, "ada@example.com")
    resp = await ask(client, callback=callback)
    await assert_error(resp, 400, "VALIDATION_ERROR", "callbackUrl")
    assert await outbox(client) == []


async def test_trusted_absolute_callback(make_client):
    client = await make_client(auth={"trusted_origins": ["https://app.example.com"]})
    await create_user(client, "ada@example.com")
    for callback in ("https://app.example.com/welcome?x=1", "http://127.0.0.1:8080/d"):
        assert (await ask(client, callback=callback)).status == 200
    messages = await outbox(client)
    path = LINK.search(messages[-1].body).group(1)  # the oldest: app.example.com
    resp = await client.get(path, allow_redirects=False)
    assert resp.headers["Location"] == "https://app.example.com/welcome?x=1"


async def test_callback_is_checked_again_on_use(client):
    user, _ = await create_user(client, "ada@example.com")
    token = "planted-token-with-an-untrusted-callback"
    async with client.app[app_keys.db_key].write() as conn:
        await sign_in_store.insert_magic_link(
            conn,
            token_hash=hashlib.sha256(token.encode()).hexdigest(),
            user_id=user.id,
            callback_url="https://no-longer-trusted.test/",
            now=now_iso(),
            expires_at=after(60),
        )
    resp = await client.get(f"/api/v1/auth/magic-link/verify?token={token}", allow_redirects=False)
    await assert_error(resp, 401, "UNAUTHORIZED", "no longer trusted")
    assert SESSION_COOKIE not in resp.cookies


async def test_magic_link_bad_input_and_limits(make_client):
    client = await make_client(auth={"sign_in_per_minute_email": 2})
    for body, field in [
        ({"email": "ada@example.com"}, "callbackUrl"),
        ({"callbackUrl": "/"}, "email"),
        ({"email": "x", "callbackUrl": "/"}, "email"),
        ({"email": "ada@example.com", "callbackUrl": ""}, "callbackUrl"),
    ]:
        resp = await client.post("/api/v1/auth/magic-link", json=body)
        await assert_error(resp, 400, "VALIDATION_ERROR", field)
    resp = await client.get("/api/v1/auth/magic-link/verify")
    await assert_error(resp, 400, "VALIDATION_ERROR", "token")
    assert (await ask(client)).status == 200
    assert (await ask(client)).status == 200
    resp = await ask(client)
    await assert_error(resp, 429, "RATE_LIMITED")
    assert "Retry-After" in resp.headers
    resp = await ask(client, Origin="https://evil.test")
    await assert_error(resp, 403, "FORBIDDEN")
