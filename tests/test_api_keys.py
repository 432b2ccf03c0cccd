"""API key management: masked list, key shown once, revocation at once, roles, isolation."""

from __future__ import annotations

import re

from tests.support.accounts import add_member, bearer, create_user, key_for, session, sign_in
from tests.support.errors import assert_error

ISO = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")


async def test_create_shows_the_key_once_and_the_list_masks_it(client):
    owner, team = await create_user(client, "owner@example.com")
    auth = bearer(await key_for(client, team.id, owner.id))
    resp = await client.post("/api/v1/api-keys", json={"name": "CI"}, headers=auth)
    assert resp.status == 201
    created = (await resp.json())["data"]
    assert set(created) == {"id", "name", "prefix", "last4", "userId", "createdAt", "key"}
    assert created["id"].startswith("key_") and created["name"] == "CI"
    assert created["key"].startswith("asvc_") and len(created["key"]) > 40
    assert created["key"].startswith(created["prefix"]) and created["key"].endswith(
        created["last4"]
    )
    assert len(created["last4"]) == 4 and created["userId"] == owner.id
    assert ISO.match(created["createdAt"])
    # The new key works.
    assert (await client.get("/api/v1/agents", headers=bearer(created["key"]))).status == 200
    resp = await client.get("/api/v1/api-keys", headers=auth)
    listed = (await resp.json())["data"]
    assert [k["name"] for k in listed] == ["CI", "t"]
    text = await resp.text()
    assert created["key"] not in text and "hash" not in text
    assert set(listed[0]) == {"id", "name", "prefix", "last4", "userId", "createdAt"}
    assert listed[0]["prefix"] == created["prefix"] and listed[0]["last4"] == created["last4"]


async def test_name_is_optional_and_validated(client):
    owner, team = await create_user(client, "owner@example.com")
    auth = bearer(await key_for(client, team.id, owner.id))
    resp = await client.post("/api/v1/api-keys", json={}, headers=auth)
    assert resp.status == 201 and (await resp.json())["data"]["name"] == ""
    for body, field in [({"name": 5}, "name"), ({"name": "x" * 201}, "name"), ({"n": 1}, "n")]:
        resp = await client.post("/api/v1/api-keys", json=body, headers=auth)
        await assert_error(resp, 400, "VALIDATION_ERROR", field)


async def test_revocation_takes_effect_at_once(client):
    owner, team = await create_user(client, "owner@example.com")
    auth = bearer(await key_for(client, team.id, owner.id))
    created = (await (await client.post("/api/v1/api-keys", json={}, headers=auth)).json())["data"]
    doomed = bearer(created["key"])
    assert (await client.get("/api/v1/agents", headers=doomed)).status == 200  # now cached
    resp = await client.delete(f"/api/v1/api-keys/{created['id']}", headers=auth)
    assert resp.status == 200
    assert await resp.json() == {"data": {"id": created["id"], "deleted": True}, "error": None}
    await assert_error(
        await client.get("/api/v1/agents", headers=doomed), 401, "UNAUTHORIZED", "Invalid API key"
    )
    resp = await client.delete(f"/api/v1/api-keys/{created['id']}", headers=auth)
    await assert_error(resp, 404, "NOT_FOUND")
    listed = (await (await client.get("/api/v1/api-keys", headers=auth)).json())["data"]
    assert created["id"] not in [k["id"] for k in listed]


async def test_members_manage_only_their_own_keys(client):
    owner, team = await create_user(client, "owner@example.com")
    owner_key_auth = bearer(await key_for(client, team.id, owner.id))
    member = await add_member(client, team.id, "member@example.com")
    member_session = session(await sign_in(client, "member@example.com"))
    resp = await client.post("/api/v1/api-keys", json={"name": "mine"}, headers=member_session)
    assert resp.status == 201
    mine = (await resp.json())["data"]
    assert mine["userId"] == member.id
    # The member's key acts in the team with the member's role.
    resp = await client.post("/api/v1/agents", json={"name": "x"}, headers=bearer(mine["key"]))
    await assert_error(resp, 403, "FORBIDDEN")
    listed = (await (await client.get("/api/v1/api-keys", headers=member_session)).json())["data"]
    assert [k["id"] for k in listed] == [mine["id"]]
    owner_listed = (await (await client.get("/api/v1/api-keys", headers=owner_key_auth)).json())[
        "data"
    ]
    assert mine["id"] in [k["id"] for k in owner_listed] and len(owner_listed) == 2
    owner_key_id = next(k["id"] for k in owner_listed if k["userId"] == owner.id)
    resp = await client.delete(f"/api/v1/api-keys/{owner_key_id}", headers=member_session)
    await assert_error(resp, 403, "FORBIDDEN")
    resp = await client.delete(f"/api/v1/api-keys/{mine['id']}", headers=member_session)
    assert resp.status == 200
    # The owner may revoke any key of the team.
    other = (await (await client.post("/api/v1/api-keys", json={}, headers=member_session)).json())[
        "data"
    ]
    resp = await client.delete(f"/api/v1/api-keys/{other['id']}", headers=owner_key_auth)
    assert resp.status == 200


async def test_other_teams_keys_are_not_found(client):
    a, team_a = await create_user(client, "a@example.com")
    b, team_b = await create_user(client, "b@example.com")
    auth_a = bearer(await key_for(client, team_a.id, a.id))
    key_b = await key_for(client, team_b.id, b.id)
    listed_b = (await (await client.get("/api/v1/api-keys", headers=bearer(key_b))).json())["data"]
    resp = await client.delete(f"/api/v1/api-keys/{listed_b[0]['id']}", headers=auth_a)
    await assert_error(resp, 404, "NOT_FOUND")
    assert (await client.get("/api/v1/agents", headers=bearer(key_b))).status == 200
    listed_a = (await (await client.get("/api/v1/api-keys", headers=auth_a)).json())["data"]
    assert listed_b[0]["id"] not in [k["id"] for k in listed_a]
