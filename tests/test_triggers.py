"""Trigger API: shapes, defaults, validation per type and action, templates, the public feed."""

from __future__ import annotations

import re

import pytest

from agentsvc.api import app_keys
from agentsvc.ids import new_id, now_iso
from tests.support.accounts import bearer, new_api_key
from tests.support.errors import assert_error
from tests.support.triggers import body, create, new_agent

ISO = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")
FIELDS = {
    "id",
    "agentId",
    "name",
    "description",
    "triggerType",
    "conditions",
    "actionType",
    "actionConfig",
    "triggerOnce",
    "isEnabled",
    "priority",
    "createdAt",
    "updatedAt",
}
WIDGET_FIELDS = {
    "id",
    "name",
    "triggerType",
    "conditions",
    "actionType",
    "actionConfig",
    "triggerOnce",
    "priority",
}


async def insert_tool(client, agent_id, *, execution_type="form", enabled=True, name=None) -> str:
    """Insert a tool row directly (the tools API is another area's)."""
    tool_id = new_id("tool")
    now = now_iso()
    async with client.app[app_keys.db_key].write() as conn:
        await conn.execute(
            "INSERT INTO tools (id, agent_id, team_id, name, description, execution_type,"
            " input_schema, is_enabled, created_at, updated_at)"
            " SELECT ?, id, team_id, ?, 'A tool', ?, '{}', ?, ?, ? FROM agents WHERE id = ?",
            (
                tool_id,
                name or f"t_{tool_id[-6:].lower()}",
                execution_type,
                int(enabled),
                now,
                now,
                agent_id,
            ),
        )
    return tool_id


@pytest.fixture
async def agent(client, auth) -> str:
    return await new_agent(client, auth)


async def test_create_returns_bare_trigger_with_defaults(client, auth, agent):
    trigger = await create(client, auth, agent)
    assert set(trigger) == FIELDS
    assert trigger["id"].startswith("trg_")
    assert trigger["agentId"] == agent
    assert trigger["triggerOnce"] is True
    assert trigger["isEnabled"] is True
    assert trigger["priority"] == 0
    assert trigger["description"] is None
    assert trigger["conditions"] == {"timeOnPage": 30}
    assert trigger["actionConfig"] == {"message": "Hi!"}
    assert ISO.match(trigger["createdAt"]) and trigger["createdAt"] == trigger["updatedAt"]
    resp = await client.get(f"/api/v1/triggers/{trigger['id']}", headers=auth)
    assert resp.status == 200
    assert await resp.json() == trigger


async def test_agent_id_comes_from_the_query(client, auth, agent):
    resp = await client.post("/api/v1/triggers", json=body(), headers=auth)
    await assert_error(resp, 400, "VALIDATION_ERROR", "query.agentId: is required")
    resp = await client.post(
        f"/api/v1/triggers?agentId={agent}", json=body(agentId=agent), headers=auth
    )
    await assert_error(resp, 400, "VALIDATION_ERROR", "agentId: is not a known field")


async def test_integral_numbers_are_integers(client, auth, agent):
    trigger = await create(client, auth, agent, priority=3.0)
    assert trigger["priority"] == 3 and isinstance(trigger["priority"], int)
    resp = await client.put(
        f"/api/v1/triggers/{trigger['id']}", json={"priority": -2.0}, headers=auth
    )
    assert (await resp.json())["priority"] == -2


async def test_fixed_paths_are_not_trigger_ids(client, auth):
    for path in ("stats", "templates", "event"):
        resp = await client.delete(f"/api/v1/triggers/{path}", headers=auth)
        error = await assert_error(resp, 405, "METHOD_NOT_ALLOWED")
        assert "DELETE" not in resp.headers["Allow"], (path, error)


async def test_list_is_ordered_by_priority_then_creation(client, auth, agent):
    late = await create(client, auth, agent, name="late", priority=5)
    first = await create(client, auth, agent, name="first", priority=-1)
    zero_a = await create(client, auth, agent, name="zero a")
    zero_b = await create(client, auth, agent, name="zero b")
    resp = await client.get(f"/api/v1/triggers?agentId={agent}", headers=auth)
    assert resp.status == 200
    listed = await resp.json()
    assert [t["id"] for t in listed] == [first["id"], zero_a["id"], zero_b["id"], late["id"]]
    assert all(set(t) == FIELDS for t in listed)


