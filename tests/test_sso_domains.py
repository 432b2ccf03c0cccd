"""Proving a team owns the e-mail domains it claims for single sign-on: a DNS TXT record
checked against a DNS server on 127.0.0.1 (tests/support/dns_server.py, the real wire
protocol), or the server's operator (`agentsvc team verify-domain`). Until proven, a domain
does nothing: no routing, no enforce, no OpenID Connect or SAML sign-in (existing members
and just-in-time alike), no SCIM; and an unproven claim does not block the real owner."""

from __future__ import annotations

import pytest

from agentsvc.api import app_keys
from tests.support.accounts import add_member, create_user, session, sign_in
from tests.support.cli import run
from tests.support.dns_server import FakeDnsServer
from tests.support.errors import assert_error
from tests.support.saml import provider, saml_set_up, saml_sign_in
from tests.support.scim import BASE, assert_scim_error, new_token, okta_user, scim_headers
from tests.support.sso import owner_team, provider_for_module, set_up, sso_sign_in

NAME = "_agentsvc-verification.example.com"
NOT_YET = "example.com is not verified for this team yet"


@pytest.fixture(scope="module")
def idp(tmp_path_factory):
    yield from provider_for_module(tmp_path_factory)


@pytest.fixture(scope="module")
def dns():
    server = FakeDnsServer().start()
    yield server
    server.stop()


@pytest.fixture
async def client(make_client, dns):
    dns.records.clear()
    dns.silent.clear()
    return await make_client(sso={"dns_nameservers": [dns.address]})


@pytest.fixture
async def team(client):
    return await owner_team(client)


async def check(client, headers, body: dict | None = None) -> list[dict]:
    resp = await client.post("/api/v1/team/sso/domains/verify", json=body, headers=headers)
    assert resp.status == 200, await resp.text()
    return (await resp.json())["data"]


async def route(client, email: str) -> dict:
    resp = await client.get("/api/v1/auth/sso", params={"email": email})
    return (await resp.json())["data"]


async def test_a_domain_verifies_by_its_txt_record(client, team, idp, dns):
    team_row, _, owner = team
    body = await set_up(client, owner, idp.issuer, verify=False, enforce=True)
    assert body["domains"] == ["example.com"]
    [state] = body["domainVerification"]
    assert (state["domain"], state["verified"], state["verifiedAt"]) == ("example.com", False, None)
    assert state["recordName"] == NAME
    assert state["recordValue"].startswith("agentsvc-domain-verification=")
    assert (await route(client, "a@example.com"))["sso"] is False
    # Published among other TXT records (as a shared name may have).
    dns.set_txt(NAME, "v=spf1 -all", state["recordValue"])
    [proven] = await check(client, owner)
    assert proven["verified"] is True and proven["message"] is None
    assert proven["verifiedAt"] and NAME in dns.queries
    got = await (await client.get("/api/v1/team/sso", headers=owner)).json()
    assert got["domainVerification"][0]["verified"] is True
    assert (await route(client, "a@example.com"))["enforced"] is True
    log = await (await client.get("/api/v1/audit-log", headers=owner)).json()
    entry = log["data"][0]
    assert entry["action"] == "sso.domain_verified"
    assert entry["details"] == {"domain": "example.com", "by": "dns"}
    # A proven domain is not looked up again.
    dns.queries.clear()
    assert (await check(client, owner))[0]["verified"] is True and dns.queries == []


async def test_a_domain_stays_unverified_with_a_sentence_saying_why(client, team, idp, dns):
    _, _, owner = team
    body = await set_up(client, owner, idp.issuer, verify=False)
    value = body["domainVerification"][0]["recordValue"]
    cases = [
        (lambda: dns.set_txt(NAME, value + "x"), "No TXT record with the value was found"),
        (lambda: dns.set_txt(NAME, "agentsvc-domain-verification=someone-elses"), "No TXT"),
        (lambda: dns.set_txt(NAME), "No TXT record with the value was found"),  # no TXT
        (lambda: dns.records.clear(), f"There is no DNS name {NAME} yet"),  # NXDOMAIN
        (lambda: dns.silent.add(NAME), "did not answer"),  # a timeout
    ]
    for arrange, words in cases:
        arrange()
        [state] = await check(client, owner, {"domain": "example.com"})
        assert state["verified"] is False, words
        assert words in state["message"], state["message"]
    assert (await route(client, "a@example.com"))["sso"] is False
    # A domain the team does not claim is a 404.
    resp = await client.post(
        "/api/v1/team/sso/domains/verify", json={"domain": "other.test"}, headers=owner
    )
    await assert_error(resp, 404, "NOT_FOUND", "other.test")


async def test_checks_are_rate_limited_per_team(make_client, dns, idp):
    dns.silent.clear()
    client = await make_client(
        sso={"dns_nameservers": [dns.address], "domain_checks_per_minute": 2}
    )
    _, _, owner = await owner_team(client)
    await set_up(client, owner, idp.issuer, verify=False)
    await check(client, owner)
    await check(client, owner)
    resp = await client.post("/api/v1/team/sso/domains/verify", headers=owner)
    await assert_error(resp, 429, "RATE_LIMITED", "Too many DNS checks")


