"""The desk's people: renaming the team (owners, audit-logged), members' notification
choices, members' pictures (upload, the public address and its headers, what is refused),
the picture beside a member's name where visitors and the team see it, and changing one's
password."""

from __future__ import annotations

from agentsvc.api import app_keys
from agentsvc.services.team.avatars import MAX_BYTES
from tests.support.accounts import (
    PASSWORD,
    add_member,
    bearer,
    create_user,
    key_for,
    session,
    sign_in,
)
from tests.support.errors import assert_error
from tests.support.images import GIF, JPEG_START, SVG, WEBP_START, png
from tests.support.live import (
    VISITOR_SESSION,
    handoff_agent,
    open_events,
    visitor_conversation,
)

ORIGIN = "http://127.0.0.1"  # tests' public_url


async def team(client, email="owner@example.com"):
    owner, team_row = await create_user(client, email, name="Olivia")
    member = await add_member(client, team_row.id, f"member.{email}")
    return (
        owner,
        member,
        bearer(await key_for(client, team_row.id, owner.id)),
        bearer(await key_for(client, team_row.id, member.id)),
    )


async def put_avatar(client, auth, data: bytes, content_type: str = "image/png"):
    return await client.put(
        "/api/v1/me/avatar", data=data, headers={**auth, "Content-Type": content_type}
    )


async def test_owners_rename_the_team_and_it_is_audit_logged(client):
    _, _, owner, member = await team(client)
    resp = await client.patch("/api/v1/team", json={"name": "  Shop Support  "}, headers=owner)
    assert resp.status == 200, await resp.text()
    renamed = await resp.json()
    assert renamed["name"] == "Shop Support" and renamed["id"].startswith("team_")
    session_info = await (await client.get("/api/v1/auth/session", headers=owner)).json()
    assert session_info["data"]["team"]["name"] == "Shop Support"
    log = await client.get("/api/v1/audit-log", params={"action": "team.renamed"}, headers=owner)
    entries = (await log.json())["data"]
    assert [e["details"]["to"] for e in entries] == ["Shop Support"]
    resp = await client.patch("/api/v1/team", json={"name": "Mine now"}, headers=member)
    await assert_error(resp, 403, "FORBIDDEN")
    for name in ["", "   ", "x" * 81, "Bad\nname", "Bell\x07"]:
        resp = await client.patch("/api/v1/team", json={"name": name}, headers=owner)
        await assert_error(resp, 400, "VALIDATION_ERROR", "name")
    resp = await client.patch("/api/v1/team", json={}, headers=owner)
    await assert_error(resp, 400, "VALIDATION_ERROR", "name")


async def test_members_choose_browser_and_sound_notifications(client):
    _, member, owner, member_auth = await team(client)
    members = await (await client.get("/api/v1/team/members", headers=owner)).json()
    assert all(
        (m["notifyBrowser"], m["notifySound"], m["avatarUrl"]) == (False, False, None)
        for m in members
    )
    resp = await client.patch(
        "/api/v1/team/members/me", json={"notifyBrowser": True}, headers=member_auth
    )
    assert resp.status == 200, await resp.text()
    mine = await resp.json()
    assert (mine["notifyBrowser"], mine["notifySound"]) == (True, False)
    resp = await client.patch(
        "/api/v1/team/members/me",
        json={"notifySound": True, "notifyBrowser": False},
        headers=member_auth,
    )
    mine = await resp.json()
    assert (mine["notifyBrowser"], mine["notifySound"]) == (False, True)
    context = await (await client.get("/api/v1/team/context", headers=member_auth)).json()
    me = next(m for m in context["members"] if m["id"] == member.id)
    assert me["notifySound"] is True
    resp = await client.patch("/api/v1/team/members/me", json={"notifySound": "yes"}, headers=owner)
    await assert_error(resp, 400, "VALIDATION_ERROR", "notifySound")


