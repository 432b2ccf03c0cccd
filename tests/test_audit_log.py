"""The audit log: every recorded action with its actor (user, key or session, address),
target and time; pages by cursor, a filter by action, one team's entries, owners only."""

from __future__ import annotations

import re
from typing import Any

from agentsvc.api import app_keys
from agentsvc.services import audit
from agentsvc.services.audit import Actor
from agentsvc.store import audit_log
from agentsvc.store.audit_log import AuditEntry
from tests.support.accounts import add_member, bearer, create_user, key_for, session, sign_in
from tests.support.chat import new_agent
from tests.support.errors import assert_error


async def data_of(resp, status: int = 200) -> Any:
    assert resp.status == status, await resp.text()
    return (await resp.json())["data"]


async def test_every_action_is_recorded_with_its_actor_and_target(client):
    owner, team = await create_user(client, "owner@example.com", name="Olivia")
    auth = bearer(await key_for(client, team.id, owner.id))
    cookie = session(await sign_in(client, "owner@example.com"))
    # Keys: created (in the dashboard, by session) and revoked.
    created = await data_of(
        await client.post("/api/v1/api-keys", json={"name": "CI"}, headers=cookie), 201
    )
    await data_of(await client.delete(f"/api/v1/api-keys/{created['id']}", headers=auth))
    # Members: invited, an invitation cancelled, one joining, one removed.
    invited = await client.post(
        "/api/v1/team/invite", json={"email": "x@example.com"}, headers=auth
    )
    invitation = await invited.json()
    await client.delete(f"/api/v1/team/invitations/{invitation['id']}", headers=auth)
    member = await add_member(client, team.id, "member@example.com")
    members = await (await client.get("/api/v1/team/members", headers=auth)).json()
    member_id = next(m["memberId"] for m in members if m["id"] == member.id)
    await client.delete(f"/api/v1/team/members/{member_id}", headers=auth)
    # Agents and tools, created and deleted; a webhook created and deleted.
    agent = await new_agent(client, auth, name="Shop")
    resp = await client.post(
        "/api/v1/tools",
        json={
            "agentId": agent["id"],
            "name": "lookup",
            "description": "Look up",
            "executionType": "mock",
            "inputSchema": {"type": "object", "properties": {}},
            "mockResponse": "ok",
        },
        headers=auth,
    )
    tool = await resp.json()
    await client.delete(f"/api/v1/tools/{tool['id']}", headers=auth)
    hook = await data_of(
        await client.post(
            "/api/v1/webhooks",
            json={"url": "https://hooks.example.com/in", "events": ["message.created"]},
            headers=auth,
        ),
        201,
    )
    await client.delete(f"/api/v1/webhooks/{hook['id']}", headers=auth)
    await client.delete(f"/api/v1/agents/{agent['id']}", headers=auth)

    log = await data_of(await client.get("/api/v1/audit-log", headers=auth))
    assert [e["action"] for e in log] == [
        "agent.deleted",
        "webhook.deleted",
        "webhook.created",
        "tool.deleted",
        "tool.created",
        "agent.created",
        "member.removed",
        "invitation.cancelled",
        "member.invited",
        "api_key.revoked",
        "api_key.created",
    ]
    by_action = {e["action"]: e for e in log}
    first = by_action["api_key.created"]
    assert set(first) == {"id", "action", "actor", "target", "details", "createdAt"}
    assert first["actor"]["via"] == "session" and first["actor"]["keyId"] is None
    assert first["actor"]["email"] == "owner@example.com" and first["actor"]["name"] == "Olivia"
    assert first["actor"]["ip"] == "127.0.0.1"
    assert first["target"] == {"type": "api_key", "id": created["id"], "label": "CI"}
    revoked = by_action["api_key.revoked"]
    assert revoked["actor"]["via"] == "apiKey" and revoked["actor"]["keyName"] == "t"
    assert revoked["actor"]["userId"] == owner.id
    assert by_action["member.invited"]["target"]["label"] == "x@example.com"
    assert by_action["member.invited"]["details"] == {"role": "member"}
    assert by_action["member.removed"]["target"]["label"] == "member@example.com"
    assert by_action["agent.deleted"]["target"] == {
        "type": "agent",
        "id": agent["id"],
        "label": "Shop",
    }
    assert by_action["tool.created"]["details"] == {
        "agentId": agent["id"],
        "executionType": "mock",
    }
    assert by_action["webhook.created"]["target"]["label"] == "https://hooks.example.com/in"
    assert by_action["webhook.created"]["details"] == {"events": ["message.created"]}
    assert all(e["createdAt"].endswith("Z") and e["id"].startswith("aud_") for e in log)


