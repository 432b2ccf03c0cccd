"""Security matrix: another team's credentials on every id route, the member role on the
owner's routes, SSRF on form deliveries, and no credential stored or logged in clear. Every
route that takes an id is tried against real resources of another team (test_roles.py uses
made-up ids), so a check that only works when the resource is missing cannot pass."""

from __future__ import annotations

import asyncio
import logging
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from aiohttp.test_utils import TestServer

from agentsvc.api import all_endpoints, app_keys
from agentsvc.api.request_log import JsonAccessLogger, access_log
from agentsvc.api.routing import PATH_PARAM, Endpoint
from agentsvc.app import create_app
from agentsvc.outbound import literal_address
from agentsvc.services.tools import secrets as secret_service
from tests.support import agent_versions, approvals, channels, guardrails, pg, scim, sources, sso
from tests.support import storage as files
from tests.support.accounts import (
    SESSION_COOKIE,
    add_member,
    bearer,
    create_user,
    key_for,
    session,
    sign_in,
)
from tests.support.chat import chat, user
from tests.support.errors import assert_error
from tests.support.fakes.http_receiver import HttpReceiver
from tests.support.outbound import FORBIDDEN, StubResolver
from tests.support.pg import stored_bytes
from tests.support.routes import fill_path
from tests.support.saved_tools import save_tool_as_if_private_allowed
from tests.support.settings import make_settings

FORM_FIELDS = [{"name": "email", "label": "E-mail", "type": "email"}]

# Routes with a path parameter that are public on purpose: no team's credential is involved.
PUBLIC_BY_DESIGN = {
    # Optional auth: a caller's key or session only lets a name be found among its agents.
    ("GET", "/api/v1/triggers/form/{toolIdOrName}"): "the widget shows a form by its tool id",
    ("GET", "/api/v1/triggers/widget/{agentId}"): "the widget reads an agent's triggers",
    ("GET", "/dashboard/{name}.js"): "the dashboard's static scripts",
    ("GET", "/dashboard/{name}.css"): "the dashboard's static styles",
    ("GET", "/dashboard/{release}/{name}.js"): "the same scripts, by release",
    ("GET", "/dashboard/{release}/{name}.css"): "the same styles, by release",
    ("GET", "/api/v1/widget/handoff/{agentId}"): "the widget reads whether an agent hands over",
    ("GET", "/api/v1/widget/config/{agentId}"): "the widget reads an agent's look and texts",
    ("GET", "/widget/locales/{lang}.json"): "the widget's texts in one language",
    ("GET", "/api/v1/avatars/{avatarId}"): "visitors' browsers load members' pictures",
} | (scim.BY_DESIGN | sso.BY_DESIGN | channels.BY_DESIGN)
# Secrets are addressed by name within the caller's own team: another team's PUT of the
# same name creates its own secret (checked below to leave the first team's untouched).
OWN_NAMESPACE = {("PUT", "/api/v1/secrets/{name}")}
# End users are named by their widget userId or e-mail within the caller's own team: another
# team's export finds nothing and its erasure deletes nothing (checked below).
END_USER_ROUTES = {("DELETE", "/api/v1/end-users/{ref}"), ("GET", "/api/v1/end-users/{ref}/export")}
OWN_NAMESPACE |= END_USER_ROUTES
VISITOR = {"id": "visitor-7", "email": "visitor@example.com", "name": "Vera"}
SUPPORT_MODULES_WITH_ID_ROUTES = (channels, agent_versions, sources, guardrails, approvals, files)