async def test_list_needs_agent_id_and_an_own_agent(client, auth):
    resp = await client.get("/api/v1/triggers", headers=auth)
    await assert_error(resp, 400, "VALIDATION_ERROR", "agentId")
    resp = await client.get("/api/v1/triggers?agentId=agt_nope", headers=auth)
    await assert_error(resp, 404, "NOT_FOUND")
    resp = await client.post("/api/v1/triggers?agentId=agt_nope", json=body(), headers=auth)
    await assert_error(resp, 404, "NOT_FOUND")


async def test_put_is_partial_and_validates_the_merged_trigger(client, auth, agent):
    trigger = await create(client, auth, agent, description="old")
    url = f"/api/v1/triggers/{trigger['id']}"
    resp = await client.put(url, json={"name": "Renamed", "priority": 3}, headers=auth)
    assert resp.status == 200
    updated = await resp.json()
    assert updated["name"] == "Renamed" and updated["priority"] == 3
    assert updated["conditions"] == trigger["conditions"]
    assert updated["description"] == "old"
    assert updated["updatedAt"] >= trigger["updatedAt"]
    # Changing the type alone leaves conditions that do not fit it.
    resp = await client.put(url, json={"triggerType": "scroll_depth"}, headers=auth)
    await assert_error(resp, 400, "VALIDATION_ERROR", "conditions")
    resp = await client.put(
        url, json={"triggerType": "scroll_depth", "conditions": {"scrollDepth": 50}}, headers=auth
    )
    assert resp.status == 200
    assert (await resp.json())["conditions"] == {"scrollDepth": 50}
    resp = await client.put(url, json={"description": None}, headers=auth)
    assert (await resp.json())["description"] is None
    resp = await client.put(url, json={"name": None}, headers=auth)
    await assert_error(resp, 400, "VALIDATION_ERROR", "name")
    resp = await client.put(url, json={"agentId": agent}, headers=auth)
    await assert_error(resp, 400, "VALIDATION_ERROR", "agentId")
    resp = await client.get(url, headers=auth)
    assert (await resp.json())["triggerType"] == "scroll_depth"


async def test_toggle_inverts_and_delete_answers_success(client, auth, agent):
    trigger = await create(client, auth, agent)
    url = f"/api/v1/triggers/{trigger['id']}"
    resp = await client.post(f"{url}/toggle", headers=auth)
    assert resp.status == 200
    assert (await resp.json())["isEnabled"] is False
    resp = await client.post(f"{url}/toggle", headers=auth)
    assert (await resp.json())["isEnabled"] is True
    resp = await client.put(url, json={"isEnabled": False}, headers=auth)
    assert (await resp.json())["isEnabled"] is False
    resp = await client.delete(url, headers=auth)
    assert resp.status == 200
    assert await resp.json() == {"success": True}
    for method in ("get", "delete"):
        await assert_error(await getattr(client, method)(url, headers=auth), 404, "NOT_FOUND")
    resp = await client.post(f"{url}/toggle", headers=auth)
    await assert_error(resp, 404, "NOT_FOUND")
    resp = await client.put(url, json={"name": "x"}, headers=auth)
    await assert_error(resp, 404, "NOT_FOUND")


async def test_other_teams_triggers_are_not_found(client, auth, agent):
    trigger = await create(client, auth, agent)
    other = bearer(await new_api_key(client, "other@example.com"))
    url = f"/api/v1/triggers/{trigger['id']}"
    await assert_error(await client.get(url, headers=other), 404, "NOT_FOUND")
    await assert_error(await client.put(url, json={"name": "x"}, headers=other), 404, "NOT_FOUND")
    await assert_error(await client.delete(url, headers=other), 404, "NOT_FOUND")
    await assert_error(await client.post(f"{url}/toggle", headers=other), 404, "NOT_FOUND")
    resp = await client.get(f"/api/v1/triggers?agentId={agent}", headers=other)
    await assert_error(resp, 404, "NOT_FOUND")
    resp = await client.get(f"/api/v1/triggers/stats?agentId={agent}", headers=other)
    await assert_error(resp, 404, "NOT_FOUND")
    resp = await client.post(f"/api/v1/triggers?agentId={agent}", json=body(), headers=other)
    await assert_error(resp, 404, "NOT_FOUND")
    assert (await client.get(url, headers=auth)).status == 200


