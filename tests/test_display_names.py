"""Issue 29 item 9: nobody sees a member's e-mail address. Visitors see a member's display
name, else the team's name: in the live stream, the status snapshot, replies by e-mail and
what an upgraded database had stored. Members set their name at setup, on accepting an
invitation, and with `PATCH /team/members/me`."""

from __future__ import annotations

import sqlite3

from agentsvc.api import app_keys
from agentsvc.app import create_app
from agentsvc.services.team import accounts
from tests.support import pg
from tests.support.accounts import add_member, bearer, create_user, key_for
from tests.support.errors import assert_error
from tests.support.live import (
    VISITOR_SESSION,
    handoff_agent,
    open_events,
    visitor_conversation,
)
from tests.support.settings import PUBLIC_ORIGIN, make_settings

VISITOR = {"X-Session-Id": VISITOR_SESSION}
ADDRESS = "you@example.com"


async def data_of(resp, status: int = 200):
    assert resp.status == status, await resp.text()
    return (await resp.json())["data"]


async def _reply(client, auth, conv_id: str, text: str) -> dict:
    resp = await client.post(
        f"/api/v1/conversations/{conv_id}/messages", json={"content": text}, headers=auth
    )
    return await data_of(resp, 201)


async def _visitor_sees(client, conv_id: str) -> tuple[list[tuple[str, dict]], str]:
    """Every event the visitor's stream sends from the start, and the raw text of them."""
    reader = await open_events(
        client, f"/api/v1/conversations/{conv_id}/events", headers=VISITOR, lastEventId=0
    )
    seen = []
    try:
        while True:
            try:
                event, data, _ = await reader.next(timeout=1.0)
            except TimeoutError:
                break
            seen.append((event, data))
    finally:
        reader.close()
    return seen, repr(seen)


async def test_nobody_sees_a_members_email_address_an_unnamed_owner_shows_the_teams_name(client):
    owner, team = await create_user(client, ADDRESS)  # the five-minute start: no name
    assert team.name == "Support"
    auth = bearer(await key_for(client, team.id, owner.id))
    agent = await handoff_agent(client, auth)
    conv_id = await visitor_conversation(client, agent["id"], "Can I talk to someone?")
    await data_of(await client.post(f"/api/v1/conversations/{conv_id}/handoff", headers=VISITOR))
    await data_of(await client.post(f"/api/v1/conversations/{conv_id}/assign", headers=auth))
    await _reply(client, auth, conv_id, "Hello, how can I help?")

    seen, raw = await _visitor_sees(client, conv_id)
    assert ADDRESS not in raw
    snapshot = seen[0][1]
    assert snapshot["assignee"] == {"id": owner.id, "name": "Support", "avatarUrl": None}
    joined = [d for e, d in seen if e == "status" and d["status"] == "human"]
    assert joined and all(d["assignee"]["name"] == "Support" for d in joined)
    authors = [d["message"]["author"] for e, d in seen if e == "message"]
    assert [a for a in authors if a["type"] == "human"] == [
        {"type": "human", "id": owner.id, "name": "Support", "avatarUrl": None}
    ]

    # With a display name, the visitor sees it (and the snapshot names the member as now).
    resp = await client.patch("/api/v1/team/members/me", json={"name": "  Ana  "}, headers=auth)
    assert (await resp.json())["name"] == "Ana"
    await _reply(client, auth, conv_id, "Ana here.")
    seen, raw = await _visitor_sees(client, conv_id)
    assert ADDRESS not in raw
    assert seen[0][1]["assignee"]["name"] == "Ana"
    last = [d["message"] for e, d in seen if e == "message"][-1]
    assert last["author"]["name"] == "Ana"


async def test_nobody_sees_a_members_email_address_in_a_reply_by_mail(client):
    owner, team = await create_user(client, ADDRESS)
    auth = bearer(await key_for(client, team.id, owner.id))
    agent = await handoff_agent(client, auth)
    conv_id = await visitor_conversation(client, agent["id"], "Call me back")
    resp = await client.post(
        f"/api/v1/conversations/{conv_id}/contact",
        json={"email": "visitor@example.org"},
        headers=VISITOR,
    )
    await data_of(resp)
    await _reply(client, auth, conv_id, "We will call you tomorrow.")
    mailer = client.app[app_keys.mailer_key]
    await mailer.drain()
    kept = await mailer.kept("visitor@example.org")
    assert len(kept) == 1
    body = kept[0].body
    assert "Support from" in body and ADDRESS not in body


