"""Canned responses per team: any member reads and writes them; shortcuts are unique in the
team; a team keeps at most 500; another team's are not found."""

from __future__ import annotations

from agentsvc.api import app_keys
from agentsvc.ids import new_id, now_iso
from agentsvc.services.desk.canned import MAX_PER_TEAM
from tests.support.accounts import add_member, bearer, create_user, key_for
from tests.support.errors import assert_error

PATH = "/api/v1/team/canned-responses"
THANKS = {"shortcut": "thanks", "title": "Thank you", "content": "Thank you for waiting!"}


async def team_with_member(client, email="owner@example.com"):
    owner, team = await create_user(client, email, name="Olivia")
    member = await add_member(client, team.id, f"member.{email}")
    owner_auth = bearer(await key_for(client, team.id, owner.id))
    member_auth = bearer(await key_for(client, team.id, member.id))
    return team, owner_auth, member_auth


async def create(client, auth, body=THANKS, status=201):
    resp = await client.post(PATH, json=body, headers=auth)
    assert resp.status == status, await resp.text()
    return await resp.json()


async def test_members_write_and_read_them_by_shortcut(client):
    _, owner, member = await team_with_member(client)
    made = await create(client, member)
    assert set(made) == {"id", "shortcut", "title", "content", "createdAt", "updatedAt"}
    assert made["id"].startswith("cnd_") and made["shortcut"] == "thanks"
    await create(client, owner, {"shortcut": "address", "title": "Our address", "content": "1 Rd"})
    listed = await (await client.get(PATH, headers=owner)).json()
    assert [c["shortcut"] for c in listed] == ["address", "thanks"]
    resp = await client.patch(
        f"{PATH}/{made['id']}", json={"content": "Thanks a lot!"}, headers=owner
    )
    assert resp.status == 200, await resp.text()
    changed = await resp.json()
    assert changed["content"] == "Thanks a lot!" and changed["shortcut"] == "thanks"
    assert changed["updatedAt"] >= made["updatedAt"]
    resp = await client.delete(f"{PATH}/{made['id']}", headers=member)
    assert resp.status == 200 and (await resp.json()) == {"success": True}
    listed = await (await client.get(PATH, headers=member)).json()
    assert [c["shortcut"] for c in listed] == ["address"]
    resp = await client.delete(f"{PATH}/{made['id']}", headers=member)
    await assert_error(resp, 404, "NOT_FOUND")


async def test_a_shortcut_is_unique_in_the_team(client):
    _, owner, member = await team_with_member(client)
    await create(client, owner)
    resp = await client.post(PATH, json={**THANKS, "title": "Again"}, headers=member)
    await assert_error(resp, 409, "CONFLICT", "/thanks")
    other = await create(client, owner, {**THANKS, "shortcut": "thx"})
    resp = await client.patch(f"{PATH}/{other['id']}", json={"shortcut": "thanks"}, headers=owner)
    await assert_error(resp, 409, "CONFLICT", "shortcut")
    # Another team may use the same shortcut.
    _, stranger, _ = await team_with_member(client, "other@example.com")
    await create(client, stranger)


async def test_bodies_are_validated(client):
    _, owner, _ = await team_with_member(client)
    for body, field in [
        ({**THANKS, "shortcut": "Thanks"}, "shortcut"),
        ({**THANKS, "shortcut": "a b"}, "shortcut"),
        ({**THANKS, "shortcut": ""}, "shortcut"),
        ({**THANKS, "shortcut": "x" * 33}, "shortcut"),
        ({**THANKS, "title": ""}, "title"),
        ({**THANKS, "title": "  "}, "title"),
        ({**THANKS, "title": "t" * 81}, "title"),
        ({**THANKS, "content": ""}, "content"),
        ({**THANKS, "content": "c" * 5_001}, "content"),
        ({"shortcut": "x", "title": "x"}, "content"),
        ({**THANKS, "extra": 1}, "extra"),
    ]:
        resp = await client.post(PATH, json=body, headers=owner)
        await assert_error(resp, 400, "VALIDATION_ERROR", field)
    await create(client, owner, {**THANKS, "shortcut": "a-b_9", "content": "c" * 5_000})
    made = await create(client, owner)
    resp = await client.patch(f"{PATH}/{made['id']}", json={}, headers=owner)
    await assert_error(resp, 400, "VALIDATION_ERROR")


async def test_another_teams_canned_responses_are_not_found(client):
    _, owner, _ = await team_with_member(client)
    made = await create(client, owner)
    _, stranger, stranger_member = await team_with_member(client, "other@example.com")
    for auth in (stranger, stranger_member):
        assert await (await client.get(PATH, headers=auth)).json() == []
        resp = await client.patch(f"{PATH}/{made['id']}", json={"title": "Mine"}, headers=auth)
        await assert_error(resp, 404, "NOT_FOUND")
        resp = await client.delete(f"{PATH}/{made['id']}", headers=auth)
        await assert_error(resp, 404, "NOT_FOUND")
    listed = await (await client.get(PATH, headers=owner)).json()
    assert [(c["id"], c["title"]) for c in listed] == [(made["id"], "Thank you")]
    resp = await client.get(PATH)
    await assert_error(resp, 401, "UNAUTHORIZED")


async def test_the_501st_is_refused_with_a_clear_message(client):
    team, owner, _ = await team_with_member(client)
    now = now_iso()
    rows = [(new_id("canned"), team.id, f"s{n}", "T", "C", now, now) for n in range(MAX_PER_TEAM)]
    async with client.app[app_keys.db_key].write() as tx:
        await tx.executemany(
            "INSERT INTO canned_responses (id, team_id, shortcut, title, content, created_at,"
            " updated_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
            rows,
        )
    resp = await client.post(PATH, json=THANKS, headers=owner)
    error = await assert_error(resp, 403, "CANNED_RESPONSE_LIMIT_REACHED", "500")
    assert "delete" in error["message"]
    assert len(await (await client.get(PATH, headers=owner)).json()) == MAX_PER_TEAM