async def test_management_needs_a_key(client, agent):
    resp = await client.get(f"/api/v1/triggers?agentId={agent}")
    await assert_error(resp, 401, "UNAUTHORIZED")
    resp = await client.get("/api/v1/triggers/templates")
    await assert_error(resp, 401, "UNAUTHORIZED")


@pytest.mark.parametrize(
    ("over", "message"),
    [
        ({"conditions": {"timeOnPage": -1}}, "conditions.timeOnPage: must be a number"),
        ({"conditions": {"timeOnPage": "30"}}, "conditions.timeOnPage"),
        ({"conditions": {"timeOnPage": True}}, "conditions.timeOnPage"),
        ({"conditions": {}}, "conditions.timeOnPage: is required"),
        ({"conditions": {"timeOnPage": 3, "page": "/"}}, "conditions.page: not a field"),
        (
            {"triggerType": "scroll_depth", "conditions": {"scrollDepth": 101}},
            "conditions.scrollDepth: must be a number from 0 to 100",
        ),
        ({"triggerType": "scroll_depth", "conditions": {"scrollDepth": -0.5}}, "scrollDepth"),
        ({"triggerType": "exit_intent", "conditions": {"delay": 1}}, "conditions.delay"),
        ({"triggerType": "page_view", "conditions": {"page": "blog"}}, "must start with /"),
        ({"triggerType": "page_view", "conditions": {"page": "/blog*"}}, "whole segments"),
        ({"triggerType": "page_view", "conditions": {"page": 3}}, "conditions.page"),
        ({"triggerType": "page_view", "conditions": {}}, "conditions.page: is required"),
        ({"triggerType": "custom_event", "conditions": {}}, "conditions.event: is required"),
        ({"triggerType": "custom_event", "conditions": {"event": " "}}, "conditions.event"),
        (
            {"triggerType": "custom_event", "conditions": {"event": "x", "eventData": [1]}},
            "conditions.eventData: must be an object",
        ),
        (
            {
                "triggerType": "custom_event",
                "conditions": {"event": "x", "eventData": {"total": {"$regex": "a"}}},
            },
            "conditions.eventData: total.$regex: unknown operator",
        ),
        (
            {
                "triggerType": "custom_event",
                "conditions": {"event": "x", "eventData": {"total": {"$gt": "5"}}},
            },
            "total.$gt: must be a number",
        ),
        ({"triggerType": "sometimes"}, "triggerType"),
        ({"actionType": "explode"}, "actionType"),
        ({"actionConfig": {"message": 5}}, "actionConfig.message"),
        ({"actionConfig": {"text": "hi"}}, "actionConfig.text: not a field of open_chat"),
        ({"actionType": "show_bubble", "actionConfig": {}}, "actionConfig.message: is required"),
        ({"actionType": "show_bubble", "actionConfig": {"message": ""}}, "actionConfig.message"),
        (
            {"actionType": "show_bubble", "actionConfig": {"message": "Hi", "duration": 0}},
            "actionConfig.duration",
        ),
        (
            {"actionType": "show_bubble", "actionConfig": {"message": "Hi", "duration": "5"}},
            "actionConfig.duration",
        ),
        ({"actionType": "show_form", "actionConfig": {}}, "actionConfig.toolId: is required"),
        (
            {"actionType": "show_form", "actionConfig": {"toolId": "tool_nope"}},
            "actionConfig.toolId: must be an enabled form tool",
        ),
        ({"name": ""}, "name"),
        ({"conditions": [1]}, "conditions"),
        ({"priority": 1.5}, "priority"),
        ({"triggerOnce": "yes"}, "triggerOnce"),
        ({"colour": "red"}, "colour: is not a known field"),
    ],
)
async def test_validation_messages(client, auth, agent, over, message):
    resp = await client.post(f"/api/v1/triggers?agentId={agent}", json=body(**over), headers=auth)
    await assert_error(resp, 400, "VALIDATION_ERROR", message)
    resp = await client.get(f"/api/v1/triggers?agentId={agent}", headers=auth)
    assert await resp.json() == []


