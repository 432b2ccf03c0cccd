"""What SCIM refuses, each answered as RFC 7644 §3.12 writes errors: no token, a wrong,
revoked or another team's token (nothing of the other team reachable or changeable), an
address outside the team's domains, filters we do not answer, bodies and values over the
limits, a page over the cap, the team's owner, and the rate limit."""

from __future__ import annotations

import pytest

from agentsvc.api import app_keys
from agentsvc.ids import now_iso
from agentsvc.store import accounts as account_store
from tests.support.accounts import bearer, create_user, key_for, session, sign_in
from tests.support.scim import (
    BASE,
    MEDIA,
    ScimTeam,
    assert_scim_error,
    new_group,
    new_token,
    okta_user,
    patch,
    provision,
    scim_headers,
    scim_json,
    scim_team,
)
from tests.support.sso import provider_for_module, set_up


@pytest.fixture(scope="module")
def idp(tmp_path_factory):
    yield from provider_for_module(tmp_path_factory)


@pytest.fixture
async def team(client, idp):
    return await scim_team(client, idp.issuer)


async def _other_team(client, idp) -> ScimTeam:
    """boss@other.test's team, with SSO at other.test and its own SCIM token."""
    user, other = await create_user(client, "boss@other.test")
    owner = session(await sign_in(client, "boss@other.test"))
    await set_up(client, owner, idp.issuer, domains=["other.test"])
    return ScimTeam(other, user, owner, await new_token(client, owner))


async def test_no_wrong_or_revoked_token_reaches_nothing(client, team):
    user = await provision(client, team, okta_user("kept@example.com"))
    api_key = await key_for(client, team.team.id, team.owner_user.id)
    refused = {
        "no credential": {},
        "an API key": bearer(api_key),
        "the owner's session": team.owner,
        "a wrong token": scim_headers("scim_" + "x" * 43),
        "not a bearer": {"Authorization": f"Basic {team.token}"},
    }
    for who, headers in refused.items():
        for method, path in (
            ("GET", f"{BASE}/Users"),
            ("GET", f"{BASE}/Users/{user['id']}"),
            ("DELETE", f"{BASE}/Users/{user['id']}"),
            ("POST", f"{BASE}/Groups"),
        ):
            resp = await client.request(method, path, headers=headers, json={})
            body = await assert_scim_error(resp, 401)
            assert "scim_" not in body["detail"], who
    resp = await client.delete("/api/v1/team/scim-token", headers=team.owner)
    assert resp.status == 200
    resp = await client.get(f"{BASE}/Users/{user['id']}", headers=team.scim)
    await assert_scim_error(resp, 401, contains="revoked")
    # Revoking again: there is none.
    resp = await client.delete("/api/v1/team/scim-token", headers=team.owner)
    assert resp.status == 404


async def test_another_teams_token_reaches_nothing_of_this_team(client, team, idp):
    user = await provision(client, team, okta_user("kept@example.com"))
    group = await new_group(client, team, "agents", [user["id"]])
    intruder = await _other_team(client, idp)
    theirs = intruder.scim
    for method, path, body in (
        ("GET", f"{BASE}/Users/{user['id']}", None),
        ("PUT", f"{BASE}/Users/{user['id']}", okta_user("kept@example.com", active=False)),
        (
            "PATCH",
            f"{BASE}/Users/{user['id']}",
            patch({"op": "replace", "path": "active", "value": False}),
        ),
        ("DELETE", f"{BASE}/Users/{user['id']}", None),
        ("GET", f"{BASE}/Groups/{group['id']}", None),
        ("PUT", f"{BASE}/Groups/{group['id']}", {"displayName": "x", "members": []}),
        ("PATCH", f"{BASE}/Groups/{group['id']}", patch({"op": "remove", "path": "members"})),
        ("DELETE", f"{BASE}/Groups/{group['id']}", None),
    ):
        resp = await client.request(method, path, json=body, headers=theirs)
        await assert_scim_error(resp, 404)
    for path, query in (
        (f"{BASE}/Users", 'userName eq "kept@example.com"'),
        (f"{BASE}/Groups", None),
    ):
        params = {"filter": query} if query else {}
        listed = await scim_json(await client.get(path, params=params, headers=theirs), 200)
        assert listed["totalResults"] == 0
    # Their group cannot take in our user, nor can they provision our domain's people.
    own = await new_group(client, intruder, "theirs")
    add = patch({"op": "add", "path": "members", "value": [{"value": user["id"]}]})
    resp = await client.patch(f"{BASE}/Groups/{own['id']}", json=add, headers=theirs)
    await assert_scim_error(resp, 400, "invalidValue", "no provisioned user")
    resp = await client.post(f"{BASE}/Users", json=okta_user("kept@example.com"), headers=theirs)
    await assert_scim_error(resp, 400, "invalidValue", "other.test")
    # Everything of ours is as it was.
    got = await scim_json(await client.get(f"{BASE}/Users/{user['id']}", headers=team.scim), 200)
    assert got["active"] is True and got["groups"][0]["value"] == group["id"]