# For each route with an id: which resource of the victim team fills it, and a body that
# passes validation (so the answer is about the id, not about the body).
ROUTES: dict[tuple[str, str], tuple[str, Any]] = {
    ("GET", "/api/v1/agents/{id}"): ("agent", None),
    ("PATCH", "/api/v1/agents/{id}"): ("agent", {"name": "stolen"}),
    ("DELETE", "/api/v1/agents/{id}"): ("agent", None),
    ("PUT", "/api/v1/agents/{id}/identity-secret"): ("agent", {}),
    ("GET", "/api/v1/agents/{id}/identity-secret"): ("agent", None),
    ("DELETE", "/api/v1/agents/{id}/identity-secret"): ("agent", None),
    ("GET", "/api/v1/conversations/{id}"): ("conversation", None),
    ("DELETE", "/api/v1/conversations/{id}"): ("conversation", None),
    ("POST", "/api/v1/conversations/{id}/feedback"): ("conversation", "feedback"),
    ("POST", "/api/v1/conversations/{id}/handoff"): ("conversation", {}),
    ("POST", "/api/v1/conversations/{id}/contact"): ("conversation", {"email": "x@example.com"}),
    ("POST", "/api/v1/conversations/{id}/assign"): ("conversation", {}),
    ("POST", "/api/v1/conversations/{id}/messages"): ("conversation", {"content": "stolen"}),
    ("POST", "/api/v1/conversations/{id}/release"): ("conversation", None),
    ("POST", "/api/v1/conversations/{id}/close"): ("conversation", None),
    ("GET", "/api/v1/conversations/{id}/events"): ("conversation", None),
    ("POST", "/api/v1/conversations/{id}/notes"): ("conversation", {"content": "stolen"}),
    ("POST", "/api/v1/conversations/{id}/read"): ("conversation", None),
    ("GET", "/api/v1/conversations/{id}/visitor"): ("conversation", None),
    ("PATCH", "/api/v1/team/canned-responses/{id}"): ("canned", {"title": "stolen"}),
    ("DELETE", "/api/v1/team/canned-responses/{id}"): ("canned", None),
    ("GET", "/api/v1/agents/{id}/handoff-stats"): ("agent", None),
    ("GET", "/api/v1/agents/{id}/analytics"): ("agent", None),
    ("GET", "/api/v1/agents/{id}/answers"): ("agent", None),
    ("POST", "/api/v1/agents/{id}/answers"): ("agent", {"question": "Stolen?", "answer": "x"}),
    ("GET", "/api/v1/answers/{id}"): ("answer", None),
    ("PATCH", "/api/v1/answers/{id}"): ("answer", {"answer": "stolen"}),
    ("DELETE", "/api/v1/answers/{id}"): ("answer", None),
    ("PATCH", "/api/v1/team/members/{memberId}"): ("member", {"notifyHandoffs": True}),
    ("GET", "/api/v1/agents/{id}/documents"): ("agent", None),
    ("POST", "/api/v1/agents/{id}/documents"): ("agent", {"title": "x", "content": "stolen"}),
    ("GET", "/api/v1/documents/{id}"): ("document", None),
    ("DELETE", "/api/v1/documents/{id}"): ("document", None),
    ("GET", "/api/v1/tools/{id}"): ("tool", None),
    ("PUT", "/api/v1/tools/{id}"): ("tool", {"description": "stolen"}),
    ("DELETE", "/api/v1/tools/{id}"): ("tool", None),
    ("POST", "/api/v1/tools/{id}/refresh"): ("tool", None),
    ("POST", "/api/v1/mcp/{agentId}"): (
        "agent",
        {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "ask"}},
    ),
    ("DELETE", "/api/v1/secrets/{name}"): ("secret", None),
    ("GET", "/api/v1/form-submissions/{id}"): ("submission", None),
    ("POST", "/api/v1/form-submissions/{id}/redeliver"): ("submission", None),
    ("GET", "/api/v1/triggers/{id}"): ("trigger", None),
    ("PUT", "/api/v1/triggers/{id}"): ("trigger", {"name": "stolen"}),
    ("DELETE", "/api/v1/triggers/{id}"): ("trigger", None),
    ("POST", "/api/v1/triggers/{id}/toggle"): ("trigger", None),
    ("DELETE", "/api/v1/team/invitations/{id}"): ("invitation", None),
    ("DELETE", "/api/v1/team/members/{memberId}"): ("member", None),
    ("DELETE", "/api/v1/api-keys/{id}"): ("api_key", None),
    ("GET", "/api/v1/webhooks/{id}"): ("webhook", None),
    ("DELETE", "/api/v1/webhooks/{id}"): ("webhook", None),
    ("GET", "/api/v1/webhooks/{id}/deliveries"): ("webhook", None),
    ("GET", "/api/v1/webhooks/{id}/deliveries/{deliveryId}"): (("webhook", "delivery"), None),
    ("POST", "/api/v1/webhooks/{id}/deliveries/{deliveryId}/redeliver"): (
        ("webhook", "delivery"),
        None,
    ),
} | {k: v for m in SUPPORT_MODULES_WITH_ID_ROUTES for k, v in m.SECURITY_ROUTES.items()}


def id_routes() -> list[Endpoint]:
    """Every endpoint of the service whose path takes a parameter."""
    return [e for e in all_endpoints() if PATH_PARAM.search(e.path)]


@dataclass
class Team:
    """A team with one of everything, and the credentials of its owner and a member."""

    ids: dict[str, str] = field(default_factory=dict)
    owner_key: dict[str, str] = field(default_factory=dict)
    owner_session: dict[str, str] = field(default_factory=dict)
    member_key: dict[str, str] = field(default_factory=dict)
    member_session: dict[str, str] = field(default_factory=dict)
    message_id: str = ""
    secret_value: str = ""