async def test_a_picture_is_served_publicly_with_safe_headers(client):
    owner, _, auth, _ = await team(client)
    picture = png()
    resp = await put_avatar(client, auth, picture)
    assert resp.status == 200, await resp.text()
    url = (await resp.json())["avatarUrl"]
    assert url.startswith(f"{ORIGIN}") and "/api/v1/avatars/av_" in url
    path = url[url.index("/api/v1/") :]
    resp = await client.get(path)  # no credential: visitors' browsers load it
    assert resp.status == 200
    assert await resp.read() == picture
    assert resp.headers["Content-Type"] == "image/png"
    assert resp.headers["X-Content-Type-Options"] == "nosniff"
    assert resp.headers["Content-Security-Policy"] == "default-src 'none'; sandbox"
    assert "max-age=31536000" in resp.headers["Cache-Control"]
    members = await (await client.get("/api/v1/team/members", headers=auth)).json()
    assert next(m for m in members if m["id"] == owner.id)["avatarUrl"] == url
    # A new picture gets a new address; the old one is gone.
    resp = await put_avatar(client, auth, GIF, "image/gif")
    newer = (await resp.json())["avatarUrl"]
    assert newer != url
    await assert_error(await client.get(path), 404, "NOT_FOUND")
    newer_path = newer[newer.index("/api/v1/") :]
    assert (await client.get(newer_path)).headers["Content-Type"] == "image/gif"
    resp = await client.delete("/api/v1/me/avatar", headers=auth)
    assert resp.status == 200 and (await resp.json()) == {"success": True}
    await assert_error(await client.get(newer_path), 404, "NOT_FOUND")
    members = await (await client.get("/api/v1/team/members", headers=auth)).json()
    assert next(m for m in members if m["id"] == owner.id)["avatarUrl"] is None


async def test_jpeg_and_webp_are_kept_when_their_bytes_say_so(client):
    _, _, auth, _ = await team(client)
    for data, kind in [(JPEG_START + b"\x00" * 64, "image/jpeg"), (WEBP_START, "image/webp")]:
        resp = await put_avatar(client, auth, data, kind)
        assert resp.status == 200, (kind, await resp.text())


async def test_what_is_not_a_small_picture_is_refused_with_a_clear_message(client):
    _, _, auth, _ = await team(client)
    resp = await put_avatar(client, auth, SVG, "image/svg+xml")
    await assert_error(resp, 415, "UNSUPPORTED_MEDIA_TYPE", "SVG is not accepted")
    resp = await put_avatar(client, auth, b"hello", "text/plain")
    await assert_error(resp, 415, "UNSUPPORTED_MEDIA_TYPE", "PNG, JPEG, WebP or GIF")
    # SVG declared as PNG: the bytes decide.
    resp = await put_avatar(client, auth, SVG, "image/png")
    await assert_error(resp, 400, "VALIDATION_ERROR", "not a PNG picture")
    resp = await put_avatar(client, auth, png(), "image/jpeg")
    await assert_error(resp, 400, "VALIDATION_ERROR", "not a JPEG picture")
    resp = await put_avatar(client, auth, b"", "image/png")
    await assert_error(resp, 400, "VALIDATION_ERROR", "empty")
    big = png() + b"\x00" * MAX_BYTES
    resp = await put_avatar(client, auth, big)
    await assert_error(resp, 413, "PAYLOAD_TOO_LARGE", "at most 256 KB")
    members = await (await client.get("/api/v1/team/members", headers=auth)).json()
    assert all(m["avatarUrl"] is None for m in members)
    resp = await client.put("/api/v1/me/avatar", data=png(), headers={"Content-Type": "image/png"})
    await assert_error(resp, 401, "UNAUTHORIZED")
    await assert_error(await client.get("/api/v1/avatars/av_nothing"), 404, "NOT_FOUND")