async def test_addresses_outside_the_teams_domains_are_refused(client, team, idp):
    for email in ("someone@elsewhere.test", "someone@sub.example.com", "not-an-address"):
        resp = await client.post(f"{BASE}/Users", json=okta_user(email), headers=team.scim)
        body = await assert_scim_error(resp, 400, "invalidValue")
        assert "verified single sign-on domains (example.com)" in body["detail"]
    # An account elsewhere (its own team) at another domain is not taken over either.
    await create_user(client, "victim@other.test")
    resp = await client.post(
        f"{BASE}/Users", json=okta_user("victim@other.test"), headers=team.scim
    )
    await assert_scim_error(resp, 400, "invalidValue")


async def test_unanswerable_filters_are_invalid_filter(client, team):
    for query in (
        'userName sw "a"',
        'title eq "x"',
        "userName eq kept",
        'userName eq "a" and active eq true',
        'userName eq "' + "a" * 300 + '"',
        'emails[type eq "work"] eq "x"',
        'userName eq ""',
    ):
        resp = await client.get(f"{BASE}/Users", params={"filter": query}, headers=team.scim)
        await assert_scim_error(resp, 400, "invalidFilter")
    resp = await client.get(
        f"{BASE}/Groups", params={"filter": 'userName eq "x"'}, headers=team.scim
    )
    await assert_scim_error(resp, 400, "invalidFilter")


async def test_bodies_and_values_over_the_limits(client, team):
    big = okta_user("big@example.com", nickName="x" * 600_000)
    resp = await client.post(f"{BASE}/Users", json=big, headers=team.scim)
    await assert_scim_error(resp, 413)
    long_name = okta_user("a" * 300 + "@example.com")
    resp = await client.post(f"{BASE}/Users", json=long_name, headers=team.scim)
    await assert_scim_error(resp, 400, "invalidValue")
    resp = await client.post(
        f"{BASE}/Users", data=b'{"userName": ', headers={**team.scim, "Content-Type": MEDIA}
    )
    await assert_scim_error(resp, 400, "invalidSyntax")
    user = await provision(client, team, okta_user("kept@example.com"))
    for body in (
        patch({"op": "move", "path": "active", "value": False}),
        {"schemas": [], "Operations": []},
        patch({"op": "remove"}),
        patch({"op": "replace", "path": "active", "value": "maybe"}),
        patch({"op": "replace", "path": "userName", "value": "other@example.com"}),
        patch(*[{"op": "add", "path": "title", "value": "x"}] * 101),
    ):
        resp = await client.patch(f"{BASE}/Users/{user['id']}", json=body, headers=team.scim)
        await assert_scim_error(resp, 400)
    resp = await client.post(f"{BASE}/Users", json=okta_user("kept@example.com"), headers=team.scim)
    await assert_scim_error(resp, 409, "uniqueness")
    await new_group(client, team, "agents")
    resp = await client.post(f"{BASE}/Groups", json={"displayName": "agents"}, headers=team.scim)
    await assert_scim_error(resp, 409, "uniqueness")


async def test_count_over_the_cap_returns_at_most_a_hundred(client, team):
    for n in range(101):
        await provision(client, team, okta_user(f"u{n:03d}@example.com", f"ext-{n}"))
    resp = await client.get(f"{BASE}/Users", params={"count": 1000}, headers=team.scim)
    page = await scim_json(resp, 200)
    assert page["totalResults"] == 101
    assert page["itemsPerPage"] == len(page["Resources"]) == 100
    resp = await client.get(f"{BASE}/Users", params={"count": "many"}, headers=team.scim)
    await assert_scim_error(resp, 400, "invalidValue")


async def test_the_teams_owner_is_never_deprovisioned(client, team):
    owner = await provision(client, team, okta_user("owner@example.com"))
    for method, body in (
        ("PATCH", patch({"op": "replace", "value": {"active": False}})),
        ("PUT", okta_user("owner@example.com", active=False)),
        ("DELETE", None),
    ):
        resp = await client.request(
            method, f"{BASE}/Users/{owner['id']}", json=body, headers=team.scim
        )
        await assert_scim_error(resp, 403, contains="owner cannot be deprovisioned")
    resp = await client.get("/api/v1/team/members", headers=team.owner)
    assert "owner@example.com" in str(await resp.json())


async def test_scim_calls_take_the_teams_rate_limit(client, team):
    async with client.app[app_keys.db_key].write() as tx:
        await account_store.set_plan(tx, team.team.id, "free", now_iso())  # 20 a minute
    statuses = []
    for _ in range(25):
        resp = await client.get(f"{BASE}/Users", headers=team.scim)
        statuses.append(resp.status)
        if resp.status == 429:
            body = await assert_scim_error(resp, 429)
            assert "Rate limit" in body["detail"] and int(resp.headers["Retry-After"]) >= 1
            break
    assert statuses[-1] == 429 and statuses.count(200) <= 21, statuses
