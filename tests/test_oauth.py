"""OAuth sign-in against a fake provider on loopback: state, PKCE, verified e-mail, errors."""

from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

import aiohttp
import pytest

from agentsvc.api import app_keys
from agentsvc.services.team.sessions import hash_token
from tests.support.accounts import SESSION_COOKIE, create_user, session
from tests.support.errors import assert_error
from tests.support.fakes.oauth import CLIENT_ID

STATE_COOKIE = "agentsvc_oauth_state"


@pytest.fixture
async def oauth_client(make_client, provider):
    google = {**provider.settings(provider.base), "emails_url": ""}
    return await make_client(
        oauth={"github": provider.settings(provider.base), "google": google},
        auth={"trusted_origins": ["https://app.example.com"]},
    )


async def start(client, name="github", callback="/dashboard"):
    resp = await client.get(
        f"/api/v1/auth/sign-in/{name}", params={"callbackUrl": callback}, allow_redirects=False
    )
    assert resp.status == 302, await resp.text()
    return resp


async def consent(location: str) -> dict[str, str]:
    """Play the user approving at the provider: return the code and state sent back."""
    async with aiohttp.ClientSession() as browser:
        async with browser.get(location, allow_redirects=False) as resp:
            assert resp.status == 302, await resp.text()
            back = urlsplit(resp.headers["Location"])
    assert back.path.startswith("/api/v1/auth/callback/")
    return {k: v[0] for k, v in parse_qs(back.query).items()}


async def callback(client, name, params, state_cookie):
    headers = {"Cookie": f"{STATE_COOKIE}={state_cookie}"} if state_cookie else {}
    client.session.cookie_jar.clear()
    return await client.get(
        f"/api/v1/auth/callback/{name}", params=params, headers=headers, allow_redirects=False
    )


async def full_flow(client, name="github", callback_url="/dashboard"):
    resp = await start(client, name, callback_url)
    state_cookie = resp.cookies[STATE_COOKIE].value
    params = await consent(resp.headers["Location"])
    return await callback(client, name, params, state_cookie)


async def test_unconfigured_providers_answer_404(client):
    for name in ("github", "google"):
        resp = await client.get(f"/api/v1/auth/sign-in/{name}", allow_redirects=False)
        await assert_error(resp, 404, "NOT_FOUND", "not configured")
        resp = await client.get(f"/api/v1/auth/callback/{name}?code=x&state=y")
        await assert_error(resp, 404, "NOT_FOUND")
    resp = await client.get("/api/v1/auth/providers")
    assert (await resp.json())["data"] == {"providers": [], "mailDelivery": "log"}


async def test_redirect_carries_state_and_pkce(oauth_client, provider):
    resp = await start(oauth_client)
    location = urlsplit(resp.headers["Location"])
    assert f"{location.scheme}://{location.netloc}{location.path}" == f"{provider.base}/authorize"
    query = {k: v[0] for k, v in parse_qs(location.query).items()}
    assert query["client_id"] == CLIENT_ID
    assert query["response_type"] == "code"
    assert query["redirect_uri"] == "http://127.0.0.1:8080/api/v1/auth/callback/github"
    assert query["scope"] == "read:user user:email"
    assert query["code_challenge_method"] == "S256"
    assert len(query["code_challenge"]) == 43
    assert len(query["state"]) >= 43
    cookie = resp.cookies[STATE_COOKIE]
    assert cookie.value == query["state"] and cookie["httponly"]
    # Stored hashed, with the verifier kept server-side.
    rows = await oauth_client.app[app_keys.db_key].reader.fetchall(
        "SELECT state_hash, provider FROM oauth_states"
    )
    assert [tuple(r) for r in rows] == [(hash_token(query["state"]), "github")]
    resp = await oauth_client.get("/api/v1/auth/providers")
    assert (await resp.json())["data"]["providers"] == ["github", "google"]


async def test_github_sign_in_creates_the_user_by_verified_email(oauth_client, provider):
    provider.emails = [
        {"email": "unverified@example.com", "primary": False, "verified": False},
        {"email": "Octo@Example.com", "primary": True, "verified": True},
    ]
    resp = await full_flow(oauth_client)
    assert resp.status == 303, await resp.text()
    assert resp.headers["Location"] == "http://127.0.0.1:8080/dashboard"
    token = resp.cookies[SESSION_COOKIE].value
    # The token request carried the PKCE verifier (the fake checked it against the challenge).
    assert len(provider.token_requests[0]["code_verifier"]) >= 43
    info = await (await oauth_client.get("/api/v1/auth/session", headers=session(token))).json()
    assert info["data"]["user"]["email"] == "octo@example.com"
    assert info["data"]["user"]["name"] == "Octo Cat"
    assert info["data"]["team"]["role"] == "owner"


