"""SCIM 2.0 provisioning as RFC 7644 writes it, with the request bodies Okta and Entra ID
document: the team's token, Users and Groups (create, read, filter, page, replace, PATCH,
delete), roles from groups, deactivation (sessions and keys end at once) and reactivation,
and the discovery endpoints. The refusals are in tests/test_scim_refusals.py."""

from __future__ import annotations

import pytest

from agentsvc.api import app_keys
from tests.support.accounts import bearer, create_user, key_for, session, sign_in
from tests.support.errors import assert_error
from tests.support.scim import (
    BASE,
    ENTERPRISE,
    GROUP,
    USER,
    assert_scim_error,
    entra_user,
    new_group,
    new_token,
    okta_user,
    patch,
    provision,
    scim_headers,
    scim_json,
    scim_team,
)
from tests.support.sso import provider_for_module, sso_sign_in, whoami

ADMINS = "support-admins"


@pytest.fixture(scope="module")
def idp(tmp_path_factory):
    yield from provider_for_module(tmp_path_factory)


@pytest.fixture
async def team(client, idp):
    return await scim_team(client, idp.issuer, {ADMINS: "admin", "agents": "member"})


async def _actions(client, team) -> list[str]:
    log = await client.get("/api/v1/audit-log", headers=team.owner)
    return [e["action"] for e in (await log.json())["data"]]


async def test_the_token_is_shown_once_replaced_and_revoked(client, team):
    resp = await client.get("/api/v1/team/scim", headers=team.owner)
    status = await resp.json()
    assert status["enabled"] is True and status["createdAt"]
    assert status["baseUrl"].endswith("/api/v1/scim/v2") and "token" not in status
    # Members see whether it is on, never the token.
    member = session(await sign_in(client, "member@example.com"))
    resp = await client.get("/api/v1/team/scim", headers=member)
    assert (await resp.json())["enabled"] is True
    await assert_error(
        await client.post("/api/v1/team/scim-token", headers=member), 403, "FORBIDDEN"
    )
    # Hashed at rest.
    rows = await client.app[app_keys.db_key].reader.fetchall("SELECT * FROM team_scim")
    assert team.token not in str(rows)
    resp = await client.get(f"{BASE}/Users", headers=team.scim)
    await scim_json(resp, 200)
    # A second one replaces it: the first stops at once.
    second = await new_token(client, team.owner)
    assert second != team.token
    await assert_scim_error(await client.get(f"{BASE}/Users", headers=team.scim), 401)
    await scim_json(await client.get(f"{BASE}/Users", headers=scim_headers(second)), 200)
    resp = await client.delete("/api/v1/team/scim-token", headers=team.owner)
    assert resp.status == 200
    resp = await client.get(f"{BASE}/Users", headers=scim_headers(second))
    await assert_scim_error(resp, 401)
    assert (await (await client.get("/api/v1/team/scim", headers=team.owner)).json())[
        "enabled"
    ] is False
    actions = await _actions(client, team)
    assert actions[:3] == ["scim.token_revoked", "scim.token_created", "scim.token_created"]


async def test_okta_creates_reads_filters_and_replaces_a_user(client, team):
    created = await provision(client, team, okta_user("Test.User@Example.com"))
    user_id = created["id"]
    assert created["schemas"] == [USER]
    assert created["userName"] == "test.user@example.com"
    assert created["externalId"] == "00ujl29u0le5T6Aj10h7"
    assert created["active"] is True and created["groups"] == []
    assert created["name"] == {"givenName": "Test", "familyName": "User"}
    assert created["meta"]["location"].endswith(f"/api/v1/scim/v2/Users/{user_id}")
    assert "password" not in created
    # A member now, named as the provider says.
    resp = await client.get("/api/v1/team/members", headers=team.owner)
    members = {m["email"]: m for m in (await resp.json())}
    assert members["test.user@example.com"]["role"] == "member"
    assert members["test.user@example.com"]["name"] == "Test User"
    got = await scim_json(await client.get(f"{BASE}/Users/{user_id}", headers=team.scim), 200)
    assert got == created
    # Okta looks a user up by userName before creating it.
    for query in ('userName eq "test.user@example.com"', 'externalId eq "00ujl29u0le5T6Aj10h7"'):
        resp = await client.get(f"{BASE}/Users", params={"filter": query}, headers=team.scim)
        listed = await scim_json(resp, 200)
        assert listed["totalResults"] == 1 and listed["Resources"][0]["id"] == user_id
    resp = await client.get(
        f"{BASE}/Users", params={"filter": 'userName eq "nobody@example.com"'}, headers=team.scim
    )
    assert (await scim_json(resp, 200))["Resources"] == []
    # PUT replaces the attributes: what is left out is gone.
    body = okta_user("test.user@example.com", displayName="Tess User", name={"givenName": "Tess"})
    del body["locale"]
    resp = await client.put(f"{BASE}/Users/{user_id}", json=body, headers=team.scim)
    replaced = await scim_json(resp, 200)
    assert replaced["displayName"] == "Tess User" and replaced["name"] == {"givenName": "Tess"}
    assert "locale" not in replaced


