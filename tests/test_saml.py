"""Single sign-on with SAML 2.0 against a real pysaml2 identity provider on 127.0.0.1
(tests/support/saml_idp.py): the team's settings and what to paste, our metadata, the
sign-in (start by HTTP-Redirect, ACS by HTTP-POST), just-in-time members, roles from
groups at every sign-in, and `enforce`. The refusals are in tests/test_saml_refusals.py."""

from __future__ import annotations

import asyncio
import threading
import time
from urllib.parse import parse_qs, urlsplit

import pytest

from agentsvc.api import app_keys
from agentsvc.services.sso import saml_flow
from tests.support.accounts import session
from tests.support.errors import assert_error
from tests.support.saml import (
    RELAY_COOKIE,
    provider,
    saml_body,
    saml_set_up,
    saml_sign_in,
    session_token,
)
from tests.support.sso import owner_team, whoami


@pytest.fixture
async def idp(tmp_path):
    found = await provider(tmp_path)
    yield found
    await found.close()


@pytest.fixture
async def team(client):
    return await owner_team(client)


async def test_owner_sets_up_saml_and_gets_what_to_paste(client, team, idp):
    team_row, _, owner = team
    body = await saml_set_up(
        client, owner, idp, roleMapping={"support-admins": "admin"}, groupsAttribute="memberOf"
    )
    public = client.app[app_keys.settings_key].server.public_url.rstrip("/")
    base = f"{public}/api/v1/auth/saml/{team_row.id}"
    assert body["type"] == "saml"
    assert (body["entityId"], body["acsUrl"]) == (f"{base}/metadata", f"{base}/acs")
    assert body["metadataUrl"] == f"{base}/metadata"
    assert (body["idpEntityId"], body["idpSsoUrl"]) == (idp.entity_id, f"{idp.base_url}/sso")
    assert (body["emailAttribute"], body["nameAttribute"]) == ("email", "name")
    assert body["groupsAttribute"] == "memberOf"
    assert body["roleMapping"] == {"support-admins": "admin"}
    assert body["idpMetadataXml"] == idp.metadata_xml()
    assert "issuer" not in body and "clientSecret" not in body
    resp = await client.get("/api/v1/team/sso", headers=owner)
    assert (await resp.json()) == body
    # Our metadata: the entity id, the ACS by HTTP-POST, signed assertions wanted.
    resp = await client.get(f"/api/v1/auth/saml/{team_row.id}/metadata")
    assert resp.content_type == "application/samlmetadata+xml"
    xml = await resp.text()
    assert f'entityID="{base}/metadata"' in xml and f'Location="{base}/acs"' in xml
    assert 'WantAssertionsSigned="true"' in xml
    resp = await client.get("/api/v1/auth/sso", params={"email": "someone@example.com"})
    data = (await resp.json())["data"]
    assert data["sso"] is True and data["startUrl"] == f"/api/v1/auth/saml/{team_row.id}/start"
    assert data["protocol"] == "saml"
    resp = await client.delete("/api/v1/team/sso", headers=owner)
    assert resp.status == 200
    log = await client.get("/api/v1/audit-log", headers=owner)
    entries = (await log.json())["data"]
    assert [(e["action"], e["target"]["label"]) for e in entries[:3]] == [
        ("sso.removed", "saml"),
        ("sso.domain_verified", "example.com"),  # by the operator, here
        ("sso.updated", "saml"),
    ]
    resp = await client.get(f"/api/v1/auth/saml/{team_row.id}/metadata")
    await assert_error(resp, 404, "NOT_FOUND")


async def test_bad_metadata_is_a_clear_400(client, team, idp):
    _, _, owner = team
    good = idp.metadata_xml()
    evil = (
        '<?xml version="1.0"?><!DOCTYPE x [<!ENTITY e SYSTEM "file:///etc/passwd">]>'
        + good.split("?>", 1)[-1]
    )
    cases = [
        ("not xml at all", "not well-formed XML"),
        (evil, "without a DTD"),
        (good.replace("IDPSSODescriptor", "SPSSODescriptor"), "exactly one identity provider"),
        (good.replace("HTTP-Redirect", "HTTP-Artifact"), "no sign-in by HTTP-Redirect"),
        (good.replace("X509Certificate>", "X509Data>"), "no signing certificate"),
        ("x" * 300_000, "idpMetadataXml"),
    ]
    mixed = saml_body(idp, clientId="abc")
    resp = await client.put("/api/v1/team/sso", json=mixed, headers=owner)
    await assert_error(resp, 400, "VALIDATION_ERROR", "clientId: not a setting of SAML")
    mixed = {"type": "oidc", "issuer": "https://x.test", "clientId": "a", "domains": ["a.test"]}
    resp = await client.put(
        "/api/v1/team/sso", json={**mixed, "emailAttribute": "mail"}, headers=owner
    )
    await assert_error(resp, 400, "VALIDATION_ERROR", "emailAttribute: not a setting of OpenID")
    for xml, words in cases:
        resp = await client.put(
            "/api/v1/team/sso", json=saml_body(idp, idpMetadataXml=xml), headers=owner
        )
        await assert_error(resp, 400, "VALIDATION_ERROR", words)
        assert "Traceback" not in await resp.text() and "ParseError" not in await resp.text()


