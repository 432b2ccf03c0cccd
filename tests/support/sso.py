"""Single sign-on in tests: the provider and team fixtures' helpers, a sign-in played
from our start through the provider's forms back to our callback."""

from __future__ import annotations

import atexit

from agentsvc.api import app_keys
from agentsvc.services.sso import domains
from tests.support.accounts import SESSION_COOKIE, add_member, create_user, session, sign_in
from tests.support.oidc_provider import (
    CLIENT_ID,
    CLIENT_SECRET,
    OpenIdProvider,
    sign_in_at_provider,
    start_provider,
    stop_provider,
)

STATE_COOKIE = "agentsvc_sso_state"
# The security matrix's public-by-design routes of single sign-on (OpenID Connect, SAML).
BY_DESIGN = {
    ("GET", "/api/v1/auth/sso/{teamId}/start"): "anyone may start signing in by a team's SSO",
    ("GET", "/api/v1/auth/saml/{teamId}/metadata"): "identity providers read a team's SP metadata",
    ("GET", "/api/v1/auth/saml/{teamId}/start"): "anyone may start signing in by a team's SAML",
    ("POST", "/api/v1/auth/saml/{teamId}/acs"): "the identity provider posts its signed answer",
}


_RUNNING: list[OpenIdProvider] = []


def provider_for_module(tmp_path_factory):
    """The provider for a test module (a generator for a module-scoped fixture): one per
    test process, started on first use (half a second of node's CPU each) and stopped when
    the process exits; each module starts with no claims set by another."""
    if not _RUNNING:
        _RUNNING.append(start_provider(tmp_path_factory.mktemp("oidc")))
        atexit.register(stop_provider, _RUNNING[0])
    provider = _RUNNING[0]
    provider.claims_file.write_text("{}")
    yield provider


async def owner_team(client):
    """An owner (owner@example.com, signed in) with their team; a member at example.com:
    (team, owner user, owner's session headers)."""
    user, team = await create_user(client, "owner@example.com")
    await add_member(client, team.id, "member@example.com")
    token = await sign_in(client, "owner@example.com")
    return team, user, session(token)


def oidc_body(issuer: str, **changes) -> dict:
    return {
        "type": "oidc",
        "issuer": issuer,
        "clientId": CLIENT_ID,
        "clientSecret": CLIENT_SECRET,
        "domains": ["example.com"],
        **changes,
    }


async def set_up(client, headers, issuer, verify: bool = True, **changes) -> dict:
    """Save the team's OpenID Connect settings and (unless `verify` is False) prove its
    domains the operator's way (tests/test_sso_domains.py proves them by DNS)."""
    resp = await client.put("/api/v1/team/sso", json=oidc_body(issuer, **changes), headers=headers)
    assert resp.status == 200, await resp.text()
    body = await resp.json()
    return await verify_domains(client, headers, body) if verify else body


async def verify_domains(client, headers, body: dict) -> dict:
    """Prove each of the saved settings' domains as the server's operator does (`agentsvc
    team verify-domain`); the settings as read afterwards."""
    me = await client.get("/api/v1/auth/session", headers=headers)
    assert me.status == 200, await me.text()
    team_id = (await me.json())["data"]["team"]["id"]
    db = client.app[app_keys.db_key]
    for domain in body["domains"]:
        await domains.verify_by_operator(db, team_id, domain)
    resp = await client.get("/api/v1/team/sso", headers=headers)
    assert resp.status == 200, await resp.text()
    return await resp.json()


async def sso_sign_in(client, team_id: str, login: str, callback_url: str = "/dashboard/"):
    """Start at our server, sign in at the provider, come back: the callback's response."""
    params, state_cookie = await at_provider(client, team_id, login, callback_url)
    return await callback(client, params, state_cookie)


async def at_provider(client, team_id: str, login: str, callback_url: str = "/dashboard/"):
    """Start at our server and sign in at the provider: the query it sends back to our
    callback, and the state cookie our start set."""
    client.session.cookie_jar.clear()
    resp = await client.get(
        f"/api/v1/auth/sso/{team_id}/start",
        params={"callbackUrl": callback_url},
        allow_redirects=False,
    )
    assert resp.status == 302, await resp.text()
    state_cookie = resp.cookies[STATE_COOKIE].value
    return await sign_in_at_provider(resp.headers["Location"], login), state_cookie


async def callback(client, params: dict[str, str], state_cookie: str | None):
    client.session.cookie_jar.clear()
    headers = {"Cookie": f"{STATE_COOKIE}={state_cookie}"} if state_cookie else {}
    return await client.get(
        "/api/v1/auth/sso/callback", params=params, headers=headers, allow_redirects=False
    )


async def whoami(client, resp) -> dict:
    token = resp.cookies[SESSION_COOKIE].value
    client.session.cookie_jar.clear()
    me = await client.get("/api/v1/auth/session", headers=session(token))
    assert me.status == 200, await me.text()
    return (await me.json())["data"]