async def test_entra_creates_and_patches_a_user(client, team):
    created = await provision(client, team, entra_user("ada@example.com"))
    user_id = created["id"]
    assert created["name"]["formatted"] == "givenName familyName"
    body = patch(
        {"op": "Replace", "path": 'emails[type eq "work"].value', "value": "ada.l@example.com"},
        {"op": "Replace", "path": "name.familyName", "value": "Lovelace"},
        {"op": "Add", "path": "displayName", "value": "Ada Lovelace"},
        {"op": "Add", "path": f"{ENTERPRISE}:department", "value": "Support"},
    )
    resp = await client.patch(f"{BASE}/Users/{user_id}", json=body, headers=team.scim)
    patched = await scim_json(resp, 200)
    assert patched["emails"] == [{"primary": True, "type": "work", "value": "ada.l@example.com"}]
    assert patched["name"]["familyName"] == "Lovelace"
    assert patched["displayName"] == "Ada Lovelace"
    assert patched["userName"] == "ada@example.com"  # the account's address stays
    # Okta's form: a value object without a path.
    body = patch({"op": "replace", "value": {"displayName": "Ada L.", "name.givenName": "Ada"}})
    patched = await scim_json(
        await client.patch(f"{BASE}/Users/{user_id}", json=body, headers=team.scim), 200
    )
    assert (patched["displayName"], patched["name"]["givenName"]) == ("Ada L.", "Ada")


async def test_paging_follows_start_index_and_count(client, team):
    ids = [
        (await provision(client, team, okta_user(f"p{n}@example.com", f"ext-{n}")))["id"]
        for n in range(5)
    ]
    seen = []
    for start in (1, 3, 5):
        resp = await client.get(
            f"{BASE}/Users", params={"startIndex": start, "count": 2}, headers=team.scim
        )
        page = await scim_json(resp, 200)
        assert (page["totalResults"], page["startIndex"]) == (5, start)
        assert page["itemsPerPage"] == len(page["Resources"]) <= 2
        seen += [u["id"] for u in page["Resources"]]
    assert seen == ids
    resp = await client.get(f"{BASE}/Users", params={"count": 0}, headers=team.scim)
    page = await scim_json(resp, 200)
    assert (page["totalResults"], page["Resources"]) == (5, [])


async def test_deactivation_ends_sessions_and_keys_at_once_and_reactivation_restores(client, team):
    # member@example.com exists already (signed up, in the team): SCIM takes them over.
    created = await provision(client, team, okta_user("member@example.com"))
    member_session = session(await sign_in(client, "member@example.com"))
    member_key = bearer(await key_for(client, team.team.id, created["id"]))
    for headers in (member_session, member_key):
        assert (await client.get("/api/v1/agents", headers=headers)).status == 200
    off = patch({"op": "Replace", "path": "active", "value": "False"})  # Entra's text
    resp = await client.patch(f"{BASE}/Users/{created['id']}", json=off, headers=team.scim)
    assert (await scim_json(resp, 200))["active"] is False
    for headers in (member_session, member_key):
        resp = await client.get("/api/v1/agents", headers=headers)
        await assert_error(resp, 401, "UNAUTHORIZED")
    resp = await client.get("/api/v1/team/members", headers=team.owner)
    assert "member@example.com" not in str(await resp.json())
    # Still listed by SCIM, inactive; Okta reactivates with a value object.
    on = patch({"op": "replace", "value": {"active": True}})
    resp = await client.patch(f"{BASE}/Users/{created['id']}", json=on, headers=team.scim)
    assert (await scim_json(resp, 200))["active"] is True
    resp = await client.get("/api/v1/team/members", headers=team.owner)
    members = {m["email"]: m["role"] for m in (await resp.json())}
    assert members["member@example.com"] == "member"
    # The old key stays revoked; signing in again works.
    await assert_error(await client.get("/api/v1/agents", headers=member_key), 401, "UNAUTHORIZED")
    again = session(await sign_in(client, "member@example.com"))
    assert (await client.get("/api/v1/agents", headers=again)).status == 200
    actions = await _actions(client, team)
    assert actions[:2] == ["scim.user_reactivated", "scim.user_deactivated"]


