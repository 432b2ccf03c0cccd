"""Invitations without SMTP (issue 31 item 7): the owner reads each pending invitation's link
from the API to share it by hand, and a person who arrives through an invitation joins the
inviting team with no (empty) team of their own, by password or by GitHub sign-in."""

from __future__ import annotations

import re
from urllib.parse import parse_qs, urlsplit

import aiohttp

from agentsvc.api import app_keys
from agentsvc.ids import now_iso
from agentsvc.services.team.sessions import hash_token
from agentsvc.store import invitations
from agentsvc.store.invitations import Invitation
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

LINK = re.compile(r"^http://127\.0\.0\.1:8080/accept-invitation\?token=([\w-]{43})$")
STATE_COOKIE = "agentsvc_oauth_state"


async def owner_of_team(client):
    user, team = await create_user(client, "owner@example.com", name="Olivia")
    return user, team, bearer(await key_for(client, team.id, user.id))


async def invite(client, auth, email="new@example.com", role="member") -> dict:
    resp = await client.post(
        "/api/v1/team/invite", json={"email": email, "role": role}, headers=auth
    )
    assert resp.status == 201, await resp.text()
    return await resp.json()


async def listed(client, auth) -> dict[str, dict]:
    """The newest invitation of each address (the list is newest first)."""
    resp = await client.get("/api/v1/team/invitations", headers=auth)
    assert resp.status == 200, await resp.text()
    return {i["email"]: i for i in reversed(await resp.json())}


async def accept(client, link: str, **body):
    token = LINK.match(link).group(1)
    return await client.post("/api/v1/team/invitations/accept", json={"token": token, **body})


async def teams_owned_by(client, email: str) -> list[str]:
    rows = await client.app[app_keys.db_key].reader.fetchall(
        "SELECT t.id FROM teams t JOIN users u ON u.id = t.owner_user_id WHERE u.email = ?",
        (email,),
    )
    return [r[0] for r in rows]


async def session_info(client, token: str) -> dict:
    resp = await client.get("/api/v1/auth/session", headers=session(token))
    assert resp.status == 200, await resp.text()
    return (await resp.json())["data"]


async def test_the_owner_reads_the_link_of_a_pending_invitation(client):
    resp = await client.get("/api/v1/auth/providers")
    assert (await resp.json())["data"]["mailDelivery"] == "log"  # how the Team page knows
    _, _, auth = await owner_of_team(client)
    invitation = await invite(client, auth)
    assert LINK.match(invitation["link"]), invitation
    # The same working link, listed again as long as the invitation is pending...
    assert (await listed(client, auth))["new@example.com"]["link"] == invitation["link"]
    assert (await listed(client, auth))["new@example.com"]["link"] == invitation["link"]
    # ...which is the one the log and the outbox hold: one invitation, one link.
    (message,) = await outbox(client, "new@example.com")
    assert invitation["link"] in message.body
    # The link names nobody: no address of the invitee or of the inviter is in it.
    assert "@" not in invitation["link"] and "example" not in invitation["link"]


async def test_links_stop_with_the_invitation(client):
    _, _, auth = await owner_of_team(client)
    first = await invite(client, auth)
    # Inviting again replaces the pending invitation: a new link, the old one dead.
    second = await invite(client, auth)
    assert second["link"] != first["link"] and LINK.match(second["link"])
    await assert_error(await accept(client, first["link"], password="long enough"), 409, "CONFLICT")
    assert (await listed(client, auth))["new@example.com"]["link"] == second["link"]
    # A cancelled invitation has no link, in the answer and in the list.
    resp = await client.delete(f"/api/v1/team/invitations/{second['id']}", headers=auth)
    assert resp.status == 200 and (await resp.json())["link"] is None
    assert (await listed(client, auth))["new@example.com"]["link"] is None
    await assert_error(
        await accept(client, second["link"], password="long enough"), 409, "CONFLICT", "cancelled"
    )


async def test_only_owners_read_links(client):
    owner, team, auth = await owner_of_team(client)
    await invite(client, auth)
    member = await add_member(client, team.id, "member@example.com")
    member_auth = bearer(await key_for(client, team.id, member.id))
    resp = await client.get("/api/v1/team/invitations", headers=member_auth)
    await assert_error(resp, 403, "FORBIDDEN")
    resp = await client.post(
        "/api/v1/team/invite", json={"email": "x@example.com"}, headers=member_auth
    )
    await assert_error(resp, 403, "FORBIDDEN")
    # Another team's owner sees none of this team's invitations.
    other, other_team = await create_user(client, "other@example.com")
    other_auth = bearer(await key_for(client, other_team.id, other.id))
    assert await listed(client, other_auth) == {}


async def test_an_invitation_made_before_links_were_derived_has_none(client):
    """An invitation whose token is not derived from this instance's key (made by an older
    version, or under another secret key) lists no link rather than a wrong one."""
    owner, team, auth = await owner_of_team(client)
    now = now_iso()
    old = Invitation(
        id="inv_older",
        team_id=team.id,
        email="old@example.com",
        role="member",
        status="pending",
        invited_by_user_id=owner.id,
        created_at=now,
        updated_at=now,
        expires_at="2999-01-01T00:00:00.000Z",
    )
    async with client.app[app_keys.db_key].write() as tx:
        await invitations.insert(tx, old, hash_token("a random token of an older version"))
    found = await listed(client, auth)
    assert found["old@example.com"]["status"] == "pending"
    assert found["old@example.com"]["link"] is None


