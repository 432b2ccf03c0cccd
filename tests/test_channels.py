"""Channels as a resource (issue 32): created, listed, read, changed and deleted by the
team's owner, read by members, another team's never found; the api channel's secret shown
once, masked afterwards, sealed at rest; settings checked per type."""

from __future__ import annotations

from agentsvc.api import app_keys
from tests.support.accounts import add_member, bearer, create_user, key_for
from tests.support.channels import data_of, new_channel
from tests.support.chat import new_agent
from tests.support.errors import assert_error

HOOK = "http://127.0.0.1:9/replies"


async def owner(client, email: str = "owner@example.com"):
    user_, team = await create_user(client, email, name="Olivia")
    return team, bearer(await key_for(client, team.id, user_.id))


async def test_an_owner_creates_lists_changes_and_deletes_a_channel(client):
    team, auth = await owner(client)
    agent = await new_agent(client, auth)
    created = await new_channel(client, auth, agent["id"], HOOK, name="Our app")
    assert created["id"].startswith("ch_")
    assert created["agentId"] == agent["id"] and created["type"] == "api"
    assert created["name"] == "Our app" and created["enabled"] is True
    assert created["inboundUrl"] == (
        f"http://127.0.0.1:8080/api/v1/channels/{created['id']}/inbound"
    )
    secret = created["secret"]
    assert secret.startswith("whsec_")
    assert created["config"] == {"outboundUrl": HOOK, "secret": "••••" + secret[-4:]}
    assert set(created) == {
        "id", "agentId", "type", "name", "enabled", "inboundUrl", "config", "secret",
        "createdAt", "updatedAt", "status",
    }  # fmt: skip

    listed = await data_of(await client.get(f"/api/v1/agents/{agent['id']}/channels", headers=auth))
    assert [c["id"] for c in listed] == [created["id"]]
    assert "secret" not in listed[0] and secret not in str(listed)
    one = await data_of(await client.get(f"/api/v1/channels/{created['id']}", headers=auth))
    assert one["config"]["secret"] == "••••" + secret[-4:] and "secret" not in one

    path = f"/api/v1/channels/{created['id']}"
    new_hook = "http://127.0.0.1:9/other"
    changed = await data_of(
        await client.patch(
            path,
            json={"name": "Renamed", "enabled": False, "config": {"outboundUrl": new_hook}},
            headers=auth,
        )
    )
    assert changed["name"] == "Renamed" and changed["enabled"] is False
    # The secret is kept when new settings leave it out.
    assert changed["config"] == {"outboundUrl": new_hook, "secret": "••••" + secret[-4:]}
    assert changed["updatedAt"] >= created["updatedAt"]

    deleted = await data_of(await client.delete(path, headers=auth))
    assert deleted == {"id": created["id"], "deleted": True}
    await assert_error(await client.get(path, headers=auth), 404, "NOT_FOUND")

    log = await data_of(await client.get("/api/v1/audit-log", headers=auth))
    entries = [e for e in log if e["action"].startswith("channel.")]
    assert [e["action"] for e in entries] == [
        "channel.deleted",
        "channel.updated",
        "channel.created",
    ]
    assert {e["target"]["id"] for e in entries} == {created["id"]}
    assert entries[2]["details"] == {"type": "api", "agentId": agent["id"]}
    assert secret not in str(log)


async def test_the_secret_is_sealed_at_rest(client):
    _, auth = await owner(client)
    agent = await new_agent(client, auth)
    created = await new_channel(client, auth, agent["id"], HOOK)
    db = client.app[app_keys.db_key]
    row = await db.reader.fetchone("SELECT * FROM channels WHERE id = ?", (created["id"],))
    stored = " ".join(str(v) for v in row)
    secret = created["secret"]
    assert secret not in stored and secret.removeprefix("whsec_") not in stored
    assert created["id"] in stored and HOOK in stored