async def test_start_redirects_to_the_provider_with_an_authn_request(client, team, idp):
    team_row, _, owner = team
    await saml_set_up(client, owner, idp)
    resp = await client.get(f"/api/v1/auth/saml/{team_row.id}/start", allow_redirects=False)
    assert resp.status == 302
    location = resp.headers["Location"]
    assert location.startswith(f"{idp.base_url}/sso?")
    query = {k: v[0] for k, v in parse_qs(urlsplit(location).query).items()}
    assert query["SAMLRequest"] and query["RelayState"] == resp.cookies[RELAY_COOKIE].value
    assert len(query["RelayState"]) >= 43
    resp = await client.get("/api/v1/auth/saml/team_nope/start", allow_redirects=False)
    await assert_error(resp, 404, "NOT_FOUND")
    resp = await client.get(
        f"/api/v1/auth/saml/{team_row.id}/start",
        params={"callbackUrl": "https://evil.test/"},
        allow_redirects=False,
    )
    await assert_error(resp, 400, "VALIDATION_ERROR", "callbackUrl")


async def test_first_sign_in_creates_the_member_and_groups_set_the_role(client, team, idp):
    team_row, _, owner = team
    await saml_set_up(client, owner, idp, roleMapping={"support-admins": "admin"})
    idp.person.email, idp.person.name = "new.person@example.com", "New Person"
    idp.person.groups = ["support-admins", "everyone"]
    resp = await saml_sign_in(client, team_row.id)
    assert resp.status == 303, await resp.text()
    assert resp.headers["Location"] == "/dashboard/"
    me = await whoami(client, resp)
    assert (me["user"]["email"], me["user"]["name"]) == ("new.person@example.com", "New Person")
    assert (me["team"]["id"], me["team"]["role"]) == (team_row.id, "owner")
    assert [t["id"] for t in me["teams"]] == [team_row.id]
    # The session cookie works on the API (an owner route: the role came from the group).
    resp2 = await client.get("/api/v1/team/sso", headers=session(session_token(resp)))
    assert resp2.status == 200, await resp2.text()
    # Out of the group: a member at the next sign-in.
    idp.person.groups = ["everyone"]
    me = await whoami(client, await saml_sign_in(client, team_row.id))
    assert me["team"]["role"] == "member"


async def test_an_existing_member_signs_in_by_name_id_and_the_founder_keeps_ownership(
    client, team, idp
):
    team_row, _, owner = team
    # An attribute the provider does not send: the NameID (an address) is used.
    await saml_set_up(client, owner, idp, emailAttribute="mail", roleMapping={"x": "admin"})
    idp.person.email = "member@example.com"
    me = await whoami(client, await saml_sign_in(client, team_row.id))
    assert (me["user"]["email"], me["team"]["role"]) == ("member@example.com", "member")
    idp.person.email = "owner@example.com"
    me = await whoami(client, await saml_sign_in(client, team_row.id))
    assert me["team"]["role"] == "owner"


async def test_enforce_refuses_passwords_and_links_for_the_domain(client, team, idp):
    team_row, _, owner = team
    await saml_set_up(client, owner, idp, enforce=True)
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
    idp.person.email = "member@example.com"
    resp = await saml_sign_in(client, team_row.id)
    assert resp.status == 303, await resp.text()


async def test_a_server_without_xmlsec1_says_so(client, team, idp, monkeypatch, tmp_path):
    team_row, _, owner = team
    await saml_set_up(client, owner, idp)
    monkeypatch.setenv("PATH", str(tmp_path))  # xmlsec1 nowhere to be found
    resp = await client.get(f"/api/v1/auth/saml/{team_row.id}/start", allow_redirects=False)
    await assert_error(resp, 401, "UNAUTHORIZED", "its operator must install xmlsec1")
    resp = await client.put("/api/v1/team/sso", json=saml_body(idp), headers=owner)
    await assert_error(resp, 400, "VALIDATION_ERROR", "SAML needs xmlsec1 on the server")


async def test_the_signature_checks_run_off_the_event_loop_a_few_at_a_time():
    crypto = saml_flow.Crypto()
    lock, running, peak, ticks = threading.Lock(), 0, 0, 0

    def check() -> bool:  # stands for xmlsec1: a blocking call of 50 ms
        nonlocal running, peak
        with lock:
            running += 1
            peak = max(peak, running)
        time.sleep(0.05)
        with lock:
            running -= 1
        return True

    async def ticker() -> None:
        nonlocal ticks
        while True:
            await asyncio.sleep(0.005)
            ticks += 1

    task = asyncio.create_task(ticker())
    results = await asyncio.gather(*(crypto.run(check) for _ in range(12)))
    task.cancel()
    assert results == [True] * 12
    assert peak == saml_flow.MAX_CONCURRENT
    assert ticks >= 10  # the loop kept turning through three rounds of 50 ms
