"""SAML sign-in refusals, each with its own test, against the real pysaml2 identity
provider on 127.0.0.1 told to forge (tests/support/saml_idp.py): unsigned or wrongly
signed assertions, XML signature wrapping, a replayed assertion, another SP's, a wrong
Recipient or Destination, expired or not yet valid, another domain, unsolicited, too big.
Each: the clear sentence a person sees, no session, nobody created."""

from __future__ import annotations

import base64
import re
from datetime import UTC, datetime, timedelta

import pytest

from agentsvc.api import app_keys
from tests.support.errors import assert_error
from tests.support.saml import at_provider, post_acs, provider, saml_set_up, saml_sign_in
from tests.support.saml_idp import Forgery
from tests.support.sso import owner_team, whoami

EVIL = "evil@example.com"
DS = "http://www.w3.org/2000/09/xmldsig#"
_ASSERTION = re.compile(r"<ns1:Assertion .*?</ns1:Assertion>", re.S)


@pytest.fixture
async def idp(tmp_path):
    found = await provider(tmp_path)
    yield found
    await found.close()


@pytest.fixture
async def team(client, idp):
    """The team signs in with the provider; the person signing in is new (JIT)."""
    team_row, _, owner = await owner_team(client)
    body = await saml_set_up(client, owner, idp)
    idp.person.email = "new.person@example.com"
    return team_row, body


async def refused(client, resp, words: str, *, nobody: str = "new.person@example.com") -> None:
    """A 401 saying why, no session cookie, and no account made for the person."""
    await assert_error(resp, 401, "UNAUTHORIZED", words)
    assert "Single sign-on failed" in (await resp.json())["error"]["message"]
    assert "agentsvc_session" not in resp.cookies
    db = client.app[app_keys.db_key]
    for email in {nobody, EVIL}:
        rows = await db.reader.fetchall("SELECT id FROM users WHERE email = ?", (email,))
        assert rows == [], f"{email} was created"


def _signed_assertion(xml: str) -> str:
    return _ASSERTION.search(xml).group(0)


def _evil_twin(signed: str) -> str:
    """The assertion unsigned, with another id and the attacker's address."""
    evil = re.sub(r"<(\w+):Signature[ >].*?</\1:Signature>", "", signed, count=1, flags=re.S)
    evil = re.sub(r'ID="[^"]+"', 'ID="id-evil"', evil, count=1)
    return evil.replace("new.person@example.com", EVIL)


def _at(seconds: float) -> str:
    return (datetime.now(UTC) + timedelta(seconds=seconds)).strftime("%Y-%m-%dT%H:%M:%SZ")


def _times(not_before: float, not_on_or_after: float):
    def change(xml: str) -> str:
        xml = re.sub(r'NotBefore="[^"]+"', f'NotBefore="{_at(not_before)}"', xml)
        xml = re.sub(r'NotOnOrAfter="[^"]+"', f'NotOnOrAfter="{_at(not_on_or_after)}"', xml)
        return xml

    return change


async def test_an_unsigned_assertion_is_refused(client, team, idp):
    idp.forgery = Forgery(sign_assertion=False)
    resp = await saml_sign_in(client, team[0].id)
    await refused(client, resp, "not signed by the team's identity provider")


async def test_an_assertion_signed_with_another_key_is_refused(client, team, idp):
    idp.forgery = Forgery(other_key=True)
    resp = await saml_sign_in(client, team[0].id)
    await refused(client, resp, "not signed by the team's identity provider")


async def test_an_assertion_signed_with_sha1_is_refused(client, team, idp):
    idp.forgery = Forgery(sha1=True)
    resp = await saml_sign_in(client, team[0].id)
    await refused(client, resp, "signed with SHA-1")


