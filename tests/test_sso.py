"""Single sign-on with OpenID Connect against the certified `oidc-provider` on 127.0.0.1:
the team's settings, where an address signs in, the sign-in itself (just-in-time members,
roles from groups) and `enforce`. The refusals are in tests/test_sso_refusals.py."""

from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

import pytest

from agentsvc.api import app_keys
from tests.support import pg
from tests.support.accounts import bearer, create_user, key_for, session, sign_in
from tests.support.cli import run
from tests.support.errors import assert_error
from tests.support.oidc_provider import (
    CALLBACK,
    CLIENT_ID,
    CLIENT_SECRET,
    start_provider,
    stop_provider,
)
from tests.support.sso import (
    STATE_COOKIE,
    oidc_body,
    owner_team,
    provider_for_module,
    set_up,
    sso_sign_in,
    whoami,
)


@pytest.fixture(scope="module")
def idp(tmp_path_factory):
    yield from provider_for_module(tmp_path_factory)


@pytest.fixture
async def team(client):
    return await owner_team(client)


async def test_owner_sets_up_reads_and_removes_oidc(client, team, idp):
    team_row, _, owner = team
    body = await set_up(
        client, owner, idp.issuer, roleMapping={"support-admins": "admin"}, enforce=False
    )
    assert body["redirectUri"] == CALLBACK
    assert body["clientSecret"] == "••••" + CLIENT_SECRET[-4:]
    assert CLIENT_SECRET not in str(body)
    assert body["scopes"] == ["openid", "email", "profile"]
    assert (body["groupsClaim"], body["domains"]) == ("groups", ["example.com"])
    assert body["roleMapping"] == {"support-admins": "admin"}
    resp = await client.get("/api/v1/team/sso", headers=owner)
    assert (await resp.json()) == body
    # Saved again without the secret: the saved one is kept.
    again = oidc_body(idp.issuer, domains=["Example.COM"])
    del again["clientSecret"]
    resp = await client.put("/api/v1/team/sso", json=again, headers=owner)
    assert resp.status == 200 and (await resp.json())["clientSecret"] == body["clientSecret"]
    # The secret is sealed at rest.
    rows = await client.app[app_keys.db_key].reader.fetchall("SELECT * FROM team_sso")
    assert CLIENT_SECRET not in str(rows)
    resp = await client.delete("/api/v1/team/sso", headers=owner)
    assert resp.status == 200
    log = await client.get("/api/v1/audit-log", headers=owner)
    actions = [e["action"] for e in (await log.json())["data"]]
    # Saved, its domain proven (by the operator, here), saved again, removed.
    expected = ["sso.removed", "sso.updated", "sso.domain_verified", "sso.updated"]
    assert actions[:4] == expected, actions
    await assert_error(await client.get("/api/v1/team/sso", headers=owner), 404, "NOT_FOUND")
    resp = await client.get("/api/v1/auth/sso", params={"email": "a@example.com"})
    assert (await resp.json())["data"]["sso"] is False


async def test_members_cannot_read_or_change_sso(client, team, idp):
    team_row, _, owner = team
    await set_up(client, owner, idp.issuer)
    member = session(await sign_in(client, "member@example.com"))
    for method in ("get", "put", "delete"):
        resp = await getattr(client, method)(
            "/api/v1/team/sso", headers=member, json=oidc_body(idp.issuer)
        )
        await assert_error(resp, 403, "FORBIDDEN")


async def test_settings_are_checked_with_clear_messages(client, team, idp):
    _, _, owner = team
    cases = [
        ({"type": "saml", "domains": ["example.com"]}, "idpMetadataXml: required"),
        (oidc_body("ftp://idp.example.com"), "issuer: must be"),
        (oidc_body("http://127.0.0.1:9"), "cannot be used"),
        (oidc_body(idp.issuer + "/"), "names the issuer"),
        (oidc_body(idp.issuer, domains=["not a domain"]), "not a domain name"),
        (oidc_body(idp.issuer, roleMapping={"g": "root"}), "roleMapping"),
        ({k: v for k, v in oidc_body(idp.issuer).items() if k != "clientSecret"}, "clientSecret"),
    ]
    for body, message in cases:
        resp = await client.put("/api/v1/team/sso", json=body, headers=owner)
        await assert_error(resp, 400, "VALIDATION_ERROR", message)