async def test_members_read_channels_and_only_owners_change_them(client):
    team, auth = await owner(client)
    agent = await new_agent(client, auth)
    created = await new_channel(client, auth, agent["id"], HOOK)
    member = await add_member(client, team.id, "member@example.com")
    member_auth = bearer(await key_for(client, team.id, member.id))
    path = f"/api/v1/channels/{created['id']}"

    listed = await data_of(
        await client.get(f"/api/v1/agents/{agent['id']}/channels", headers=member_auth)
    )
    assert [c["id"] for c in listed] == [created["id"]]
    assert (await data_of(await client.get(path, headers=member_auth)))["id"] == created["id"]

    body = {"type": "api", "config": {"outboundUrl": HOOK}}
    for resp in (
        await client.post(f"/api/v1/agents/{agent['id']}/channels", json=body, headers=member_auth),
        await client.patch(path, json={"enabled": False}, headers=member_auth),
        await client.delete(path, headers=member_auth),
    ):
        await assert_error(resp, 403, "FORBIDDEN")
    assert (await data_of(await client.get(path, headers=auth)))["enabled"] is True


async def test_another_teams_channel_and_agent_are_not_found(client):
    _, auth = await owner(client)
    agent = await new_agent(client, auth)
    created = await new_channel(client, auth, agent["id"], HOOK)
    _, other = await owner(client, "other@example.com")
    path = f"/api/v1/channels/{created['id']}"
    for resp in (
        await client.get(path, headers=other),
        await client.patch(path, json={"name": "Mine"}, headers=other),
        await client.delete(path, headers=other),
        await client.get(f"/api/v1/agents/{agent['id']}/channels", headers=other),
        await client.post(
            f"/api/v1/agents/{agent['id']}/channels",
            json={"type": "api", "config": {"outboundUrl": HOOK}},
            headers=other,
        ),
    ):
        await assert_error(resp, 404, "NOT_FOUND")
    assert (await data_of(await client.get(path, headers=auth)))["name"] == "api"


async def test_settings_are_checked_for_the_type(client):
    _, auth = await owner(client)
    agent = await new_agent(client, auth)
    url = f"/api/v1/agents/{agent['id']}/channels"

    async def refused(body: dict, words: str) -> None:
        resp = await client.post(url, json=body, headers=auth)
        await assert_error(resp, 400, "VALIDATION_ERROR", words)

    await refused({"type": "email", "config": {}}, "config.imapHost: is required")
    await refused({"type": "whatsapp", "config": {}}, "config.phoneNumberId: is required")
    error = await assert_error(
        await client.post(url, json={"type": "fax", "config": {}}, headers=auth),
        400,
        "VALIDATION_ERROR",
    )
    assert "'api'" in error["message"] or '"api"' in error["message"], error
    await refused({"type": "api", "config": {}}, "config.outboundUrl")
    await refused({"type": "api", "config": {"outboundUrl": "ftp://x"}}, "outboundUrl")
    await refused({"type": "api", "config": {"outboundUrl": HOOK, "secret": "x"}}, "secret")
    await refused({"type": "api", "config": {"outboundUrl": HOOK}, "colour": 1}, "colour")
    created = await new_channel(client, auth, agent["id"], HOOK)
    resp = await client.patch(
        f"/api/v1/channels/{created['id']}", json={"config": {"outboundUrl": 3}}, headers=auth
    )
    await assert_error(resp, 400, "VALIDATION_ERROR", "config.outboundUrl")
    resp = await client.patch(
        f"/api/v1/channels/{created['id']}",
        json={"config": {"outboundUrl": HOOK, "secret": "••••" + created["secret"][-4:]}},
        headers=auth,
    )
    await assert_error(resp, 400, "VALIDATION_ERROR", "config.secret")


async def test_private_reply_addresses_are_refused_unless_allowed(make_client):
    client = await make_client(outbound={"allow_private": False})
    _, auth = await owner(client)
    agent = await new_agent(client, auth)
    resp = await client.post(
        f"/api/v1/agents/{agent['id']}/channels",
        json={"type": "api", "config": {"outboundUrl": HOOK}},
        headers=auth,
    )
    await assert_error(resp, 400, "VALIDATION_ERROR", "config.outboundUrl")
