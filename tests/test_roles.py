"""Role matrix: owner vs member on every management route, by API key and by cookie session."""

from __future__ import annotations

from agentsvc.api.routing import Endpoint
from tests.support.accounts import add_member, bearer, create_user, key_for, session, sign_in
from tests.support.errors import assert_error
from tests.support.routes import fill_path

# What DECISIONS reserves to the owner, among the routes that exist.
OWNER_ONLY = {
    ("POST", "/api/v1/agents"),
    ("DELETE", "/api/v1/agents/{id}"),
    ("POST", "/api/v1/team/invite"),
    ("GET", "/api/v1/team/invitations"),
    ("DELETE", "/api/v1/team/invitations/{id}"),
    ("DELETE", "/api/v1/team/members/{memberId}"),
    # Event webhooks send the team's data out; erasure and exports are the owner's too.
    ("POST", "/api/v1/webhooks"),
    ("GET", "/api/v1/webhooks"),
    ("GET", "/api/v1/webhooks/{id}"),
    ("DELETE", "/api/v1/webhooks/{id}"),
    ("GET", "/api/v1/webhooks/{id}/deliveries"),
    ("GET", "/api/v1/webhooks/{id}/deliveries/{deliveryId}"),
    ("POST", "/api/v1/webhooks/{id}/deliveries/{deliveryId}/redeliver"),
    ("DELETE", "/api/v1/end-users/{ref}"),
    ("GET", "/api/v1/end-users/{ref}/export"),
    ("GET", "/api/v1/audit-log"),
}
# Routes a generic probe would disturb (ending the member's own session).
SKIP = {("POST", "/api/v1/auth/sign-out")}


def management_endpoints(client) -> list[Endpoint]:
    """Every registered endpoint that takes a credential."""
    found = []
    for route in client.app.router.routes():
        endpoint = getattr(route.handler, "endpoint", None)
        if endpoint is None or endpoint.auth == "public":
            continue
        if (endpoint.method, endpoint.full_path) in SKIP:
            continue
        found.append(endpoint)
    return found


async def probe(client, endpoint: Endpoint, headers: dict[str, str]):
    path = fill_path(endpoint, {})
    kwargs = {"headers": headers}
    if endpoint.method in ("POST", "PUT", "PATCH"):
        kwargs["json"] = {}
    return await client.request(endpoint.method, path, **kwargs)


async def team_with_member(client):
    owner, team = await create_user(client, "owner@example.com")
    member = await add_member(client, team.id, "member@example.com")
    credentials = {
        "owner key": bearer(await key_for(client, team.id, owner.id)),
        "owner session": session(await sign_in(client, "owner@example.com")),
        "member key": bearer(await key_for(client, team.id, member.id)),
        "member session": session(await sign_in(client, "member@example.com")),
    }
    return team, credentials


async def test_every_management_route_enforces_roles(client):
    _, credentials = await team_with_member(client)
    endpoints = management_endpoints(client)
    owner_only = {(e.method, e.documented_path) for e in endpoints if e.owner_only}
    assert OWNER_ONLY <= owner_only, OWNER_ONLY - owner_only
    assert len(endpoints) > len(owner_only)
    for endpoint in endpoints:
        for who, headers in credentials.items():
            resp = await probe(client, endpoint, headers)
            where = f"{who}: {endpoint.method} {endpoint.documented_path}"
            if endpoint.owner_only and who.startswith("member"):
                await assert_error(resp, 403, "FORBIDDEN")
                continue
            if endpoint.stream and resp.status == 200:
                resp.close()  # a live event stream: its headers are the answer
                continue
            body = await resp.read()
            assert resp.status != 401, (where, body)
            if resp.status == 403:
                error = (await resp.json())["error"]
                assert error["code"] != "FORBIDDEN", (where, body)


