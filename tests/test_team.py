"""Team endpoints: context, members, invitations by e-mail, acceptance, expiry, removal."""

from __future__ import annotations

import asyncio
import re

from agentsvc.api import app_keys
from agentsvc.runtime import EXPIRE_INVITATIONS_JOB
from agentsvc.services.team import membership
from tests.support.accounts import (
    SESSION_COOKIE,
    add_member,
    bearer,
    create_user,
    key_for,
    session,
    sign_in,
)
from tests.support.errors import assert_error
from tests.support.mail import outbox
from tests.support.settings import PUBLIC_ORIGIN

ISO = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")
ACCEPT_LINK = re.compile(r"http://127\.0\.0\.1:8080/accept-invitation\?token=([\w-]+)")


async def owner_of_team(client, email="owner@example.com", name="Olivia"):
    user, team = await create_user(client, email, name=name)
    return user, team, bearer(await key_for(client, team.id, user.id))


async def invite(client, auth, email="new@example.com", role="member"):
    resp = await client.post(
        "/api/v1/team/invite", json={"email": email, "role": role}, headers=auth
    )
    assert resp.status == 201, await resp.text()
    return await resp.json()


async def token_sent_to(client, email="new@example.com") -> str:
    messages = await outbox(client, email)
    match = ACCEPT_LINK.search(messages[0].body)
    assert match, messages[0].body
    return match.group(1)


async def accept(client, token, headers=None, **body):
    return await client.post(
        "/api/v1/team/invitations/accept", json={"token": token, **body}, headers=headers or {}
    )


async def test_context_and_members_of_a_new_team(client):
    owner, team, auth = await owner_of_team(client)
    resp = await client.get("/api/v1/team/context", headers=auth)
    assert resp.status == 200
    context = await resp.json()
    assert set(context) == {"role", "isOwner", "owner", "members", "publicUrl"}
    assert context["publicUrl"] == PUBLIC_ORIGIN  # the SSO redirect URI is shown on it
    assert context["role"] == "owner" and context["isOwner"] is True
    assert context["owner"] == {"id": owner.id, "email": "owner@example.com", "name": "Olivia"}
    (member,) = context["members"]
    assert set(member) == {
        "id",
        "memberId",
        "role",
        "email",
        "name",
        "createdAt",
        "notifyHandoffs",
        "notifyBrowser",
        "notifySound",
        "avatarUrl",
    }
    assert member["id"] == owner.id and member["memberId"].startswith("mem_")
    assert member["role"] == "owner" and ISO.match(member["createdAt"])
    resp = await client.get("/api/v1/team/members", headers=auth)
    assert await resp.json() == context["members"]


async def test_invite_mails_a_link_and_accepting_creates_the_user(client):
    owner, team, auth = await owner_of_team(client)
    invitation = await invite(client, auth, "New@Example.com")
    assert set(invitation) == {"id", "email", "role", "status", "expiresAt", "createdAt", "link"}
    assert invitation["id"].startswith("inv_")
    assert invitation["email"] == "new@example.com"
    assert (invitation["role"], invitation["status"]) == ("member", "pending")
    assert ISO.match(invitation["expiresAt"]) and invitation["expiresAt"] > invitation["createdAt"]
    (message,) = await outbox(client, "new@example.com")
    assert message.subject == "You are invited to join Olivia's team on agentsvc"
    assert "Olivia <owner@example.com> invited you" in message.body
    assert "as member" in message.body and "expires in 7 days" in message.body
    token = await token_sent_to(client)
    assert invitation["link"] == f"http://127.0.0.1:8080/accept-invitation?token={token}"

    resp = await accept(client, token, password="a new password", name="Nina")
    assert resp.status == 200, await resp.text()
    body = await resp.json()
    assert body["success"] is True and body["teamId"] == team.id and body["role"] == "member"
    assert body["user"]["email"] == "new@example.com" and body["user"]["name"] == "Nina"
    cookie = resp.cookies[SESSION_COOKIE].value
    client.session.cookie_jar.clear()
    # The new member is signed in, acting in the team joined.
    context = await (await client.get("/api/v1/team/context", headers=session(cookie))).json()
    assert context["role"] == "member" and context["isOwner"] is False
    assert context["owner"]["id"] == owner.id
    assert [m["email"] for m in context["members"]] == ["owner@example.com", "new@example.com"]
    # The password works, and signing in lands in the invited team.
    token2 = await sign_in(client, "new@example.com", "a new password")
    info = await (await client.get("/api/v1/auth/session", headers=session(token2))).json()
    assert info["data"]["team"]["id"] == team.id
    resp = await client.get("/api/v1/team/invitations", headers=auth)
    assert [i["status"] for i in await resp.json()] == ["accepted"]
    # A token works once.
    resp = await accept(client, token, password="a new password")
    await assert_error(resp, 409, "CONFLICT", "accepted")