async def json_of(resp, status: int) -> Any:
    assert resp.status == status, await resp.text()
    return await resp.json()


async def furnished_team(client, email: str) -> Team:
    """Create a team through the API with a resource of every kind a route can name."""
    owner, team_row = await create_user(client, email)
    member = await add_member(client, team_row.id, f"member.{email}")
    team = Team(
        owner_key=bearer(await key_for(client, team_row.id, owner.id)),
        owner_session=session(await sign_in(client, email)),
        member_key=bearer(await key_for(client, team_row.id, member.id)),
        member_session=session(await sign_in(client, f"member.{email}")),
    )
    auth = team.owner_key
    ids = team.ids
    # An event webhook first, so the chat below leaves a delivery in its log.
    hook = await json_of(
        await client.post(
            "/api/v1/webhooks",
            json={"url": "http://127.0.0.1:9/events", "events": ["conversation.created"]},
            headers=auth,
        ),
        201,
    )
    ids["webhook"] = hook["data"]["id"]
    agent = await json_of(
        await client.post("/api/v1/agents", json={"name": "Victim"}, headers=auth), 201
    )
    ids["agent"] = agent["data"]["id"]
    for module in SUPPORT_MODULES_WITH_ID_ROUTES:
        await module.furnish(client, auth, ids)
    await json_of(
        await client.put(f"/api/v1/agents/{ids['agent']}/identity-secret", json={}, headers=auth),
        200,
    )
    stream = await chat(
        client, {"agentId": ids["agent"], "messages": user("hello"), "user": VISITOR}, auth
    )
    ids["conversation"] = stream.start["conversationId"]
    team.message_id = stream.start["messageId"]
    deliveries = await json_of(
        await client.get(f"/api/v1/webhooks/{ids['webhook']}/deliveries", headers=auth), 200
    )
    ids["delivery"] = deliveries["data"][0]["id"]
    doc = await json_of(
        await client.post(
            f"/api/v1/agents/{ids['agent']}/documents",
            json={"title": "Handbook", "content": "Refunds take five days."},
            headers=auth,
        ),
        201,
    )
    ids["document"] = doc["data"]["id"]
    answer = await json_of(
        await client.post(
            f"/api/v1/agents/{ids['agent']}/answers",
            json={"question": "When do you open?", "answer": "At nine."},
            headers=auth,
        ),
        201,
    )
    ids["answer"] = answer["data"]["id"]
    tool = await json_of(
        await client.post(
            "/api/v1/tools",
            json={
                "agentId": ids["agent"],
                "name": "contact",
                "description": "Collect contact details",
                "executionType": "form",
                "formSchema": {"fields": FORM_FIELDS},
                "formExecutionMode": "client",
                "formClientHandler": "saveLead",
            },
            headers=auth,
        ),
        201,
    )
    ids["tool"] = tool["id"]
    team.secret_value = f"value of {email}"
    # Named after the team: a name is only an address within the caller's own team.
    ids["secret"] = email.split("@")[0].upper() + "_TOKEN"
    await json_of(
        await client.put(
            f"/api/v1/secrets/{ids['secret']}", json={"value": team.secret_value}, headers=auth
        ),
        200,
    )
    sub = await json_of(
        await client.post(
            "/api/v1/form-submissions/submit",
            json={
                "toolId": ids["tool"],
                "formData": {"email": "a@b.co"},
                "fieldsCompleted": ["email"],
            },
        ),
        200,
    )
    ids["submission"] = sub["submissionId"]
    trigger = await json_of(
        await client.post(
            f"/api/v1/triggers?agentId={ids['agent']}",
            json={
                "name": "Leaving",
                "triggerType": "exit_intent",
                "conditions": {},
                "actionType": "open_chat",
                "actionConfig": {},
            },
            headers=auth,
        ),
        201,
    )
    ids["trigger"] = trigger["id"]
    invitation = await json_of(
        await client.post("/api/v1/team/invite", json={"email": "new@example.com"}, headers=auth),
        201,
    )
    ids["invitation"] = invitation["id"]
    members = await json_of(await client.get("/api/v1/team/members", headers=auth), 200)
    ids["member"] = next(m["memberId"] for m in members if m["id"] == member.id)
    api_keys = await json_of(await client.get("/api/v1/api-keys", headers=auth), 200)
    ids["api_key"] = api_keys["data"][0]["id"]
    canned = {"shortcut": "hello", "title": "Hello", "content": "Hello there!"}
    resp = await client.post("/api/v1/team/canned-responses", json=canned, headers=auth)
    ids["canned"] = (await json_of(resp, 201))["id"]
    return team