async def test_member_can_work_but_not_manage(client):
    team, cred = await team_with_member(client)
    resp = await client.post("/api/v1/agents", json={"name": "Bot"}, headers=cred["owner key"])
    agent = (await resp.json())["data"]
    for who in ("member key", "member session"):
        headers = cred[who]
        resp = await client.patch(
            f"/api/v1/agents/{agent['id']}", json={"name": f"by {who}"}, headers=headers
        )
        assert resp.status == 200, who
        for method, path, body in [
            ("POST", "/api/v1/agents", {"name": "x"}),
            ("DELETE", f"/api/v1/agents/{agent['id']}", None),
            ("POST", "/api/v1/team/invite", {"email": "x@example.com"}),
            ("GET", "/api/v1/team/invitations", None),
        ]:
            resp = await client.request(method, path, json=body, headers=headers)
            await assert_error(resp, 403, "FORBIDDEN")
        context = await (await client.get("/api/v1/team/context", headers=headers)).json()
        assert context["role"] == "member" and context["isOwner"] is False
        assert len(await (await client.get("/api/v1/team/members", headers=headers)).json()) == 2
        resp = await client.post("/api/v1/api-keys", json={}, headers=headers)
        assert resp.status == 201
    # The agent is still there; the owner can delete it.
    resp = await client.delete(f"/api/v1/agents/{agent['id']}", headers=cred["owner session"])
    assert resp.status == 200


async def test_sessions_do_not_cross_teams(client):
    _, cred = await team_with_member(client)
    _, other = await create_user(client, "stranger@example.com")
    stranger = session(await sign_in(client, "stranger@example.com"))
    resp = await client.post("/api/v1/agents", json={"name": "Bot"}, headers=cred["owner session"])
    agent = (await resp.json())["data"]
    resp = await client.get(f"/api/v1/agents/{agent['id']}", headers=stranger)
    await assert_error(resp, 404, "NOT_FOUND")
    members = await (await client.get("/api/v1/team/members", headers=stranger)).json()
    assert [m["email"] for m in members] == ["stranger@example.com"]
    keys_seen = (await (await client.get("/api/v1/api-keys", headers=stranger)).json())["data"]
    assert keys_seen == []
    member_ids = [
        m["memberId"]
        for m in await (await client.get("/api/v1/team/members", headers=cred["owner key"])).json()
    ]
    for member_id in member_ids:
        resp = await client.delete(f"/api/v1/team/members/{member_id}", headers=stranger)
        await assert_error(resp, 404, "NOT_FOUND")
    assert other.id


async def test_members_review_answers_export_and_read_analytics(client):
    """Curated answers, exports, feedback and analytics are members' work, as knowledge is."""
    team, cred = await team_with_member(client)
    resp = await client.post("/api/v1/agents", json={"name": "Bot"}, headers=cred["owner key"])
    agent = (await resp.json())["data"]
    for n, who in enumerate(("member key", "member session")):
        headers = cred[who]
        resp = await client.post(
            f"/api/v1/agents/{agent['id']}/answers",
            json={"question": f"Question {n}?", "answer": "An answer."},
            headers=headers,
        )
        assert resp.status == 201, (who, await resp.text())
        answer = (await resp.json())["data"]
        resp = await client.patch(
            f"/api/v1/answers/{answer['id']}", json={"answer": "Better."}, headers=headers
        )
        assert resp.status == 200, who
        for path in (
            f"/api/v1/agents/{agent['id']}/answers",
            f"/api/v1/agents/{agent['id']}/analytics",
            f"/api/v1/feedback?agentId={agent['id']}&rating=down",
            f"/api/v1/conversations?agentId={agent['id']}&q=hello",
            f"/api/v1/conversations/export?agentId={agent['id']}",
            f"/api/v1/form-submissions/export?agentId={agent['id']}&format=jsonl",
        ):
            resp = await client.get(path, headers=headers)
            assert resp.status == 200, (who, path, await resp.text())
            await resp.read()
        resp = await client.delete(f"/api/v1/answers/{answer['id']}", headers=headers)
        assert resp.status == 200, who
    # A cookie session's writes still need a trusted origin.
    token = cred["member session"]["Cookie"]
    resp = await client.post(
        f"/api/v1/agents/{agent['id']}/answers",
        json={"question": "Q?", "answer": "A."},
        headers={"Cookie": token, "Origin": "https://evil.example"},
    )
    assert resp.status == 403, await resp.text()
    assert team.id