async def test_accepting_through_the_link_gives_no_team_of_ones_own(client):
    owner, team, auth = await owner_of_team(client)
    invitation = await invite(client, auth)
    resp = await accept(client, invitation["link"], password="a new password", name="Nina")
    assert resp.status == 200, await resp.text()
    assert (await resp.json())["teamId"] == team.id
    cookie = resp.cookies[SESSION_COOKIE].value
    client.session.cookie_jar.clear()
    info = await session_info(client, cookie)
    assert info["team"]["id"] == team.id and info["team"]["role"] == "member"
    assert info["teams"] == [{"id": team.id, "name": "Olivia's team", "role": "member"}]
    assert await teams_owned_by(client, "new@example.com") == []
    # Signing in again lands in the team joined, still with no team of one's own.
    token = await sign_in(client, "new@example.com", "a new password")
    assert (await session_info(client, token))["teams"] == info["teams"]
    assert await teams_owned_by(client, "new@example.com") == []
    # Accepted: the link is gone from the list, and works no more.
    assert (await listed(client, auth))["new@example.com"]["link"] is None
    await assert_error(await accept(client, invitation["link"], password="x" * 10), 409, "CONFLICT")


async def test_a_removed_invitee_signs_in_to_a_team_of_their_own(client):
    """Once every membership is gone (removed from the only team), the person still has
    somewhere to work: signing in makes their own team then, and only then."""
    _, team, auth = await owner_of_team(client)
    invitation = await invite(client, auth)
    resp = await accept(client, invitation["link"], password="a new password")
    assert resp.status == 200, await resp.text()
    client.session.cookie_jar.clear()
    members = await (await client.get("/api/v1/team/members", headers=auth)).json()
    member_id = next(m["memberId"] for m in members if m["email"] == "new@example.com")
    resp = await client.delete(f"/api/v1/team/members/{member_id}", headers=auth)
    assert resp.status == 200
    token = await sign_in(client, "new@example.com", "a new password")
    info = await session_info(client, token)
    assert info["team"]["role"] == "owner" and info["team"]["id"] != team.id
    assert await teams_owned_by(client, "new@example.com") == [info["team"]["id"]]


async def test_with_smtp_the_answer_carries_the_mailed_link(make_client, smtp_server):
    client = await make_client(smtp=smtp_server.settings())
    resp = await client.get("/api/v1/auth/providers")
    assert (await resp.json())["data"]["mailDelivery"] == "smtp"
    _, _, auth = await owner_of_team(client)
    invitation = await invite(client, auth)
    (mail,) = await smtp_server.wait_for(1)
    assert invitation["link"] in mail.text


async def github_sign_in(client) -> aiohttp.ClientResponse:
    """The whole GitHub flow as a browser plays it: start, consent, come back."""
    resp = await client.get(
        "/api/v1/auth/sign-in/github", params={"callbackUrl": "/"}, allow_redirects=False
    )
    assert resp.status == 302, await resp.text()
    state_cookie = resp.cookies[STATE_COOKIE].value
    async with aiohttp.ClientSession() as browser:
        async with browser.get(resp.headers["Location"], allow_redirects=False) as consent:
            back = urlsplit(consent.headers["Location"])
    params = {k: v[0] for k, v in parse_qs(back.query).items()}
    client.session.cookie_jar.clear()
    return await client.get(
        "/api/v1/auth/callback/github",
        params=params,
        headers={"Cookie": f"{STATE_COOKIE}={state_cookie}"},
        allow_redirects=False,
    )


async def github_sign_up_after_invite(make_client, provider, invited: str):
    """An owner invites `invited`, then Octo (the fake provider's user) signs up with GitHub:
    the client, the owner's team and key, and Octo's session."""
    client = await make_client(oauth={"github": provider.settings(provider.base)})
    _, team, auth = await owner_of_team(client)
    await invite(client, auth, invited)
    resp = await github_sign_in(client)
    assert resp.status == 303, await resp.text()
    return client, team, auth, await session_info(client, resp.cookies[SESSION_COOKIE].value)


async def test_an_invitee_signing_up_with_github_joins_the_team(make_client, provider):
    client, team, auth, info = await github_sign_up_after_invite(
        make_client, provider, "Octo@Example.com"
    )
    assert info["user"]["email"] == "octo@example.com" and info["user"]["name"] == "Octo Cat"
    assert info["teams"] == [{"id": team.id, "name": "Olivia's team", "role": "member"}]
    assert await teams_owned_by(client, "octo@example.com") == []
    found = (await listed(client, auth))["octo@example.com"]
    assert (found["status"], found["link"]) == ("accepted", None)
    log = await (
        await client.get("/api/v1/audit-log", params={"action": "member.joined"}, headers=auth)
    ).json()
    assert [e["target"]["label"] for e in log["data"]] == ["octo@example.com"]


async def test_a_github_sign_up_without_an_invitation_gets_its_own_team(make_client, provider):
    client, _, auth, info = await github_sign_up_after_invite(
        make_client, provider, "someone.else@example.com"
    )
    assert info["team"]["role"] == "owner"
    assert await teams_owned_by(client, "octo@example.com") == [info["team"]["id"]]
    assert (await listed(client, auth))["someone.else@example.com"]["status"] == "pending"