async def test_invitation_mail_goes_through_smtp(make_client, smtp_server):
    client = await make_client(smtp=smtp_server.settings())
    _, _, auth = await owner_of_team(client)
    await invite(client, auth)
    (mail,) = await smtp_server.wait_for(1)
    assert mail.rcpt_tos == ["new@example.com"]
    assert ACCEPT_LINK.search(mail.text)


async def test_accepting_needs_a_password_for_a_new_account(client):
    _, _, auth = await owner_of_team(client)
    await invite(client, auth)
    token = await token_sent_to(client)
    await assert_error(await accept(client, token), 400, "VALIDATION_ERROR", "password")
    resp = await accept(client, token, password="short")
    await assert_error(resp, 400, "VALIDATION_ERROR", "password")
    resp = await accept(client, token, password="long enough", name="A\r\nB")
    await assert_error(resp, 400, "VALIDATION_ERROR", "name")
    await assert_error(await accept(client, "nope", password="long enough"), 404, "NOT_FOUND")
    resp = await client.post("/api/v1/team/invitations/accept", json={})
    await assert_error(resp, 400, "VALIDATION_ERROR", "token")
    # Still pending and nobody was created.
    resp = await client.get("/api/v1/team/invitations", headers=auth)
    assert [i["status"] for i in await resp.json()] == ["pending"]
    rows = await client.app[app_keys.db_key].reader.fetchall(
        "SELECT 1 FROM users WHERE email = 'new@example.com'"
    )
    assert rows == []


async def test_existing_user_accepts_signed_in_or_with_password(client):
    _, team, auth = await owner_of_team(client)
    await create_user(client, "ada@example.com")
    await create_user(client, "eve@example.com")
    await invite(client, auth, "ada@example.com")
    token = await token_sent_to(client, "ada@example.com")
    # Signed in as somebody else: refused.
    eve = await sign_in(client, "eve@example.com")
    await assert_error(await accept(client, token, session(eve)), 403, "FORBIDDEN", "another")
    # Not signed in, wrong password: refused.
    resp = await accept(client, token, password="wrong password")
    await assert_error(resp, 401, "UNAUTHORIZED")
    # Signed in as the invitee: accepted, and the session moves to the team.
    ada = await sign_in(client, "ada@example.com")
    resp = await accept(client, token, session(ada))
    assert resp.status == 200
    assert SESSION_COOKIE not in resp.cookies
    info = await (await client.get("/api/v1/auth/session", headers=session(ada))).json()
    assert info["data"]["team"] == {
        "id": team.id,
        "name": "Olivia's team",
        "role": "member",
        "plan": "pro",
    }


async def test_existing_user_accepts_with_the_right_password(client):
    _, team, auth = await owner_of_team(client)
    await create_user(client, "ada@example.com")
    await invite(client, auth, "ada@example.com", role="owner")
    token = await token_sent_to(client, "ada@example.com")
    resp = await accept(client, token, password="correct horse battery")
    assert resp.status == 200
    assert (await resp.json())["role"] == "owner"


async def test_accept_from_a_foreign_origin_is_refused(client):
    _, _, auth = await owner_of_team(client)
    await invite(client, auth)
    token = await token_sent_to(client)
    resp = await accept(client, token, {"Origin": "https://evil.test"}, password="long enough")
    await assert_error(resp, 403, "FORBIDDEN")


async def test_reinviting_replaces_the_pending_invitation(client):
    _, _, auth = await owner_of_team(client)
    first = await invite(client, auth)
    old_token = await token_sent_to(client)
    second = await invite(client, auth)
    listed = await (await client.get("/api/v1/team/invitations", headers=auth)).json()
    assert [(i["id"], i["status"]) for i in listed] == [
        (second["id"], "pending"),
        (first["id"], "cancelled"),
    ]
    resp = await accept(client, old_token, password="long enough")
    await assert_error(resp, 409, "CONFLICT", "cancelled")