@pytest.mark.parametrize(
    ("trigger_type", "conditions"),
    [
        ("time_on_page", {"timeOnPage": 0}),
        ("time_on_page", {"timeOnPage": 12.5}),
        ("scroll_depth", {"scrollDepth": 0}),
        ("scroll_depth", {"scrollDepth": 100}),
        ("exit_intent", {}),
        ("page_view", {"page": "/"}),
        ("page_view", {"page": "/docs/**/api"}),
        ("page_view", {"page": "/blog/*"}),
        ("custom_event", {"event": "signup"}),
        (
            "custom_event",
            {
                "event": "cart",
                "eventData": {
                    "total": {"$gt": 1, "$gte": 1, "$lt": 9, "$lte": 9},
                    "plan": {"$in": ["pro"], "$nin": ["free"], "$eq": "pro", "$ne": "x"},
                    "coupon": {"$exists": False},
                    "country": "FR",
                },
            },
        ),
    ],
)
async def test_valid_conditions_are_stored_as_given(client, auth, agent, trigger_type, conditions):
    trigger = await create(client, auth, agent, triggerType=trigger_type, conditions=conditions)
    assert trigger["triggerType"] == trigger_type
    assert trigger["conditions"] == conditions


async def test_show_form_needs_an_enabled_form_tool_of_the_same_agent(client, auth, agent):
    form = await insert_tool(client, agent)
    mock = await insert_tool(client, agent, execution_type="mock")
    disabled = await insert_tool(client, agent, enabled=False)
    other_agent = await new_agent(client, auth, "Other")
    foreign = await insert_tool(client, other_agent)
    for tool_id in (mock, disabled, foreign):
        resp = await client.post(
            f"/api/v1/triggers?agentId={agent}",
            json=body(actionType="show_form", actionConfig={"toolId": tool_id}),
            headers=auth,
        )
        await assert_error(resp, 400, "VALIDATION_ERROR", "actionConfig.toolId")
    trigger = await create(
        client, auth, agent, actionType="show_form", actionConfig={"toolId": form}
    )
    assert trigger["actionConfig"] == {"toolId": form}
    # Switching the action to a bad tool is refused; a rename is not blocked by it.
    url = f"/api/v1/triggers/{trigger['id']}"
    resp = await client.put(url, json={"actionConfig": {"toolId": mock}}, headers=auth)
    await assert_error(resp, 400, "VALIDATION_ERROR", "actionConfig.toolId")
    resp = await client.put(url, json={"actionType": "show_bubble"}, headers=auth)
    await assert_error(resp, 400, "VALIDATION_ERROR", "actionConfig")
    resp = await client.put(
        url, json={"actionType": "show_bubble", "actionConfig": {"message": "Hey"}}, headers=auth
    )
    assert resp.status == 200
    assert (await resp.json())["actionConfig"] == {"message": "Hey"}


async def test_templates_cover_every_type_and_action_and_are_valid(client, auth, agent):
    resp = await client.get("/api/v1/triggers/templates", headers=auth)
    assert resp.status == 200
    templates = await resp.json()
    keys_ = {"id", "name", "description", "triggerType", "conditions", "actionType", "actionConfig"}
    assert all(set(t) == keys_ for t in templates)
    assert len({t["id"] for t in templates}) == len(templates)
    assert {t["triggerType"] for t in templates} == {
        "time_on_page",
        "scroll_depth",
        "exit_intent",
        "page_view",
        "custom_event",
    }
    assert {t["actionType"] for t in templates} == {"open_chat", "show_form", "show_bubble"}
    form = await insert_tool(client, agent)
    for template in templates:
        config = template["actionConfig"]
        if template["actionType"] == "show_form":
            config = {**config, "toolId": form}
        fields = {k: v for k, v in template.items() if k != "id"}
        created = await create(client, auth, agent, **{**fields, "actionConfig": config})
        assert created["conditions"] == template["conditions"]