async def test_patch_members_me_name_is_validated_and_audited(client):
    owner, team = await create_user(client, "owner@example.com")
    auth = bearer(await key_for(client, team.id, owner.id))
    other = await add_member(client, team.id, "other@example.com")
    members = await (await client.get("/api/v1/team/members", headers=auth)).json()
    other_member_id = next(m["memberId"] for m in members if m["id"] == other.id)
    for body, field in (
        ({}, "name"),
        ({"name": ""}, "name"),
        ({"name": "   "}, "name"),
        ({"name": "x" * 81}, "80 characters"),
        ({"name": "Ana\u0007"}, "control characters"),
        ({"name": "Ana\nBob"}, "control characters"),
        ({"name": 5}, "name"),
        ({"name": "Ana", "nickname": "A"}, "nickname"),
    ):
        resp = await client.patch("/api/v1/team/members/me", json=body, headers=auth)
        await assert_error(resp, 400, "VALIDATION_ERROR", field)
    resp = await client.patch(
        f"/api/v1/team/members/{other_member_id}", json={"name": "Mallory"}, headers=auth
    )
    await assert_error(resp, 403, "FORBIDDEN", "their own")

    resp = await client.patch("/api/v1/team/members/me", json={"name": "Olivia"}, headers=auth)
    assert resp.status == 200, await resp.text()
    assert (await resp.json())["name"] == "Olivia"
    # Notification choices still work alone, and leave the name as it is.
    resp = await client.patch(
        "/api/v1/team/members/me", json={"notifyHandoffs": True}, headers=auth
    )
    assert (await resp.json())["name"] == "Olivia"
    log = await data_of(
        await client.get("/api/v1/audit-log", params={"action": "member.renamed"}, headers=auth)
    )
    assert len(log) == 1
    assert log[0]["target"]["label"] == "Olivia"
    assert log[0]["details"] == {"userId": owner.id, "from": "", "to": "Olivia"}
    session = await data_of(await client.get("/api/v1/auth/session", headers=auth))
    assert session["user"]["name"] == "Olivia"


async def test_setup_asks_for_a_display_name_and_checks_it(client):
    headers = {"Origin": PUBLIC_ORIGIN}
    body = {"email": ADDRESS, "password": "long enough password"}
    resp = await client.post("/api/v1/setup", json={**body, "name": "Ana\u0001"}, headers=headers)
    await assert_error(resp, 400, "VALIDATION_ERROR", "control characters")
    created = await data_of(
        await client.post("/api/v1/setup", json={**body, "name": "  Ana "}, headers=headers),
        201,
    )
    assert created["user"]["name"] == "Ana"
    user = await accounts.user_by_email(client.app[app_keys.db_key], ADDRESS)
    assert user is not None and user.name == "Ana"


async def test_accepting_an_invitation_sets_the_display_name(client):
    owner, team = await create_user(client, "owner@example.com", name="Olivia")
    auth = bearer(await key_for(client, team.id, owner.id))
    resp = await client.post("/api/v1/team/invite", json={"email": "bo@example.com"}, headers=auth)
    assert resp.status == 201
    mailer = client.app[app_keys.mailer_key]
    await mailer.drain()
    kept = await mailer.kept("bo@example.com")
    text = kept[0].body
    token = text.split("token=", 1)[1].split()[0]
    body = {"token": token, "password": "long enough password", "name": "B\u2028o"}
    resp = await client.post(
        "/api/v1/team/invitations/accept", json=body, headers={"Origin": PUBLIC_ORIGIN}
    )
    await assert_error(resp, 400, "VALIDATION_ERROR", "control characters")
    resp = await client.post(
        "/api/v1/team/invitations/accept",
        json={**body, "name": " Bo "},
        headers={"Origin": PUBLIC_ORIGIN},
    )
    assert resp.status == 200, await resp.text()
    assert (await resp.json())["user"]["name"] == "Bo"


@pg.sqlite_only
async def test_nobody_sees_a_members_email_address_stored_before_the_upgrade(
    aiohttp_client, tmp_path
):
    """Migration 12: replies and handoff events stored with a member's address name them
    by the display name, else the team's name; a team named after the address is not."""
    from agentsvc.db.migrations import schema_at

    data = tmp_path / "data"
    data.mkdir(mode=0o700)
    old = sqlite3.connect(data / "agentsvc.db")
    old.executescript(schema_at(11))
    with old:
        old.executescript(
            "INSERT INTO users (id, email, name, created_at, updated_at) VALUES"
            " ('usr_1', 'you@example.com', '', 't', 't'),"
            " ('usr_2', 'bo@example.com', 'Bo', 't', 't');"
            "INSERT INTO teams VALUES"
            " ('team_1', 'you@example.com''s team', 'usr_1', 'pro', 't', 't');"
            "INSERT INTO agents (id, team_id, name, slug, model, temperature, created_at,"
            " updated_at) VALUES ('agt_1', 'team_1', 'A', 'a', 'builtin', 70, 't', 't');"
            "INSERT INTO conversations (id, agent_id, team_id, title, created_at, updated_at)"
            " VALUES ('conv_1', 'agt_1', 'team_1', 'Hi', 't', 't');"
            "INSERT INTO messages (id, conversation_id, role, content, created_at, author_id,"
            " author_name) VALUES"
            " ('msg_1', 'conv_1', 'assistant', 'Hello', 't', 'usr_1', 'you@example.com'),"
            " ('msg_2', 'conv_1', 'assistant', 'Hi', 't', 'usr_2', 'bo@example.com');"
            "INSERT INTO conversation_events (conversation_id, team_id, agent_id, kind, status,"
            " assignee_id, assignee_name, inbox, created_at) VALUES"
            " ('conv_1', 'team_1', 'agt_1', 'status', 'human', 'usr_1', 'you@example.com', 1,"
            " 't');"
        )
    old.close()
    client = await aiohttp_client(create_app(make_settings(tmp_path)))
    db = client.app[app_keys.db_key]
    assert await db.reader.fetchval("SELECT name FROM teams") == "Support"
    rows = await db.reader.fetchall("SELECT id, author_name FROM messages ORDER BY id")
    assert [tuple(r) for r in rows] == [("msg_1", "Support"), ("msg_2", "Bo")]
    assert await db.reader.fetchval("SELECT assignee_name FROM conversation_events") == ("Support")
