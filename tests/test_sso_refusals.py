"""Single sign-on refusals, each with its own test, against the certified `oidc-provider`
on 127.0.0.1: replayed state, unverified e-mail, a domain that is not the team's, another
team's domain. The token-level attacks (wrong issuer or audience, expired or not-yet-valid
tokens, a replayed nonce, `alg: none`, HS256 signed with the provider's public key) go
through a forging token endpoint put in front of the real provider (ForgingFront in
tests/support/oidc_provider.py): the provider still checks the code, the client and PKCE,
and the front answers an ID token the test made."""

from __future__ import annotations

import time

import pytest

from agentsvc.api import app_keys
from tests.support.accounts import create_user, session, sign_in
from tests.support.errors import assert_error
from tests.support.oidc_provider import hs256_with, start_front, unsigned
from tests.support.sso import (
    at_provider,
    callback,
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


@pytest.fixture
async def front(idp):
    found, server = await start_front(idp)
    yield found
    await server.close()


@pytest.fixture
async def fronted(client, team, front):
    """The team signs in through the forging front; return the team."""
    team_row, _, owner = team
    await set_up(client, owner, front.issuer)
    return team_row


async def refused(resp, words: str) -> None:
    await assert_error(resp, 401, "UNAUTHORIZED", words)
    assert "agentsvc_session" not in resp.cookies


async def test_a_replayed_state_is_refused(client, team, idp):
    team_row, _, owner = team
    await set_up(client, owner, idp.issuer)
    params, state_cookie = await at_provider(client, team_row.id, "member@example.com")
    resp = await callback(client, params, state_cookie)
    assert resp.status == 303
    await refused(await callback(client, params, state_cookie), "unknown, used or expired")


async def test_a_state_from_another_browser_is_refused(client, team, idp):
    team_row, _, owner = team
    await set_up(client, owner, idp.issuer)
    params, _ = await at_provider(client, team_row.id, "member@example.com")
    await refused(await callback(client, params, None), "did not start this sign-in")


async def test_an_unverified_email_is_refused(client, team, idp):
    team_row, _, owner = team
    await set_up(client, owner, idp.issuer)
    idp.set_claims("unverified@example.com", email_verified=False)
    resp = await sso_sign_in(client, team_row.id, "unverified@example.com")
    await refused(resp, "not verified this e-mail address")


async def test_a_domain_that_is_not_the_teams_is_refused(client, team, idp):
    team_row, _, owner = team
    await set_up(client, owner, idp.issuer)
    resp = await sso_sign_in(client, team_row.id, "someone@elsewhere.test")
    await refused(resp, "elsewhere.test addresses do not sign in to this team")


async def test_another_teams_domain_is_refused(client, team, idp):
    team_row, _, owner = team
    await set_up(client, owner, idp.issuer)
    # Another team holds other.test through its own SSO; this team's provider vouching for
    # an address there does not sign it in here.
    _, other = await create_user(client, "boss@other.test")
    other_owner = session(await sign_in(client, "boss@other.test"))
    await set_up(client, other_owner, idp.issuer, domains=["other.test"])
    resp = await sso_sign_in(client, team_row.id, "boss@other.test")
    await refused(resp, "other.test addresses do not sign in to this team")


def _forged(front, **changes):
    def forge(claims):
        return front.provider.sign({**claims, **changes})

    return forge


async def test_a_token_from_another_issuer_is_refused(client, fronted, front, idp):
    front.forge = _forged(front, iss=idp.issuer)  # the real provider's, not the team's
    resp = await sso_sign_in(client, fronted.id, "member@example.com")
    await refused(resp, "from another issuer")


async def test_a_token_for_another_client_is_refused(client, fronted, front):
    front.forge = _forged(front, aud="someone-else")
    await refused(await sso_sign_in(client, fronted.id, "member@example.com"), "another client")


async def test_a_token_for_several_audiences_names_us_as_authorized_party(client, fronted, front):
    front.forge = _forged(front, aud=["agentsvc-tests", "someone-else"], azp="someone-else")
    await refused(await sso_sign_in(client, fronted.id, "member@example.com"), "another client")


async def test_an_expired_token_is_refused(client, fronted, front):
    now = int(time.time())
    front.forge = _forged(front, iat=now - 3600, exp=now - 600)
    await refused(await sso_sign_in(client, fronted.id, "member@example.com"), "has expired")


async def test_a_token_not_valid_yet_is_refused(client, fronted, front):
    now = int(time.time())
    front.forge = _forged(front, nbf=now + 600, exp=now + 1200)
    await refused(await sso_sign_in(client, fronted.id, "member@example.com"), "not valid yet")


async def test_a_token_issued_in_the_future_is_refused(client, fronted, front):
    now = int(time.time())
    front.forge = _forged(front, iat=now + 600, exp=now + 1200)
    await refused(await sso_sign_in(client, fronted.id, "member@example.com"), "not valid yet")


async def test_a_small_clock_skew_is_accepted(client, fronted, front):
    now = int(time.time())
    front.forge = _forged(front, iat=now + 30, nbf=now + 30)
    resp = await sso_sign_in(client, fronted.id, "member@example.com")
    assert resp.status == 303, await resp.text()


async def test_a_replayed_nonce_is_refused(client, fronted, front):
    resp = await sso_sign_in(client, fronted.id, "member@example.com")
    assert resp.status == 303, await resp.text()
    earlier = front.seen[-1]  # a valid ID token of the sign-in just done
    front.forge = lambda claims: earlier
    resp = await sso_sign_in(client, fronted.id, "member@example.com")
    await refused(resp, "not issued for this sign-in (nonce)")


async def test_alg_none_is_refused(client, fronted, front):
    front.forge = unsigned
    await refused(await sso_sign_in(client, fronted.id, "member@example.com"), "'none'")


async def test_hs256_signed_with_the_public_key_is_refused(client, fronted, front, idp):
    front.forge = lambda claims: hs256_with(idp.public_pem(), claims)
    await refused(await sso_sign_in(client, fronted.id, "member@example.com"), "'HS256'")


async def test_a_token_signed_with_another_key_is_refused(client, fronted, front):
    import jwt
    from cryptography.hazmat.primitives.asymmetric import rsa

    other = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    front.forge = lambda claims: jwt.encode(
        claims, other, algorithm="RS256", headers={"kid": "test-key-1"}
    )
    await refused(await sso_sign_in(client, fronted.id, "member@example.com"), "not valid")


async def test_the_front_without_forgery_signs_in(client, fronted):
    resp = await sso_sign_in(client, fronted.id, "member@example.com")
    assert (await whoami(client, resp))["user"]["email"] == "member@example.com"


async def test_client_secret_post_when_the_provider_asks_for_it(client, team, front):
    team_row, _, owner = team
    front.auth_methods = ["client_secret_post"]
    await set_up(client, owner, front.issuer, clientId="agentsvc-tests-post")
    resp = await sso_sign_in(client, team_row.id, "member@example.com")
    assert (await whoami(client, resp))["user"]["email"] == "member@example.com"


async def test_an_expired_state_is_refused(client, team, idp):
    team_row, _, owner = team
    await set_up(client, owner, idp.issuer)
    params, state_cookie = await at_provider(client, team_row.id, "member@example.com")
    async with client.app[app_keys.db_key].write() as tx:
        await tx.execute("UPDATE sso_states SET expires_at = '2020-01-01T00:00:00.000Z'")
    await refused(await callback(client, params, state_cookie), "unknown, used or expired")


async def test_the_issuer_is_read_through_the_outbound_guard(make_client, idp):
    guarded = await make_client(outbound={"allow_private": False})
    _, _, owner = await owner_team(guarded)
    port = idp.issuer.rpartition(":")[2]
    body = {
        "type": "oidc",
        "issuer": f"https://127.0.0.1:{port}",
        "clientId": "x",
        "clientSecret": "y",
        "domains": ["example.com"],
    }
    resp = await guarded.put("/api/v1/team/sso", json=body, headers=owner)
    await assert_error(
        resp, 400, "VALIDATION_ERROR", "could not be read: address 127.0.0.1 refused"
    )
    body["issuer"] = idp.issuer  # http:// only where private addresses are allowed
    resp = await guarded.put("/api/v1/team/sso", json=body, headers=owner)
    await assert_error(resp, 400, "VALIDATION_ERROR", "https://")