async def test_a_joining_member_is_recorded(client):
    owner, team = await create_user(client, "owner@example.com")
    auth = bearer(await key_for(client, team.id, owner.id))
    await client.post("/api/v1/team/invite", json={"email": "new@example.com"}, headers=auth)
    mailer = client.app[app_keys.mailer_key]
    await mailer.drain()
    [mail] = await mailer.kept("new@example.com")
    token = re.search(r"token=([\w-]+)", mail.body).group(1)
    resp = await client.post(
        "/api/v1/team/invitations/accept",
        json={"token": token, "password": "a long enough password"},
    )
    assert resp.status == 200, await resp.text()
    client.session.cookie_jar.clear()
    log = await data_of(
        await client.get("/api/v1/audit-log", params={"action": "member.joined"}, headers=auth)
    )
    [joined] = log
    assert joined["actor"]["email"] == "new@example.com"
    assert joined["target"]["label"] == "new@example.com"
    assert joined["details"]["role"] == "member"


async def test_pages_filters_team_isolation_and_owner_only(client):
    owner, team = await create_user(client, "owner@example.com")
    auth = bearer(await key_for(client, team.id, owner.id))
    member = await add_member(client, team.id, "member@example.com")
    member_auth = bearer(await key_for(client, team.id, member.id))
    other_owner, other_team = await create_user(client, "other@example.com")
    other = bearer(await key_for(client, other_team.id, other_owner.id))
    names = [f"Agent {n}" for n in range(5)]
    for name in names:
        await new_agent(client, auth, name=name)  # often in the same millisecond: in order
    await new_agent(client, other, name="Theirs")
    seen, cursor = [], None
    while True:
        params = {"limit": 2, **({"cursor": cursor} if cursor else {})}
        resp = await client.get("/api/v1/audit-log", params=params, headers=auth)
        body = await resp.json()
        assert resp.status == 200 and len(body["data"]) <= 2
        seen += [e["target"]["label"] for e in body["data"]]
        cursor = body["pagination"]["nextCursor"]
        if cursor is None:
            break
    assert seen == names[::-1]
    theirs = await data_of(await client.get("/api/v1/audit-log", headers=other))
    assert [e["target"]["label"] for e in theirs] == ["Theirs"]
    assert (
        await data_of(
            await client.get("/api/v1/audit-log", params={"action": "agent.deleted"}, headers=auth)
        )
        == []
    )
    for params, named in (
        ({"action": "DROP TABLE"}, "action"),
        ({"action": "x" * 100}, "action"),
        ({"limit": 0}, "limit"),
        ({"limit": 101}, "limit"),
        ({"cursor": "not-ours"}, "cursor"),
    ):
        resp = await client.get("/api/v1/audit-log", params=params, headers=auth)
        await assert_error(resp, 400, "VALIDATION_ERROR", named)
    resp = await client.get("/api/v1/audit-log", headers=member_auth)
    await assert_error(resp, 403, "FORBIDDEN")
    resp = await client.get("/api/v1/audit-log")
    await assert_error(resp, 401, "UNAUTHORIZED")


async def test_entries_of_the_same_millisecond_list_in_the_order_they_were_recorded(client):
    """Issue 29 item 10: the log orders by a sequence, not by random ids; pages by cursor
    walk that order too."""
    owner, team = await create_user(client, "owner@example.com")
    auth = bearer(await key_for(client, team.id, owner.id))
    db = client.app[app_keys.db_key]
    same_time = "2026-11-25T10:00:00.000Z"
    # Ids sorting against the order of recording: an order by id would reverse them.
    ids = [f"aud_{c}{n}" for n, c in enumerate("zyxwvutsrq")]
    async with db.write() as tx:
        for n, entry_id in enumerate(ids):
            await audit_log.insert(
                tx,
                AuditEntry(
                    entry_id,
                    team.id,
                    "agent.created",
                    owner.id,
                    None,
                    None,
                    None,
                    "agent",
                    f"agt_{n}",
                    f"Agent {n}",
                    None,
                    same_time,
                ),
            )
    log = await data_of(await client.get("/api/v1/audit-log", headers=auth))
    assert [e["id"] for e in log] == ids[::-1]
    seen, cursor = [], None
    while True:
        params = {"limit": 3, **({"cursor": cursor} if cursor else {})}
        body = await (await client.get("/api/v1/audit-log", params=params, headers=auth)).json()
        seen += [e["id"] for e in body["data"]]
        cursor = body["pagination"]["nextCursor"]
        if cursor is None:
            break
    assert seen == ids[::-1]


async def test_record_is_there_for_actions_that_write_nothing_else(client):
    """An export handler records its export with `audit.record` (the integrator's hook)."""
    owner, team = await create_user(client, "owner@example.com")
    auth = bearer(await key_for(client, team.id, owner.id))
    actor = Actor(owner.id, team.id, ip="203.0.113.9")
    await audit.record(
        client.app[app_keys.db_key],
        actor,
        "conversations.exported",
        target_type="agent",
        target_id="agt_x",
        label="Shop",
        details={"format": "jsonl", "conversations": 12},
    )
    [entry] = await data_of(await client.get("/api/v1/audit-log", headers=auth))
    assert entry["action"] == "conversations.exported"
    assert entry["actor"]["via"] == "system" and entry["actor"]["ip"] == "203.0.113.9"
    assert entry["details"] == {"format": "jsonl", "conversations": 12}
    assert audit.end_user_label(" Ada@Example.com ") == audit.end_user_label("ada@example.com")