async def test_a_signed_response_with_an_unsigned_assertion_is_refused(client, team, idp):
    # Our rule (docs/owners/sso.md): the assertion itself must be signed.
    idp.forgery = Forgery(sign_assertion=False, sign_response=True)
    resp = await saml_sign_in(client, team[0].id)
    await refused(client, resp, "not signed by the team's identity provider")


async def test_wrapping_a_second_unsigned_assertion_beside_the_signed_one_is_refused(
    client, team, idp
):
    def beside(xml: str) -> str:
        signed = _signed_assertion(xml)
        return xml.replace(signed, _evil_twin(signed) + signed)

    idp.forgery = Forgery(tamper=beside)
    resp = await saml_sign_in(client, team[0].id)
    await refused(client, resp, "exactly one assertion")


async def test_wrapping_the_signed_assertion_into_extensions_is_refused(client, team, idp):
    def into_extensions(xml: str) -> str:
        signed = _signed_assertion(xml)
        xml = xml.replace(signed, _evil_twin(signed))
        issuer_end = xml.index("</ns1:Issuer>") + len("</ns1:Issuer>")
        return xml[:issuer_end] + f"<ns0:Extensions>{signed}</ns0:Extensions>" + xml[issuer_end:]

    idp.forgery = Forgery(tamper=into_extensions)
    resp = await saml_sign_in(client, team[0].id)
    await refused(client, resp, "exactly one assertion")


async def test_wrapping_the_signed_assertion_into_a_signature_object_is_refused(client, team, idp):
    def into_object(xml: str) -> str:
        signed = _signed_assertion(xml)
        evil = _evil_twin(signed)
        wrapper = f'<ds:Signature xmlns:ds="{DS}"><ds:Object>{signed}</ds:Object></ds:Signature>'
        at = evil.index("</ns1:Issuer>") + len("</ns1:Issuer>")
        return xml.replace(signed, evil[:at] + wrapper + evil[at:])

    idp.forgery = Forgery(tamper=into_object)
    resp = await saml_sign_in(client, team[0].id)
    await refused(client, resp, "exactly one assertion")


async def test_a_signed_response_whose_assertion_was_swapped_is_refused(client, team, idp):
    def swap(xml: str) -> str:
        signed = _ASSERTION.search(xml).group(0)
        return xml.replace(signed, _evil_twin(signed))

    idp.forgery = Forgery(sign_assertion=False, sign_response=True, tamper=swap)
    resp = await saml_sign_in(client, team[0].id)
    await refused(client, resp, "not signed by the team's identity provider")


async def test_a_replayed_assertion_is_refused(client, team, idp):
    action, fields, relay_cookie = await at_provider(client, team[0].id)
    first = await post_acs(client, action, fields, relay_cookie)
    assert first.status == 303, await first.text()
    used = idp.last_assertion_id
    # The same post again: its RelayState was used.
    again = await post_acs(client, action, fields, relay_cookie)
    await assert_error(again, 401, "UNAUTHORIZED", "unknown, used or expired")
    # A new sign-in answered with the same assertion id, signed by the provider itself.
    idp.forgery = Forgery(
        before_signing=lambda xml: re.sub(
            r'(<ns1:Assertion [^>]*ID=")[^"]+', rf"\g<1>{used}", xml, count=1
        )
    )
    resp = await saml_sign_in(client, team[0].id)
    await assert_error(resp, 401, "UNAUTHORIZED", "this assertion was already used")
    assert "agentsvc_session" not in resp.cookies


async def test_an_assertion_for_another_sp_is_refused(client, team, idp):
    entity_id = team[1]["entityId"]
    idp.forgery = Forgery(
        before_signing=lambda xml: xml.replace(
            f">{entity_id}</ns1:Audience>", ">https://other-sp.test/metadata</ns1:Audience>"
        )
    )
    resp = await saml_sign_in(client, team[0].id)
    await refused(client, resp, "for another service provider (Audience)")