async def test_stats_list_every_trigger_with_zero_counts(client, auth, agent):
    a = await create(client, auth, agent, name="a")
    b = await create(client, auth, agent, name="b")
    resp = await client.get(f"/api/v1/triggers/stats?agentId={agent}", headers=auth)
    assert resp.status == 200
    zero = {"firedCount": 0, "convertedCount": 0}
    assert await resp.json() == {a["id"]: zero, b["id"]: zero}
    resp = await client.get("/api/v1/triggers/stats", headers=auth)
    await assert_error(resp, 400, "VALIDATION_ERROR", "agentId")


async def test_widget_feed_is_public_ordered_and_enabled_only(client, auth, agent):
    low = await create(client, auth, agent, name="low", priority=1, triggerOnce=False)
    high = await create(client, auth, agent, name="high", priority=-5)
    off = await create(client, auth, agent, name="off", isEnabled=False)
    form = await insert_tool(client, agent)
    shown = await create(
        client,
        auth,
        agent,
        name="form",
        priority=9,
        actionType="show_form",
        actionConfig={"toolId": form},
    )
    url = f"/api/v1/triggers/widget/{agent}"
    resp = await client.get(url, headers={"Origin": "https://shop.example"})
    assert resp.status == 200
    assert resp.headers["Access-Control-Allow-Origin"] == "*"
    assert resp.headers["Cache-Control"].startswith("public, max-age=")
    feed = await resp.json()
    assert [t["id"] for t in feed] == [high["id"], low["id"], shown["id"]]
    assert all(set(t) == WIDGET_FIELDS for t in feed)
    assert feed[1]["triggerOnce"] is False
    assert off["id"] not in {t["id"] for t in feed}
    # A form tool disabled later takes its show_form trigger out of the feed.
    async with client.app[app_keys.db_key].write() as conn:
        await conn.execute("UPDATE tools SET is_enabled = 0 WHERE id = ?", (form,))
    feed = await (await client.get(url)).json()
    assert [t["id"] for t in feed] == [high["id"], low["id"]]


async def test_widget_feed_etag_and_304(client, auth, agent):
    trigger = await create(client, auth, agent)
    url = f"/api/v1/triggers/widget/{agent}"
    first = await client.get(url)
    etag = first.headers["ETag"]
    assert re.match(r'^"[0-9a-f]{32}"$', etag)
    again = await client.get(url, headers={"If-None-Match": etag})
    assert again.status == 304
    assert again.headers["ETag"] == etag
    assert await again.read() == b""
    weak = await client.get(url, headers={"If-None-Match": f'"x", W/{etag}'})
    assert weak.status == 304
    stale = await client.get(url, headers={"If-None-Match": '"not-it"'})
    assert stale.status == 200
    await client.put(f"/api/v1/triggers/{trigger['id']}", json={"name": "new"}, headers=auth)
    changed = await client.get(url, headers={"If-None-Match": etag})
    assert changed.status == 200
    assert changed.headers["ETag"] != etag
    assert (await changed.json())[0]["name"] == "new"


async def test_widget_feed_unknown_agent_and_empty(client, auth, agent):
    resp = await client.get("/api/v1/triggers/widget/agt_unknown")
    await assert_error(resp, 404, "NOT_FOUND", "Agent")
    resp = await client.get(f"/api/v1/triggers/widget/{agent}")
    assert resp.status == 200
    assert await resp.json() == []


async def test_cors_preflight_for_widget_endpoints(client):
    for path in ("/api/v1/triggers/event", "/api/v1/triggers/widget/agt_x"):
        resp = await client.options(
            path,
            headers={"Origin": "https://shop.example", "Access-Control-Request-Method": "POST"},
        )
        assert resp.status == 204
        assert resp.headers["Access-Control-Allow-Origin"] == "*"


async def test_deleting_the_agent_deletes_its_triggers(client, auth, agent):
    trigger = await create(client, auth, agent)
    resp = await client.delete(f"/api/v1/agents/{agent}", headers=auth)
    assert resp.status == 200
    resp = await client.get(f"/api/v1/triggers/{trigger['id']}", headers=auth)
    await assert_error(resp, 404, "NOT_FOUND")