def route_request(endpoint: Endpoint, team: Team) -> tuple[str, Any]:
    """The path naming the team's resource, and a valid body, for one route."""
    key = (endpoint.method, endpoint.documented_path)
    if key in END_USER_ROUTES:
        return fill_path(endpoint, {"ref": VISITOR["email"]}), None
    resource, body = ROUTES[key]
    if body == "feedback":
        body = {"messageId": team.message_id, "rating": "down"}
    names = [name for name, _ in PATH_PARAM.findall(endpoint.path)]
    resources = resource if isinstance(resource, tuple) else (resource,)
    assert len(names) == len(resources), endpoint.path
    values = {name: team.ids[r] for name, r in zip(names, resources, strict=True)}
    return fill_path(endpoint, values), body


async def assert_intact(client, team: Team) -> None:
    """Every resource of the team is still there, unchanged where a probe tried to change it."""
    auth, ids = team.owner_key, team.ids
    agent = await json_of(await client.get(f"/api/v1/agents/{ids['agent']}", headers=auth), 200)
    assert agent["data"]["name"] == "Victim"
    identity = await json_of(
        await client.get(f"/api/v1/agents/{ids['agent']}/identity-secret", headers=auth), 200
    )
    assert identity["data"]["enabled"] is True
    conv = await client.get(f"/api/v1/conversations/{ids['conversation']}", headers=auth)
    conv = (await json_of(conv, 200))["data"]
    assert conv["status"] == "bot" and conv["assignee"] is None
    messages = conv["messages"]
    assert all(m.get("feedback") in (None, {}) for m in messages), messages
    docs = await client.get(f"/api/v1/agents/{ids['agent']}/documents", headers=auth)
    assert [d["id"] for d in (await json_of(docs, 200))["data"]] == [ids["document"]]
    tool = await json_of(await client.get(f"/api/v1/tools/{ids['tool']}", headers=auth), 200)
    assert tool["description"] == "Collect contact details"
    answers = await client.get(f"/api/v1/agents/{ids['agent']}/answers", headers=auth)
    answers = (await json_of(answers, 200))["data"]
    assert [(a["id"], a["answer"]) for a in answers] == [(ids["answer"], "At nine.")]
    trigger = await client.get(f"/api/v1/triggers/{ids['trigger']}", headers=auth)
    trigger = await json_of(trigger, 200)
    assert trigger["name"] == "Leaving" and trigger["isEnabled"] is True
    sub = await client.get(f"/api/v1/form-submissions/{ids['submission']}", headers=auth)
    assert (await json_of(sub, 200))["id"] == ids["submission"]
    invitations = await json_of(await client.get("/api/v1/team/invitations", headers=auth), 200)
    assert [(i["id"], i["status"]) for i in invitations] == [(ids["invitation"], "pending")]
    members = await json_of(await client.get("/api/v1/team/members", headers=auth), 200)
    assert ids["member"] in [m["memberId"] for m in members]
    assert not any(m["notifyHandoffs"] for m in members)
    api_keys = await json_of(await client.get("/api/v1/api-keys", headers=auth), 200)
    assert ids["api_key"] in [k["id"] for k in api_keys["data"]]
    hook = await client.get(f"/api/v1/webhooks/{ids['webhook']}", headers=auth)
    assert (await json_of(hook, 200))["data"]["url"] == "http://127.0.0.1:9/events"
    delivery = await client.get(
        f"/api/v1/webhooks/{ids['webhook']}/deliveries/{ids['delivery']}", headers=auth
    )
    assert (await json_of(delivery, 200))["data"]["eventType"] == "conversation.created"
    export = await client.get(f"/api/v1/end-users/{VISITOR['id']}/export", headers=auth)
    exported = (await json_of(export, 200))["data"]
    assert [c["id"] for c in exported["conversations"]] == [ids["conversation"]]
    db, box = client.app[app_keys.db_key], client.app[app_keys.secret_box_key]
    whoami = await json_of(await client.get("/api/v1/auth/session", headers=auth), 200)
    team_id = whoami["data"]["team"]["id"]
    revealed = await secret_service.reveal(db, box, team_id, {ids["secret"]})
    assert revealed == {ids["secret"]: team.secret_value}