async def test_delete_removes_the_person_from_the_team(client, team):
    created = await provision(client, team, entra_user("gone@example.com"))
    key = bearer(await key_for(client, team.team.id, created["id"]))
    resp = await client.delete(f"{BASE}/Users/{created['id']}", headers=team.scim)
    assert resp.status == 204
    await assert_error(await client.get("/api/v1/agents", headers=key), 401, "UNAUTHORIZED")
    resp = await client.get(f"{BASE}/Users/{created['id']}", headers=team.scim)
    await assert_scim_error(resp, 404)
    # Provisioned again later: the same account, a member again.
    again = await provision(client, team, entra_user("gone@example.com"))
    assert again["id"] == created["id"]


async def test_groups_map_roles_okta_style(client, team):
    user = await provision(client, team, okta_user("lead@example.com"))
    key = bearer(await key_for(client, team.team.id, user["id"]))
    await assert_error(await client.get("/api/v1/team/sso", headers=key), 403, "FORBIDDEN")
    group = await new_group(client, team, ADMINS)
    assert group["schemas"] == [GROUP] and group["members"] == []
    add = patch(
        {"op": "add", "path": "members", "value": [{"value": user["id"], "display": "lead"}]}
    )
    resp = await client.patch(f"{BASE}/Groups/{group['id']}", json=add, headers=team.scim)
    listed = await scim_json(resp, 200)
    assert [m["value"] for m in listed["members"]] == [user["id"]]
    # An owner at once (the resolver's cache forgot the key's principal).
    assert (await client.get("/api/v1/team/sso", headers=key)).status == 200
    got = await scim_json(await client.get(f"{BASE}/Users/{user['id']}", headers=team.scim), 200)
    assert got["groups"][0]["display"] == ADMINS
    remove = patch({"op": "remove", "path": f'members[value eq "{user["id"]}"]'})
    resp = await client.patch(f"{BASE}/Groups/{group['id']}", json=remove, headers=team.scim)
    assert (await scim_json(resp, 200))["members"] == []
    await assert_error(await client.get("/api/v1/team/sso", headers=key), 403, "FORBIDDEN")
    assert (await _actions(client, team))[:2] == ["scim.role_changed", "scim.role_changed"]