async def test_invite_refuses_members_and_bad_input(client):
    owner, team, auth = await owner_of_team(client)
    await add_member(client, team.id, "member@example.com")
    for address in ("member@example.com", "OWNER@example.com"):
        resp = await client.post("/api/v1/team/invite", json={"email": address}, headers=auth)
        await assert_error(resp, 409, "CONFLICT", "already a member")
    for body, field in [
        ({"email": "not-an-address"}, "email"),
        ({"email": "a@b.test\r\nBcc: x@y.test"}, "email"),
        ({"email": "\u0136@["}, "email: must be an e-mail address"),
        ({"email": "a@b.test", "role": "admin"}, "role"),
        ({"email": "a@b.test", "extra": 1}, "extra"),
        ({}, "email"),
    ]:
        resp = await client.post("/api/v1/team/invite", json=body, headers=auth)
        await assert_error(resp, 400, "VALIDATION_ERROR", field)
    assert await outbox(client) == []
    listed = await (await client.get("/api/v1/team/invitations", headers=auth)).json()
    assert listed == []  # nothing stored for an address mail cannot reach


async def test_cancel(client):
    _, _, auth = await owner_of_team(client)
    invitation = await invite(client, auth)
    token = await token_sent_to(client)
    resp = await client.delete(f"/api/v1/team/invitations/{invitation['id']}", headers=auth)
    assert resp.status == 200
    cancelled = await resp.json()
    assert cancelled["status"] == "cancelled" and cancelled["id"] == invitation["id"]
    resp = await accept(client, token, password="long enough")
    await assert_error(resp, 409, "CONFLICT", "cancelled")
    resp = await client.delete(f"/api/v1/team/invitations/{invitation['id']}", headers=auth)
    await assert_error(resp, 409, "CONFLICT", "cancelled")
    resp = await client.delete("/api/v1/team/invitations/inv_nope", headers=auth)
    await assert_error(resp, 404, "NOT_FOUND")
    # Another team's invitation is not found.
    _, _, other_auth = await owner_of_team(client, "other@example.com")
    other = await invite(client, other_auth, "x@example.com")
    resp = await client.delete(f"/api/v1/team/invitations/{other['id']}", headers=auth)
    await assert_error(resp, 404, "NOT_FOUND")
    listed = await (await client.get("/api/v1/team/invitations", headers=auth)).json()
    assert [i["id"] for i in listed] == [invitation["id"]]


async def test_the_scheduler_expires_invitations(make_client):
    client = await make_client(
        auth={"invitation_ttl_seconds": 0.3, "invitation_sweep_seconds": 0.2}
    )
    assert client.app[app_keys.jobs_key].interval_of(EXPIRE_INVITATIONS_JOB) == 0.2
    _, _, auth = await owner_of_team(client)
    await invite(client, auth)
    token = await token_sent_to(client)
    for _ in range(40):
        await asyncio.sleep(0.1)
        listed = await (await client.get("/api/v1/team/invitations", headers=auth)).json()
        if listed[0]["status"] == "expired":
            break
    assert listed[0]["status"] == "expired"
    resp = await accept(client, token, password="long enough")
    await assert_error(resp, 409, "CONFLICT", "expired")


async def test_acceptance_checks_expiry_itself(make_client):
    client = await make_client(
        auth={"invitation_ttl_seconds": 0.2, "invitation_sweep_seconds": 3600}
    )
    _, _, auth = await owner_of_team(client)
    await invite(client, auth)
    token = await token_sent_to(client)
    await asyncio.sleep(0.3)
    resp = await accept(client, token, password="long enough")
    await assert_error(resp, 409, "CONFLICT", "expired")
    listed = await (await client.get("/api/v1/team/invitations", headers=auth)).json()
    assert listed[0]["status"] == "expired"


async def test_an_invitation_past_its_expiry_is_listed_expired_at_once(make_client):
    """Item 13: no waiting for the expiry job (it does not run during this test)."""
    client = await make_client(
        auth={"invitation_ttl_seconds": 0.2, "invitation_sweep_seconds": 3600}
    )
    _, _, auth = await owner_of_team(client)
    invitation = await invite(client, auth)
    await asyncio.sleep(0.3)
    listed = await (await client.get("/api/v1/team/invitations", headers=auth)).json()
    assert [(i["id"], i["status"]) for i in listed] == [(invitation["id"], "expired")]
    db = client.app[app_keys.db_key]
    rows = await db.reader.fetchall("SELECT status FROM invitations")
    assert [r[0] for r in rows] == ["pending"]  # the job has not run: reading sees the time
    # It is treated as what it reads: not cancelled, and not turned "cancelled" by a new one.
    resp = await client.delete(f"/api/v1/team/invitations/{invitation['id']}", headers=auth)
    await assert_error(resp, 409, "CONFLICT", "expired")
    again = await invite(client, auth)
    listed = await (await client.get("/api/v1/team/invitations", headers=auth)).json()
    assert [(i["id"], i["status"]) for i in listed] == [
        (again["id"], "pending"),
        (invitation["id"], "expired"),
    ]