def test_every_id_route_has_a_fixture():
    """A new route with a path parameter fails here until the matrix covers it."""
    missing = []
    for endpoint in id_routes():
        key = (endpoint.method, endpoint.documented_path)
        if endpoint.auth == "public" or key in PUBLIC_BY_DESIGN:
            if key not in PUBLIC_BY_DESIGN:
                missing.append(f"public {key}: add to PUBLIC_BY_DESIGN with the reason")
        elif key not in ROUTES and key not in OWN_NAMESPACE:
            missing.append(f"{key}: add a fixture resource to ROUTES")
    assert missing == []
    documented = {(e.method, e.documented_path) for e in id_routes()}
    assert set(ROUTES) | OWN_NAMESPACE | set(PUBLIC_BY_DESIGN) == documented


async def test_another_teams_key_and_session_get_not_found_on_every_id_route(client):
    victim = await furnished_team(client, "victim@example.com")
    intruder = await furnished_team(client, "intruder@example.com")
    credentials = {
        "other team's key": intruder.owner_key,
        "other team's session": intruder.owner_session,
        "other team's member key": intruder.member_key,
        "other team's member session": intruder.member_session,
    }
    tried = 0
    for endpoint in id_routes():
        key = (endpoint.method, endpoint.documented_path)
        if key not in ROUTES:
            continue
        path, body = route_request(endpoint, victim)
        for who, headers in credentials.items():
            if endpoint.owner_only and "member" in who:
                continue  # a member is refused before the id is looked at (403), see below
            resp = await client.request(endpoint.method, path, json=body, headers=headers)
            error = await assert_error(resp, 404, "NOT_FOUND")
            assert "victim" not in error["message"].lower(), (who, key)
            tried += 1
    assert tried >= 3 * len(ROUTES)
    # The same end user talked to both teams: the intruder's export holds only its own
    # conversation, and its erasure deletes nothing of the victim's (assert_intact below
    # reads the victim's conversation and export).
    for ref in (VISITOR["email"], VISITOR["id"]):
        resp = await client.get(f"/api/v1/end-users/{ref}/export", headers=intruder.owner_key)
        found = (await json_of(resp, 200))["data"]
        # Its own, until its first erasure took it.
        own = [intruder.ids["conversation"]] if ref == VISITOR["email"] else []
        assert [c["id"] for c in found["conversations"]] == own
        resp = await client.delete(f"/api/v1/end-users/{ref}", headers=intruder.owner_key)
        assert resp.status == 200
    # The intruder's PUT of the same secret name is their own secret.
    resp = await client.put(
        f"/api/v1/secrets/{victim.ids['secret']}",
        json={"value": "overwritten?"},
        headers=intruder.owner_key,
    )
    assert resp.status == 200
    await assert_intact(client, victim)
    # Chat cannot continue another team's conversation either.
    resp = await client.post(
        "/api/v1/chat",
        json={
            "agentId": victim.ids["agent"],
            "conversationId": victim.ids["conversation"],
            "messages": user("hi"),
        },
        headers=intruder.owner_key,
    )
    await assert_error(resp, 404, "NOT_FOUND")


async def test_member_is_forbidden_on_owner_routes_with_real_ids(client):
    team = await furnished_team(client, "owner@example.com")
    owner_routes = [e for e in id_routes() if e.owner_only]
    assert {(e.method, e.documented_path) for e in owner_routes} >= {
        ("DELETE", "/api/v1/agents/{id}"),
        ("DELETE", "/api/v1/team/invitations/{id}"),
        ("DELETE", "/api/v1/team/members/{memberId}"),
    }
    for endpoint in owner_routes:
        path, body = route_request(endpoint, team)
        for headers in (team.member_key, team.member_session):
            resp = await client.request(endpoint.method, path, json=body, headers=headers)
            await assert_error(resp, 403, "FORBIDDEN")
    await assert_intact(client, team)


# Routes that name the agent in the query: another team's agent is not found either.
AGENT_QUERY_ROUTES = [
    "/api/v1/conversations?agentId={agent}",
    "/api/v1/conversations?agentId={agent}&q=hello&rating=any&from=2026-01-01&userId=u",
    "/api/v1/conversations/export?agentId={agent}",
    "/api/v1/conversations/export?agentId={agent}&format=jsonl&q=hello",
    "/api/v1/form-submissions/export?agentId={agent}",
    "/api/v1/feedback?agentId={agent}",
    "/api/v1/feedback?agentId={agent}&rating=down",
    "/api/v1/form-submissions/analytics?agentId={agent}",
    "/api/v1/triggers/stats?agentId={agent}",
    "/api/v1/tools?agentId={agent}",
]