async def test_the_operator_verifies_a_domain(client, team, idp, tmp_path):
    team_row, _, owner = team
    await set_up(client, owner, idp.issuer, verify=False)
    settings = client.app[app_keys.settings_key]
    env = {}
    if settings.database.url:  # the same PostgreSQL database as the server's
        env = {
            "AGENTSVC_DATABASE_URL": settings.database.url,
            "AGENTSVC_SERVER_SECRET_KEY": settings.server.secret_key,
        }
    where = ["--data-dir", str(settings.server.data_dir)]
    args = ["team", "verify-domain", *where, "--team", team_row.id, "Example.COM"]
    done = run(args, tmp_path, **env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"example.com: verified for team {team_row.id}"
    got = await (await client.get("/api/v1/team/sso", headers=owner)).json()
    assert got["domainVerification"][0]["verified"] is True
    assert (await route(client, "a@example.com"))["sso"] is True
    # The owners see it in their audit log, as the server's doing.
    resp = await client.get("/api/v1/audit-log?action=sso.domain_verified", headers=owner)
    [logged] = (await resp.json())["data"]
    assert logged["details"] == {"domain": "example.com", "by": "operator"}
    assert logged["actor"]["via"] == "system" and logged["actor"]["userId"] is None
    refused = run(
        ["team", "verify-domain", *where, "--team", team_row.id, "other.test"], tmp_path, **env
    )
    assert refused.returncode != 0
    assert f"team {team_row.id} does not claim other.test" in refused.stderr


async def test_an_unverified_domain_signs_nobody_in_by_oidc(client, team, idp):
    team_row, _, owner = team
    await set_up(client, owner, idp.issuer, verify=False, enforce=True)
    # Enforce does not apply: the existing member still signs in by password.
    assert await sign_in(client, "member@example.com")
    for login in ("member@example.com", "newcomer@example.com"):  # a member, and JIT
        resp = await sso_sign_in(client, team_row.id, login)
        await assert_error(resp, 401, "UNAUTHORIZED", NOT_YET)
        assert "agentsvc_session" not in resp.cookies
    db = client.app[app_keys.db_key]
    rows = await db.reader.fetchall("SELECT id FROM users WHERE email = 'newcomer@example.com'")
    assert rows == []


async def test_an_unverified_domain_signs_nobody_in_by_saml(client, tmp_path):
    idp = await provider(tmp_path)
    try:
        team_row, _, owner = await owner_team(client)
        await saml_set_up(client, owner, idp, verify=False)
        for email in ("member@example.com", "new.person@example.com"):
            idp.person.email = email
            resp = await saml_sign_in(client, team_row.id)
            await assert_error(resp, 401, "UNAUTHORIZED", NOT_YET)
            assert "agentsvc_session" not in resp.cookies
    finally:
        await idp.close()


async def test_scim_neither_creates_nor_links_at_an_unverified_domain(client, team, idp):
    team_row, _, owner = team
    await set_up(client, owner, idp.issuer, verify=False)
    headers = scim_headers(await new_token(client, owner))
    for email in ("fresh@example.com", "member@example.com"):  # a new account, a link
        resp = await client.post(f"{BASE}/Users", json=okta_user(email), headers=headers)
        body = await assert_scim_error(resp, 400, "invalidValue")
        assert "verified single sign-on domains (none yet" in body["detail"]


async def test_a_squatters_claim_does_not_block_the_real_owner(client, team, idp, dns):
    team_row, _, owner = team
    # Team B claims example.com first (anyone may claim; it does nothing unproven).
    await create_user(client, "boss@other.test")
    squatter = session(await sign_in(client, "boss@other.test"))
    theirs = await set_up(client, squatter, idp.issuer, verify=False)
    assert theirs["domainVerification"][0]["verified"] is False
    ours = await set_up(client, owner, idp.issuer, verify=False)
    ours_value = ours["domainVerification"][0]["recordValue"]
    assert ours_value != theirs["domainVerification"][0]["recordValue"]
    dns.set_txt(NAME, ours_value, theirs["domainVerification"][0]["recordValue"])
    assert (await check(client, owner))[0]["verified"] is True
    # B's claim is gone, B cannot check it, nor claim it again.
    got = await (await client.get("/api/v1/team/sso", headers=squatter)).json()
    assert got["domains"] == [] and got["domainVerification"] == []
    resp = await client.post(
        "/api/v1/team/sso/domains/verify", json={"domain": "example.com"}, headers=squatter
    )
    await assert_error(resp, 404, "NOT_FOUND")
    resp = await client.put(
        "/api/v1/team/sso",
        json={"type": "oidc", "issuer": idp.issuer, "clientId": "x", "domains": ["example.com"]},
        headers=squatter,
    )
    await assert_error(resp, 409, "CONFLICT", "example.com already signs in through another team")
    assert (await route(client, "a@example.com"))["startUrl"].endswith(f"/{team_row.id}/start")


async def test_a_domain_claimed_again_after_removal_must_be_proven_again(client, team, idp):
    _, _, owner = team
    first = await set_up(client, owner, idp.issuer)
    assert first["domainVerification"][0]["verified"] is True
    await add_member(client, team[0].id, "x@example.org")
    moved = await set_up(client, owner, idp.issuer, verify=False, domains=["example.org"])
    assert [d["domain"] for d in moved["domainVerification"]] == ["example.org"]
    again = await set_up(client, owner, idp.issuer, verify=False)
    [state] = again["domainVerification"]
    assert state["verified"] is False
    assert state["recordValue"] != first["domainVerification"][0]["recordValue"]
    assert (await route(client, "a@example.com"))["sso"] is False