async def test_visitors_and_the_team_see_the_members_picture(client):
    owner, _, auth, _ = await team(client)
    url = (await (await put_avatar(client, auth, png())).json())["avatarUrl"]
    agent = await handoff_agent(client, auth)
    conv_id = await visitor_conversation(client, agent["id"])
    resp = await client.post(
        f"/api/v1/conversations/{conv_id}/messages", json={"content": "Hi!"}, headers=auth
    )
    reply = await resp.json()
    assert reply["data"]["author"] == {
        "type": "human",
        "id": owner.id,
        "name": "Olivia",
        "avatarUrl": url,
    }
    conv = (await (await client.get(f"/api/v1/conversations/{conv_id}", headers=auth)).json())[
        "data"
    ]
    assert conv["assignee"]["avatarUrl"] == url
    assert conv["messages"][-1]["author"]["avatarUrl"] == url
    note = await client.post(
        f"/api/v1/conversations/{conv_id}/notes", json={"content": "VIP"}, headers=auth
    )
    assert (await note.json())["data"]["author"]["avatarUrl"] == url
    inbox = (await (await client.get("/api/v1/inbox", headers=auth)).json())["data"]
    assert inbox[0]["assignee"]["avatarUrl"] == url
    taken = await client.post(f"/api/v1/conversations/{conv_id}/assign", json={}, headers=auth)
    assert (await taken.json())["data"]["assignee"]["avatarUrl"] == url
    # The visitor's stream carries it with the member's messages.
    events = await open_events(
        client,
        f"/api/v1/conversations/{conv_id}/events",
        headers={"X-Session-Id": VISITOR_SESSION},
        lastEventId=0,
    )
    while True:
        name, data, _ = await events.next()
        if name == "message" and data["message"]["author"]["type"] == "human":
            assert data["message"]["author"]["avatarUrl"] == url
            break
    events.close()


async def test_changing_the_password_signs_out_the_other_sessions(client):
    owner, _, key, _ = await team(client)
    here = session(await sign_in(client, "owner@example.com"))
    there = session(await sign_in(client, "owner@example.com"))
    body = {"currentPassword": "not it at all", "newPassword": "a brand new secret"}
    resp = await client.post("/api/v1/auth/password", json=body, headers=here)
    await assert_error(resp, 403, "FORBIDDEN", "currentPassword")
    body = {"currentPassword": PASSWORD, "newPassword": "short"}
    resp = await client.post("/api/v1/auth/password", json=body, headers=here)
    await assert_error(resp, 400, "VALIDATION_ERROR", "newPassword")
    body = {"newPassword": "a brand new secret"}
    resp = await client.post("/api/v1/auth/password", json=body, headers=here)
    await assert_error(resp, 400, "VALIDATION_ERROR", "currentPassword")
    body = {"currentPassword": PASSWORD, "newPassword": "owner@example.com"}
    resp = await client.post("/api/v1/auth/password", json=body, headers=here)
    await assert_error(resp, 400, "VALIDATION_ERROR", "e-mail")
    # An API key is not a signed-in person.
    body = {"currentPassword": PASSWORD, "newPassword": "a brand new secret"}
    resp = await client.post("/api/v1/auth/password", json=body, headers=key)
    await assert_error(resp, 403, "FORBIDDEN", "session")
    assert (await client.get("/api/v1/auth/session", headers=there)).status == 200
    resp = await client.post("/api/v1/auth/password", json=body, headers=here)
    assert resp.status == 200, await resp.text()
    assert (await resp.json())["data"] == {"success": True}
    assert (await client.get("/api/v1/auth/session", headers=here)).status == 200
    await assert_error(await client.get("/api/v1/auth/session", headers=there), 401, "UNAUTHORIZED")
    assert (await client.get("/api/v1/auth/session", headers=key)).status == 200
    await sign_in(client, "owner@example.com", "a brand new secret")
    resp = await client.post(
        "/api/v1/auth/sign-in/email", json={"email": "owner@example.com", "password": PASSWORD}
    )
    await assert_error(resp, 401, "UNAUTHORIZED")


async def test_an_account_without_a_password_sets_one_without_a_current_one(client):
    await team(client, "magic@example.com")
    here = session(await sign_in(client, "magic@example.com"))
    # As an account made by a magic link or GitHub has none.
    async with client.app[app_keys.db_key].write() as tx:
        await tx.execute("UPDATE users SET password_hash = NULL WHERE email = 'magic@example.com'")
    body = {"newPassword": "my first password"}
    resp = await client.post("/api/v1/auth/password", json=body, headers=here)
    assert resp.status == 200, await resp.text()
    await sign_in(client, "magic@example.com", "my first password")