async def test_another_teams_agent_in_a_query_is_not_found(client):
    victim = await furnished_team(client, "victim@example.com")
    intruder = await furnished_team(client, "intruder@example.com")
    for template in AGENT_QUERY_ROUTES:
        path = template.format(agent=victim.ids["agent"])
        for headers in (
            intruder.owner_key,
            intruder.owner_session,
            intruder.member_key,
            intruder.member_session,
        ):
            resp = await client.get(path, headers=headers)
            error = await assert_error(resp, 404, "NOT_FOUND")
            assert "victim" not in error["message"].lower(), path
        # The victim's own members read them.
        for headers in (victim.member_key, victim.member_session):
            resp = await client.get(path, headers=headers)
            assert resp.status == 200, (path, await resp.text())
            await resp.read()


# ── SSRF: form webhooks and post actions with allow_private = false ─────────────────────

# Every non-public address of the tools issue's list (tests/test_outbound.py) as a literal
# host, numeric spellings of loopback, and a name the stub resolver answers with 127.0.0.1:
# loopback ones would reach the receiver if nothing stopped them; none may be connected to.
SSRF_HOSTS = [
    "internal.example",
    "127.1",
    "2130706433",
    "0x7f000001",
    "017700000001",
    *(f"[{a}]" if ":" in a else a for a in FORBIDDEN),
]


@pytest.fixture
async def loopback_receiver(aiohttp_server):
    fake = HttpReceiver()
    server = await aiohttp_server(fake.app, host="127.0.0.1")
    fake.port = server.port  # type: ignore[attr-defined]
    return fake


@pytest.mark.parametrize("host", SSRF_HOSTS)
async def test_form_deliveries_cannot_reach_private_addresses(
    aiohttp_client, tmp_path, loopback_receiver, host
):
    app = create_app(
        make_settings(
            tmp_path, outbound={"allow_private": False}, webhooks={"retry_schedule_seconds": [0]}
        )
    )
    app[app_keys.outbound_resolver_key] = StubResolver("127.0.0.1")
    client = await aiohttp_client(app)
    owner, team = await create_user(client, "owner@example.com")
    auth = bearer(await key_for(client, team.id, owner.id))
    agent = await json_of(
        await client.post("/api/v1/agents", json={"name": "A"}, headers=auth), 201
    )
    base = f"http://{host}:{loopback_receiver.port}"
    for mode, extra in [
        ("webhook", {"formWebhookUrl": f"{base}/primary"}),
        ("client", {"formClientHandler": "save"}),
    ]:
        body = {
            "agentId": agent["data"]["id"],
            "name": f"form_{mode}",
            "description": "A form",
            "executionType": "form",
            "formSchema": {"fields": FORM_FIELDS},
            "formExecutionMode": mode,
            "formPostActions": [
                {"type": "webhook", "url": f"{base}/action", "payload": {"a": 1}},
                {"type": "team_chat", "webhookUrl": f"{base}/chat", "message": "new"},
            ],
            **extra,
        }
        resp = await client.post("/api/v1/tools", json=body, headers=auth)
        if literal_address(host) is None:
            tool = await json_of(resp, 201)
        else:
            # Refused on save; one saved while allow_private was on is still stopped on sending.
            await assert_error(resp, 400, "VALIDATION_ERROR", "allow_private")
            tool = {"id": (await save_tool_as_if_private_allowed(client, team.id, body)).id}
        result = await json_of(
            await client.post(
                "/api/v1/form-submissions/submit",
                json={
                    "toolId": tool["id"],
                    "formData": {"email": "a@b.co"},
                    "fieldsCompleted": ["email"],
                },
            ),
            200,
        )
        if mode == "webhook":
            assert result["webhookResult"]["success"] is False
            assert "refused" in result["webhookResult"]["error"], result
            assert result["status"] == "webhook_failed"
        outcomes = result["postActionResults"]
        assert [o["type"] for o in outcomes] == ["webhook", "team_chat"], outcomes
        for outcome in outcomes:
            assert outcome["success"] is False and "refused" in outcome["error"], outcome
        await client.app[app_keys.deliverer_key].deliver_due()
        detail = await json_of(
            await client.get(f"/api/v1/form-submissions/{result['submissionId']}", headers=auth),
            200,
        )
        # Failed for good (one attempt configured), each attempt recorded as refused.
        deliveries = detail["deliveries"]
        assert len(deliveries) == (3 if mode == "webhook" else 2), deliveries
        for delivery in deliveries:
            assert delivery["status"] == "failed", delivery
            assert "refused" in delivery["lastError"], delivery
    assert loopback_receiver.requests == []