async def test_a_domain_belongs_to_one_team(client, team, idp):
    _, _, owner = team
    await set_up(client, owner, idp.issuer)
    _, other = await create_user(client, "boss@example.com")
    other_owner = session(await sign_in(client, "boss@example.com"))
    resp = await client.put("/api/v1/team/sso", json=oidc_body(idp.issuer), headers=other_owner)
    await assert_error(resp, 409, "CONFLICT", "example.com already signs in")


async def test_where_an_address_signs_in_names_no_team(client, team, idp):
    team_row, _, owner = team
    await set_up(client, owner, idp.issuer)
    resp = await client.get("/api/v1/auth/sso", params={"email": "Someone@Example.com"})
    data = (await resp.json())["data"]
    assert data == {
        "sso": True,
        "startUrl": f"/api/v1/auth/sso/{team_row.id}/start",
        "enforced": False,
        "protocol": "oidc",
        "providers": [],
    }
    assert team_row.name not in str(data)
    resp = await client.get("/api/v1/auth/sso", params={"email": "a@elsewhere.test"})
    assert (await resp.json())["data"] == {
        "sso": False,
        "startUrl": None,
        "enforced": False,
        "protocol": None,
        "providers": [],
    }
    resp = await client.get("/api/v1/auth/sso", params={"email": "nope"})
    await assert_error(resp, 400, "VALIDATION_ERROR")


async def test_start_redirects_with_state_nonce_and_pkce(client, team, idp):
    team_row, _, owner = team
    await set_up(client, owner, idp.issuer, scopes=["email", "groups"])
    resp = await client.get(f"/api/v1/auth/sso/{team_row.id}/start", allow_redirects=False)
    assert resp.status == 302
    location = urlsplit(resp.headers["Location"])
    assert resp.headers["Location"].startswith(idp.issuer + "/")
    query = {k: v[0] for k, v in parse_qs(location.query).items()}
    assert query["client_id"] == CLIENT_ID and query["redirect_uri"] == CALLBACK
    assert query["scope"] == "openid email groups"
    assert query["code_challenge_method"] == "S256" and len(query["code_challenge"]) == 43
    assert len(query["state"]) >= 43 and len(query["nonce"]) >= 43
    assert resp.cookies[STATE_COOKIE].value == query["state"]
    resp = await client.get("/api/v1/auth/sso/team_nope/start", allow_redirects=False)
    await assert_error(resp, 404, "NOT_FOUND")
    resp = await client.get(
        f"/api/v1/auth/sso/{team_row.id}/start",
        params={"callbackUrl": "https://evil.test/"},
        allow_redirects=False,
    )
    await assert_error(resp, 400, "VALIDATION_ERROR", "callbackUrl")


async def test_first_sign_in_creates_the_member_and_groups_set_the_role(client, team, idp):
    team_row, _, owner = team
    await set_up(client, owner, idp.issuer, roleMapping={"support-admins": "admin"})
    idp.set_claims("new.person@example.com", groups=["support-admins"], name="New Person")
    resp = await sso_sign_in(client, team_row.id, "new.person@example.com")
    assert resp.status == 303, await resp.text()
    assert resp.headers["Location"] == "/dashboard/"
    me = await whoami(client, resp)
    assert me["user"]["email"] == "new.person@example.com"
    assert me["user"]["name"] == "New Person"
    assert (me["team"]["id"], me["team"]["role"]) == (team_row.id, "owner")
    assert [t["id"] for t in me["teams"]] == [team_row.id]  # no team of their own
    # Out of the group: a member at the next sign-in.
    idp.set_claims("new.person@example.com", groups=["everyone"])
    me = await whoami(client, await sso_sign_in(client, team_row.id, "new.person@example.com"))
    assert me["team"]["role"] == "member"