async def test_expiry_job_called_directly(make_client):
    client = await make_client(
        auth={"invitation_ttl_seconds": 0.1, "invitation_sweep_seconds": 3600}
    )
    _, _, auth = await owner_of_team(client)
    await invite(client, auth, "a@example.com")
    await asyncio.sleep(0.2)
    fresh = await client.post("/api/v1/team/invite", json={"email": "b@example.com"}, headers=auth)
    assert fresh.status == 201
    await membership.expire_invitations(client.app[app_keys.db_key])
    listed = await (await client.get("/api/v1/team/invitations", headers=auth)).json()
    statuses = {i["email"]: i["status"] for i in listed}
    assert statuses["a@example.com"] == "expired"


async def test_removal_takes_effect_at_once(client):
    owner, team, auth = await owner_of_team(client)
    member = await add_member(client, team.id, "member@example.com")
    member_key = bearer(await key_for(client, team.id, member.id))
    member_session = await sign_in(client, "member@example.com")
    # Both work (and are cached by the resolver).
    for headers in (member_key, session(member_session)):
        assert (await client.get("/api/v1/agents", headers=headers)).status == 200
    members = await (await client.get("/api/v1/team/members", headers=auth)).json()
    member_id = next(m["memberId"] for m in members if m["id"] == member.id)
    resp = await client.delete(f"/api/v1/team/members/{member_id}", headers=auth)
    assert resp.status == 200
    assert await resp.json() == {"success": True}
    for headers in (member_key, session(member_session)):
        resp = await client.get("/api/v1/agents", headers=headers)
        await assert_error(resp, 401, "UNAUTHORIZED")
    members = await (await client.get("/api/v1/team/members", headers=auth)).json()
    assert [m["id"] for m in members] == [owner.id]
    resp = await client.delete(f"/api/v1/team/members/{member_id}", headers=auth)
    await assert_error(resp, 404, "NOT_FOUND")
    # The removed user can still sign in, to their own team.
    token = await sign_in(client, "member@example.com")
    info = await (await client.get("/api/v1/auth/session", headers=session(token))).json()
    assert info["data"]["team"]["role"] == "owner" and info["data"]["team"]["id"] != team.id


async def test_the_owner_cannot_be_removed(client):
    owner, team, auth = await owner_of_team(client)
    await add_member(client, team.id, "co@example.com", role="owner")
    co_auth = bearer(await key_for(client, team.id, await _user_id(client, "co@example.com")))
    members = await (await client.get("/api/v1/team/members", headers=auth)).json()
    owner_member = next(m["memberId"] for m in members if m["id"] == owner.id)
    for headers in (auth, co_auth):
        resp = await client.delete(f"/api/v1/team/members/{owner_member}", headers=headers)
        await assert_error(resp, 403, "FORBIDDEN", "owner cannot be removed")
    resp = await client.get("/api/v1/team/members", headers=auth)
    assert len(await resp.json()) == 2


async def _user_id(client, email: str) -> str:
    rows = await client.app[app_keys.db_key].reader.fetchall(
        "SELECT id FROM users WHERE email = ?", (email,)
    )
    return rows[0][0]


async def test_other_teams_members_are_not_found(client):
    _, team_a, auth_a = await owner_of_team(client, "a@example.com")
    _, team_b, auth_b = await owner_of_team(client, "b@example.com")
    await add_member(client, team_b.id, "bm@example.com")
    members_b = await (await client.get("/api/v1/team/members", headers=auth_b)).json()
    for member in members_b:
        resp = await client.delete(f"/api/v1/team/members/{member['memberId']}", headers=auth_a)
        await assert_error(resp, 404, "NOT_FOUND")
    assert len(await (await client.get("/api/v1/team/members", headers=auth_b)).json()) == 2


async def test_invite_refuses_addresses_with_control_characters(client):
    from tests.support.accounts import bearer, new_api_key
    from tests.support.errors import assert_error

    auth = bearer(await new_api_key(client, "ctl-owner@example.com"))
    for email in ("\x1c@example.com", "a@\x96", "a\u2028b@example.com"):
        resp = await client.post(
            "/api/v1/team/invite", json={"email": email, "role": "member"}, headers=auth
        )
        await assert_error(resp, 400, "VALIDATION_ERROR", "email")