@pytest.mark.parametrize("host", SSRF_HOSTS)
async def test_event_webhooks_cannot_reach_private_addresses(
    aiohttp_client, tmp_path, loopback_receiver, host
):
    app = create_app(
        make_settings(
            tmp_path, outbound={"allow_private": False}, webhooks={"retry_schedule_seconds": [0]}
        )
    )
    app[app_keys.outbound_resolver_key] = StubResolver("127.0.0.1")
    client = await aiohttp_client(app)
    owner, team = await create_user(client, "owner@example.com")
    auth = bearer(await key_for(client, team.id, owner.id))
    url = f"http://{host}:{loopback_receiver.port}/events"
    resp = await client.post(
        "/api/v1/webhooks", json={"url": url, "events": ["conversation.created"]}, headers=auth
    )
    if literal_address(host) is not None:
        await assert_error(resp, 400, "VALIDATION_ERROR", "allow_private")
        return
    hook = (await json_of(resp, 201))["data"]
    agent = await json_of(
        await client.post("/api/v1/agents", json={"name": "A"}, headers=auth), 201
    )
    await chat(client, {"agentId": agent["data"]["id"], "messages": user("hi")}, auth)
    await client.app[app_keys.deliverer_key].deliver_due()
    for _ in range(100):  # the worker, woken by the chat, may be making the attempt
        log = await json_of(
            await client.get(f"/api/v1/webhooks/{hook['id']}/deliveries", headers=auth), 200
        )
        [delivery] = log["data"]
        if delivery["status"] != "pending":
            break
        await asyncio.sleep(0.05)
    assert delivery["status"] == "failed" and "refused" in delivery["lastError"], delivery
    assert loopback_receiver.requests == []


# ── nothing in clear: a full scenario, then the log and the database file ─────────────────