async def test_a_wrong_recipient_is_refused(client, team, idp):
    acs = team[1]["acsUrl"]
    idp.forgery = Forgery(
        before_signing=lambda xml: xml.replace(
            f'Recipient="{acs}"', 'Recipient="https://other-sp.test/acs"'
        )
    )
    resp = await saml_sign_in(client, team[0].id)
    await refused(client, resp, "sent to another address (Recipient)")


async def test_a_wrong_destination_is_refused(client, team, idp):
    acs = team[1]["acsUrl"]
    idp.forgery = Forgery(
        before_signing=lambda xml: xml.replace(
            f'Destination="{acs}"', 'Destination="https://other-sp.test/acs"'
        )
    )
    resp = await saml_sign_in(client, team[0].id)
    await refused(client, resp, "sent to another address (Destination)")


async def test_an_expired_assertion_is_refused_beyond_the_skew(client, team, idp):
    idp.forgery = Forgery(before_signing=_times(-900, -300))
    resp = await saml_sign_in(client, team[0].id)
    await refused(client, resp, "the assertion has expired")
    # Within the skew (60 seconds by default): accepted.
    idp.forgery = Forgery(before_signing=_times(-600, -20))
    resp = await saml_sign_in(client, team[0].id)
    assert resp.status == 303, await resp.text()


async def test_a_not_yet_valid_assertion_is_refused_beyond_the_skew(client, team, idp):
    idp.forgery = Forgery(before_signing=_times(300, 900))
    resp = await saml_sign_in(client, team[0].id)
    await refused(client, resp, "not valid yet")
    idp.forgery = Forgery(before_signing=_times(20, 600))
    resp = await saml_sign_in(client, team[0].id)
    assert resp.status == 303, await resp.text()


async def test_an_address_outside_the_teams_domains_is_refused(client, team, idp):
    idp.person.email = "someone@elsewhere.test"
    resp = await saml_sign_in(client, team[0].id)
    await refused(
        client,
        resp,
        "elsewhere.test addresses do not sign in to this team",
        nobody="someone@elsewhere.test",
    )


async def test_an_unsolicited_response_is_refused(client, team, idp):
    idp.forgery = Forgery(before_signing=lambda xml: re.sub(r' InResponseTo="[^"]+"', "", xml))
    resp = await saml_sign_in(client, team[0].id)
    await refused(client, resp, "not for this sign-in (InResponseTo)")


async def test_an_unknown_in_response_to_is_refused(client, team, idp):
    idp.forgery = Forgery(
        before_signing=lambda xml: re.sub(
            r'InResponseTo="[^"]+"', 'InResponseTo="id-not-ours"', xml
        )
    )
    resp = await saml_sign_in(client, team[0].id)
    await refused(client, resp, "not for this sign-in (InResponseTo)")


async def test_a_response_without_the_browsers_relay_state_is_refused(client, team, idp):
    action, fields, _ = await at_provider(client, team[0].id)
    await refused(client, await post_acs(client, action, fields, None), "did not start")
    fields.pop("RelayState")
    await refused(client, await post_acs(client, action, fields, "x"), "no RelayState")


async def test_an_oversized_saml_response_is_refused(client, team, idp):
    action, fields, relay_cookie = await at_provider(client, team[0].id)
    fields["SAMLResponse"] = base64.b64encode(b"<x/>" * 70_000).decode()
    await refused(client, await post_acs(client, action, fields, relay_cookie), "too large")
    fields["SAMLResponse"] = "A" * (2 * 2**20)
    resp = await post_acs(client, action, fields, relay_cookie)
    await assert_error(resp, 413, "PAYLOAD_TOO_LARGE")


async def test_an_honest_sign_in_still_works_after_the_refusals(client, team, idp):
    idp.forgery = Forgery(sign_assertion=False)
    await refused(client, await saml_sign_in(client, team[0].id), "not signed")
    idp.forgery = Forgery()
    me = await whoami(client, await saml_sign_in(client, team[0].id))
    assert me["user"]["email"] == "new.person@example.com"