async def test_existing_user_is_found_by_email(oauth_client, provider):
    user, _ = await create_user(oauth_client, "octo@example.com")
    resp = await full_flow(oauth_client, callback_url="https://app.example.com/home")
    assert resp.headers["Location"] == "https://app.example.com/home"
    token = resp.cookies[SESSION_COOKIE].value
    info = await (await oauth_client.get("/api/v1/auth/session", headers=session(token))).json()
    assert info["data"]["user"]["id"] == user.id


async def test_google_needs_a_verified_email(oauth_client, provider):
    provider.profile = {"email": "g@example.com", "email_verified": True, "name": "G"}
    resp = await full_flow(oauth_client, "google")
    assert resp.status == 303
    provider.profile = {"email": "g2@example.com", "email_verified": False, "name": "G"}
    resp = await full_flow(oauth_client, "google")
    await assert_error(resp, 401, "UNAUTHORIZED", "verified")
    assert SESSION_COOKIE not in resp.cookies


async def test_github_without_verified_email_is_refused(oauth_client, provider):
    provider.emails = [{"email": "x@example.com", "primary": True, "verified": False}]
    resp = await full_flow(oauth_client)
    await assert_error(resp, 401, "UNAUTHORIZED", "verified")
    rows = await oauth_client.app[app_keys.db_key].reader.fetchall("SELECT * FROM users")
    assert rows == []


async def test_state_must_match_the_browser_and_works_once(oauth_client, provider):
    resp = await start(oauth_client)
    state_cookie = resp.cookies[STATE_COOKIE].value
    params = await consent(resp.headers["Location"])
    # No state cookie (another browser), or a different one: refused.
    await assert_error(await callback(oauth_client, "github", params, None), 401, "UNAUTHORIZED")
    other = await start(oauth_client)
    resp = await callback(oauth_client, "github", params, other.cookies[STATE_COOKIE].value)
    await assert_error(resp, 401, "UNAUTHORIZED", "state")
    # The right browser succeeds once; replaying the same state fails.
    assert (await callback(oauth_client, "github", params, state_cookie)).status == 303
    resp = await callback(oauth_client, "github", params, state_cookie)
    await assert_error(resp, 401, "UNAUTHORIZED", "state")


async def test_forged_state_is_refused(oauth_client, provider):
    params = {"code": "whatever", "state": "forged-state"}
    resp = await callback(oauth_client, "github", params, "forged-state")
    await assert_error(resp, 401, "UNAUTHORIZED", "state")
    assert provider.token_requests == []


async def test_pkce_mismatch_fails(oauth_client, provider):
    resp = await start(oauth_client)
    state_cookie = resp.cookies[STATE_COOKIE].value
    # An attacker-chosen challenge at the provider: our verifier no longer matches.
    location = resp.headers["Location"]
    query = parse_qs(urlsplit(location).query)
    tampered = location.replace(query["code_challenge"][0], "A" * 43)
    params = await consent(tampered)
    resp = await callback(oauth_client, "github", params, state_cookie)
    await assert_error(resp, 401, "UNAUTHORIZED", "github")
    assert SESSION_COOKIE not in resp.cookies


async def test_provider_errors_and_cancelled_consent(oauth_client, provider):
    resp = await callback(oauth_client, "github", {"error": "access_denied", "state": "s"}, "s")
    await assert_error(resp, 401, "UNAUTHORIZED", "not completed")
    await provider_down(oauth_client)


async def provider_down(oauth_client):
    resp = await start(oauth_client)
    state_cookie = resp.cookies[STATE_COOKIE].value
    query = {k: v[0] for k, v in parse_qs(urlsplit(resp.headers["Location"]).query).items()}
    # A code the provider never issued: its token endpoint refuses it.
    resp = await callback(
        oauth_client, "github", {"code": "never-issued", "state": query["state"]}, state_cookie
    )
    await assert_error(resp, 401, "UNAUTHORIZED", "github")


@pytest.mark.parametrize("callback_url", ["//evil.test", "https://evil.test/", "/%2f%2fevil"])
async def test_untrusted_callback_is_refused_at_start(oauth_client, callback_url):
    resp = await oauth_client.get(
        "/api/v1/auth/sign-in/github", params={"callbackUrl": callback_url}, allow_redirects=False
    )
    await assert_error(resp, 400, "VALIDATION_ERROR", "callbackUrl")