async def test_no_credential_in_clear_in_log_or_database(
    aiohttp_client, tmp_path, caplog, smtp_server, loopback_receiver
):
    # Everything the service logs (its own loggers at every level, the rest from INFO), with
    # the access log of `agentsvc serve`.
    caplog.set_level(logging.INFO)
    caplog.set_level(logging.DEBUG, logger="agentsvc")
    app = create_app(
        make_settings(
            tmp_path, smtp=smtp_server.settings(), webhooks={"retry_schedule_seconds": [0]}
        )
    )
    server = TestServer(app)
    await server.start_server(access_log_class=JsonAccessLogger, access_log=access_log)
    client = await aiohttp_client(server)
    secrets: dict[str, str] = {}
    # Every response body, with the credential it is meant to show (a new key, once).
    bodies: list[tuple[str, bytes, str | None]] = []

    async def call(method: str, path: str, status: int, shows: str | None = None, **kwargs):
        resp = await client.request(method, path, **kwargs)
        raw = await resp.read()
        assert resp.status == status, (path, raw)
        bodies.append((f"{method} {path}", raw, shows))
        return resp

    # First-run setup: the owner, with a password.
    secrets["owner password"] = "owner: a long passphrase 1"
    await call(
        "POST",
        "/api/v1/setup",
        201,
        json={"email": "owner@example.com", "password": secrets["owner password"]},
    )
    resp = await call(
        "POST",
        "/api/v1/auth/sign-in/email",
        200,
        json={"email": "owner@example.com", "password": secrets["owner password"]},
    )
    secrets["owner session"] = resp.cookies[SESSION_COOKIE].value
    client.session.cookie_jar.clear()
    owner = session(secrets["owner session"])
    resp = await call(
        "POST", "/api/v1/api-keys", 201, shows="api key", json={"name": "ci"}, headers=owner
    )
    secrets["api key"] = (await resp.json())["data"]["key"]
    auth = bearer(secrets["api key"])
    secrets["secret value"] = "sk-live-secret-value-0123456789"
    await call(
        "PUT",
        "/api/v1/secrets/CRM_TOKEN",
        200,
        json={"value": secrets["secret value"]},
        headers=auth,
    )
    resp = await call("POST", "/api/v1/agents", 201, json={"name": "Shop"}, headers=auth)
    agent_id = (await resp.json())["data"]["id"]
    resp = await call(
        "PUT",
        f"/api/v1/agents/{agent_id}/identity-secret",
        200,
        shows="identity secret",
        json={"secret": "identity-secret-of-the-shop-0123"},
        headers=auth,
    )
    secrets["identity secret"] = "identity-secret-of-the-shop-0123"
    await call(
        "POST",
        "/api/v1/tools",
        201,
        json={
            "agentId": agent_id,
            "name": "crm",
            "description": "Looks up the CRM",
            "executionType": "http",
            "inputSchema": {"type": "object", "properties": {}},
            "httpUrl": f"http://127.0.0.1:{loopback_receiver.port}/crm",
            "httpMethod": "GET",
            "httpHeaders": {"Authorization": "Bearer {{CRM_TOKEN}}"},
        },
        headers=auth,
    )
    resp = await call(
        "POST",
        "/api/v1/tools",
        201,
        shows="webhook secret",  # given to the team on its form tools (DECISIONS)
        json={
            "agentId": agent_id,
            "name": "contact",
            "description": "Collect contact details",
            "executionType": "form",
            "formSchema": {"fields": FORM_FIELDS},
            "formExecutionMode": "webhook",
            "formWebhookUrl": f"http://127.0.0.1:{loopback_receiver.port}/hook",
        },
        headers=auth,
    )
    form_tool = await resp.json()
    secrets["webhook secret"] = form_tool["formWebhookSecret"]
    assert secrets["webhook secret"].startswith("whsec_")
    # Chat, calling the HTTP tool (its header carries the secret to the receiver only).
    stream = await chat(client, {"agentId": agent_id, "messages": user("/tool crm {}")}, auth)
    assert "tool_result" in stream.names
    bodies.append(("POST /api/v1/chat", stream.raw, None))
    assert loopback_receiver.requests[-1].headers["Authorization"] == (
        f"Bearer {secrets['secret value']}"
    )
    await call(
        "POST",
        "/api/v1/form-submissions/submit",
        200,
        json={"toolId": form_tool["id"], "formData": {"email": "a@b.co"}, "fieldsCompleted": []},
    )
    # A magic link, used.
    await call(
        "POST",
        "/api/v1/auth/magic-link",
        200,
        json={"email": "owner@example.com", "callbackUrl": "/dashboard"},
    )
    mail = (await smtp_server.wait_for(1))[-1]
    secrets["magic-link token"] = re.search(r"token=([\w-]+)", mail.text).group(1)
    resp = await client.get(
        f"/api/v1/auth/magic-link/verify?token={secrets['magic-link token']}",
        allow_redirects=False,
    )
    assert resp.status in (302, 303)
    secrets["magic-link session"] = resp.cookies[SESSION_COOKIE].value
    client.session.cookie_jar.clear()
    # An invitation, accepted by a new user with a password.
    await call(
        "POST",
        "/api/v1/team/invite",
        201,
        shows="invitation token",  # the link, given to the owner to share by hand
        json={"email": "new@example.com"},
        headers=auth,
    )
    mail = (await smtp_server.wait_for(2))[-1]
    secrets["invitation token"] = re.search(r"token=([\w-]+)", mail.text).group(1)
    secrets["invitee password"] = "invitee: another passphrase 2"
    resp = await call(
        "POST",
        "/api/v1/team/invitations/accept",
        200,
        json={"token": secrets["invitation token"], "password": secrets["invitee password"]},
    )
    secrets["invitee session"] = resp.cookies[SESSION_COOKIE].value
    client.session.cookie_jar.clear()
    # What a user reads back: never a credential, beyond the form tools' webhook secret.
    for path in (
        "/api/v1/api-keys",
        "/api/v1/secrets",
        "/api/v1/auth/session",
        "/api/v1/team/invitations",
        "/api/v1/team/members",
        f"/api/v1/conversations?agentId={agent_id}",
        "/api/v1/form-submissions",
        f"/api/v1/agents/{agent_id}/identity-secret",
        f"/api/v1/agents/{agent_id}",
    ):
        await call("GET", path, 200, headers=auth)
    await call(
        "GET", f"/api/v1/tools?agentId={agent_id}", 200, shows="webhook secret", headers=auth
    )
    shown = [
        f"{name} in the response to {where}"
        for where, raw, shows in bodies
        for name, value in secrets.items()
        if name != shows and value.encode() in raw
    ]
    assert shown == []

    await client.app[app_keys.mailer_key].drain()
    await client.app[app_keys.deliverer_key].deliver_due()
    data_dir = Path(client.app[app_keys.settings_key].server.data_dir)
    stored = await stored_bytes(client.app)
    if not pg.SERVER_URL:
        assert (data_dir / "agentsvc.db-wal").exists()
    # Positive controls: plain data written in the scenario is found by the same search.
    assert b"new@example.com" in stored and b"Looks up the CRM" in stored
    logged = caplog.text + "\n".join(str(r.__dict__) for r in caplog.records)
    assert '"path":"/api/v1/auth/magic-link/verify"' in logged  # the access log was captured
    leaks = [
        f"{name} in {where}"
        for name, value in secrets.items()
        for where, haystack in (("the database", stored), ("the log", logged.encode()))
        if value.encode() in haystack
    ]
    assert leaks == []