async def test_groups_entra_style_rename_filter_and_delete(client, team):
    user = await provision(client, team, entra_user("ops@example.com"))
    key = bearer(await key_for(client, team.team.id, user["id"]))
    group = await new_group(client, team, "agents", [user["id"]])
    add = patch(
        {
            "name": "addMember",
            "op": "add",
            "path": "members",
            "value": [{"displayName": "ops", "value": user["id"]}],
        }
    )
    resp = await client.patch(f"{BASE}/Groups/{group['id']}", json=add, headers=team.scim)
    await scim_json(resp, 200)
    await assert_error(await client.get("/api/v1/team/sso", headers=key), 403, "FORBIDDEN")
    # Renamed to a name mapped to admin: its members become owners.
    rename = patch({"op": "Replace", "path": "displayName", "value": ADMINS})
    resp = await client.patch(f"{BASE}/Groups/{group['id']}", json=rename, headers=team.scim)
    assert (await scim_json(resp, 200))["displayName"] == ADMINS
    assert (await client.get("/api/v1/team/sso", headers=key)).status == 200
    resp = await client.get(
        f"{BASE}/Groups",
        params={"filter": f'displayName eq "{ADMINS}"', "excludedAttributes": "members"},
        headers=team.scim,
    )
    listed = await scim_json(resp, 200)
    assert listed["totalResults"] == 1 and "members" not in listed["Resources"][0]
    gone = [{"value": user["id"]}]
    remove = patch({"name": "removeMember", "op": "remove", "path": "members", "value": gone})
    resp = await client.patch(f"{BASE}/Groups/{group['id']}", json=remove, headers=team.scim)
    assert (await scim_json(resp, 200))["members"] == []
    await assert_error(await client.get("/api/v1/team/sso", headers=key), 403, "FORBIDDEN")
    # PUT replaces the members; DELETE takes the group and the role it gave.
    put = {"schemas": [GROUP], "displayName": ADMINS, "members": [{"value": user["id"]}]}
    resp = await client.put(f"{BASE}/Groups/{group['id']}", json=put, headers=team.scim)
    assert len((await scim_json(resp, 200))["members"]) == 1
    assert (await client.get("/api/v1/team/sso", headers=key)).status == 200
    assert (await client.delete(f"{BASE}/Groups/{group['id']}", headers=team.scim)).status == 204
    await assert_error(await client.get("/api/v1/team/sso", headers=key), 403, "FORBIDDEN")


async def test_owners_are_never_demoted_by_scim(client, team):
    # The team's owner is provisioned too (they are in the provider) and put in a group
    # that maps to member: they stay the owner.
    owner = await provision(client, team, okta_user("owner@example.com"))
    group = await new_group(client, team, "agents", [owner["id"]])
    resp = await client.delete(f"{BASE}/Groups/{group['id']}", headers=team.scim)
    assert resp.status == 204
    resp = await client.get("/api/v1/team/members", headers=team.owner)
    roles = {m["email"]: m["role"] for m in (await resp.json())}
    assert roles["owner@example.com"] == "owner"


async def test_discovery_endpoints(client, team):
    resp = await client.get(f"{BASE}/ServiceProviderConfig")
    config = await scim_json(resp, 200)
    assert config["patch"]["supported"] is True and config["bulk"]["supported"] is False
    assert config["filter"] == {"supported": True, "maxResults": 100}
    assert config["authenticationSchemes"][0]["type"] == "oauthbearertoken"
    types = await scim_json(await client.get(f"{BASE}/ResourceTypes"), 200)
    assert {t["endpoint"] for t in types["Resources"]} == {"/Users", "/Groups"}
    schemas = await scim_json(await client.get(f"{BASE}/Schemas"), 200)
    user = next(s for s in schemas["Resources"] if s["id"] == USER)
    assert "userName" in {a["name"] for a in user["attributes"]}


async def test_an_existing_account_at_the_domain_is_linked(client, team):
    # Signed up on their own (with a team of their own): the team's domain vouches for them.
    solo, own_team = await create_user(client, "solo@example.com")
    created = await provision(client, team, okta_user("solo@example.com"))
    assert created["id"] == solo.id
    resp = await client.get("/api/v1/team/members", headers=team.owner)
    assert "solo@example.com" in {m["email"] for m in await resp.json()}
    me = session(await sign_in(client, "solo@example.com"))
    teams = (await (await client.get("/api/v1/auth/session", headers=me)).json())["data"]["teams"]
    assert {t["id"] for t in teams} == {own_team.id, team.team.id}


async def test_a_deactivated_person_cannot_come_back_by_single_sign_on(client, team):
    user = await provision(client, team, entra_user("sam@example.com"))
    off = patch({"op": "Replace", "path": "active", "value": False})
    resp = await client.patch(f"{BASE}/Users/{user['id']}", json=off, headers=team.scim)
    await scim_json(resp, 200)
    resp = await sso_sign_in(client, team.team.id, "sam@example.com")
    await assert_error(resp, 401, "UNAUTHORIZED", "not in this team")
    on = patch({"op": "Replace", "path": "active", "value": True})
    resp = await client.patch(f"{BASE}/Users/{user['id']}", json=on, headers=team.scim)
    await scim_json(resp, 200)
    me = await whoami(client, await sso_sign_in(client, team.team.id, "sam@example.com"))
    assert (me["team"]["id"], me["team"]["role"]) == (team.team.id, "member")