async def test_an_existing_member_signs_in_and_the_founder_keeps_ownership(client, team, idp):
    team_row, _, owner = team
    await set_up(client, owner, idp.issuer, roleMapping={"support-admins": "admin"})
    me = await whoami(client, await sso_sign_in(client, team_row.id, "member@example.com"))
    assert (me["user"]["email"], me["team"]["role"]) == ("member@example.com", "member")
    me = await whoami(client, await sso_sign_in(client, team_row.id, "owner@example.com"))
    assert me["team"]["role"] == "owner"  # the team's founder is never demoted


async def test_an_account_outside_the_team_is_not_taken_over(client, team, idp):
    team_row, _, owner = team
    await create_user(client, "outsider@example.com")  # their own team, not this one
    await set_up(client, owner, idp.issuer)
    resp = await sso_sign_in(client, team_row.id, "outsider@example.com")
    await assert_error(resp, 401, "UNAUTHORIZED", "not in this team")


async def test_enforce_refuses_passwords_and_links_but_not_keys_or_login_link(
    client, team, idp, tmp_path
):
    team_row, owner_user, owner = team
    key = await key_for(client, team_row.id, owner_user.id)
    await set_up(client, owner, idp.issuer, enforce=True)
    resp = await client.get("/api/v1/auth/sso", params={"email": "x@example.com"})
    assert (await resp.json())["data"]["enforced"] is True
    resp = await client.post(
        "/api/v1/auth/sign-in/email",
        json={"email": "member@example.com", "password": "correct horse battery"},
    )
    await assert_error(resp, 403, "FORBIDDEN", "Continue with SSO")
    resp = await client.post(
        "/api/v1/auth/magic-link",
        json={"email": "owner@example.com", "callbackUrl": "/dashboard/"},
    )
    await assert_error(resp, 403, "FORBIDDEN", "single sign-on")
    # API keys stay valid.
    resp = await client.get("/api/v1/team/sso", headers=bearer(key))
    assert resp.status == 200
    # Other domains sign in as before.
    await create_user(client, "guest@elsewhere.test")
    await sign_in(client, "guest@elsewhere.test")
    # The owner's way in: `agentsvc login-link` on the server.
    env = {"AGENTSVC_SERVER_DATA_DIR": str(tmp_path / "data")}
    if pg.SERVER_URL:
        settings = client.app[app_keys.settings_key]
        env |= {
            "AGENTSVC_DATABASE_URL": settings.database.url,
            "AGENTSVC_SERVER_SECRET_KEY": settings.server.secret_key,
        }
    result = run(["login-link", "--email", "owner@example.com"], tmp_path, **env)
    assert result.returncode == 0, result.stderr
    link = urlsplit(result.stdout.strip())
    client.session.cookie_jar.clear()
    resp = await client.get(f"{link.path}?{link.query}", allow_redirects=False)
    assert resp.status == 303, await resp.text()
    assert (await whoami(client, resp))["user"]["email"] == "owner@example.com"


async def test_claims_only_in_userinfo_are_read_from_there(client, team, tmp_path):
    team_row, _, owner = team
    strict = start_provider(tmp_path, conform=True)  # e-mail and name in userinfo only
    try:
        await set_up(client, owner, strict.issuer, roleMapping={"support-admins": "admin"})
        strict.set_claims("info@example.com", groups=["support-admins"], name="Info Desk")
        me = await whoami(client, await sso_sign_in(client, team_row.id, "info@example.com"))
        assert (me["user"]["email"], me["user"]["name"]) == ("info@example.com", "Info Desk")
        assert me["team"]["role"] == "owner"
        strict.set_claims("unverified@example.com", email_verified=False)
        resp = await sso_sign_in(client, team_row.id, "unverified@example.com")
        await assert_error(resp, 401, "UNAUTHORIZED", "not verified")
    finally:
        stop_provider(strict)
