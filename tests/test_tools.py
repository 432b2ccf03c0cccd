"""Tool API: CRUD, validation, plan limits, the form spelling, and running mock/http tools."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest

from agentsvc.api import app_keys
from agentsvc.store import tools as tools_store
from tests.support.accounts import bearer, new_api_key
from tests.support.errors import assert_error
from tests.support.fakes.http_receiver import HttpReceiver

SCHEMA = {
    "type": "object",
    "properties": {"query": {"type": "string", "description": "What to look for"}},
    "required": ["query"],
}


async def make_agent(client, auth, name: str = "Shop") -> str:
    resp = await client.post("/api/v1/agents", json={"name": name}, headers=auth)
    assert resp.status == 201, await resp.text()
    return (await resp.json())["data"]["id"]


def mock_tool(agent_id: str, **over: Any) -> dict:
    return {
        "agentId": agent_id,
        "name": "lookup",
        "description": "Look things up",
        "executionType": "mock",
        "inputSchema": SCHEMA,
        "mockResponse": '{"found": true}',
        **over,
    }


def form_tool(agent_id: str, **over: Any) -> dict:
    return {
        "agentId": agent_id,
        "name": "contact",
        "description": "Collect contact details",
        "executionType": "form",
        "inputSchema": {"type": "object", "properties": {}},
        "formSchema": {
            "fields": [
                {
                    "name": "email",
                    "label": "E-mail",
                    "type": "email",
                    "validation": {"required": {"value": True, "message": "Needed"}},
                },
                {
                    "name": "topic",
                    "label": "Topic",
                    "type": "select",
                    "options": [{"label": "Sales", "value": "sales"}],
                },
            ],
            "submitLabel": "Send",
            "successMessage": "Thanks!",
        },
        "formExecutionMode": "webhook",
        "formWebhookUrl": "https://hooks.example.com/in",
        **over,
    }


async def post_tool(client, auth, body: dict):
    return await client.post("/api/v1/tools", json=body, headers=auth)


async def created(client, auth, body: dict) -> dict:
    resp = await post_tool(client, auth, body)
    assert resp.status == 201, await resp.text()
    return await resp.json()


# ── CRUD ────────────────────────────────────────────────────────────────────────────────


async def test_create_get_list_update_delete(client, auth):
    agent_id = await make_agent(client, auth)
    tool = await created(client, auth, mock_tool(agent_id))
    assert tool["id"].startswith("tool_")
    assert tool["agentId"] == agent_id
    assert tool["name"] == "lookup"
    assert tool["executionType"] == "mock"
    assert tool["isEnabled"] is True
    assert tool["inputSchema"] == SCHEMA
    assert tool["mockResponse"] == '{"found": true}'
    assert tool["httpUrl"] is None and tool["formSchema"] is None
    assert tool["formWebhookSecret"] is None
    assert tool["createdAt"].endswith("Z") and tool["updatedAt"] == tool["createdAt"]
    assert "data" not in tool  # bare, no envelope

    resp = await client.get(f"/api/v1/tools/{tool['id']}", headers=auth)
    assert resp.status == 200
    assert await resp.json() == tool

    resp = await client.get("/api/v1/tools", params={"agentId": agent_id}, headers=auth)
    assert resp.status == 200
    assert await resp.json() == [tool]

    resp = await client.put(
        f"/api/v1/tools/{tool['id']}",
        json={"description": "Find products", "isEnabled": False},
        headers=auth,
    )
    assert resp.status == 200, await resp.text()
    updated = await resp.json()
    assert updated["description"] == "Find products"
    assert updated["isEnabled"] is False
    assert updated["name"] == "lookup" and updated["mockResponse"] == tool["mockResponse"]
    assert updated["updatedAt"] >= tool["updatedAt"]
    resp = await client.get(f"/api/v1/tools/{tool['id']}", headers=auth)
    assert await resp.json() == updated

    resp = await client.delete(f"/api/v1/tools/{tool['id']}", headers=auth)
    assert resp.status == 200
    assert await resp.json() == {"success": True}
    resp = await client.get(f"/api/v1/tools/{tool['id']}", headers=auth)
    await assert_error(resp, 404, "NOT_FOUND", "Tool not found")
    resp = await client.delete(f"/api/v1/tools/{tool['id']}", headers=auth)
    await assert_error(resp, 404, "NOT_FOUND")


async def test_list_needs_agent_id_and_own_agent(client, auth):
    resp = await client.get("/api/v1/tools", headers=auth)
    await assert_error(resp, 400, "VALIDATION_ERROR", "agentId")
    resp = await client.get("/api/v1/tools", params={"agentId": "agt_nope"}, headers=auth)
    await assert_error(resp, 404, "NOT_FOUND", "Agent not found")
    resp = await client.get("/api/v1/tools/limits", headers=auth)
    await assert_error(resp, 400, "VALIDATION_ERROR", "agentId")
    resp = await client.get("/api/v1/tools")
    await assert_error(resp, 401, "UNAUTHORIZED")


async def test_other_team_cannot_see_or_touch_tools(client, auth):
    agent_id = await make_agent(client, auth)
    tool = await created(client, auth, mock_tool(agent_id))
    other = bearer(await new_api_key(client, "other@example.com"))
    for method, path in [
        ("GET", f"/api/v1/tools/{tool['id']}"),
        ("PUT", f"/api/v1/tools/{tool['id']}"),
        ("DELETE", f"/api/v1/tools/{tool['id']}"),
    ]:
        resp = await client.request(method, path, json={"description": "x"}, headers=other)
        await assert_error(resp, 404, "NOT_FOUND")
    resp = await client.get("/api/v1/tools", params={"agentId": agent_id}, headers=other)
    await assert_error(resp, 404, "NOT_FOUND")
    resp = await post_tool(client, other, mock_tool(agent_id, name="stolen"))
    await assert_error(resp, 404, "NOT_FOUND", "Agent not found")
    resp = await client.get(f"/api/v1/tools/{tool['id']}", headers=auth)
    assert (await resp.json())["description"] == "Look things up"


async def test_duplicate_name_per_agent(client, auth):
    agent_id = await make_agent(client, auth)
    other_agent = await make_agent(client, auth, "Other")
    await created(client, auth, mock_tool(agent_id))
    resp = await post_tool(client, auth, mock_tool(agent_id))
    await assert_error(resp, 400, "DUPLICATE_NAME", "lookup")
    await created(client, auth, mock_tool(other_agent))  # another agent may reuse it
    second = await created(client, auth, mock_tool(agent_id, name="second"))
    resp = await client.put(f"/api/v1/tools/{second['id']}", json={"name": "lookup"}, headers=auth)
    await assert_error(resp, 400, "DUPLICATE_NAME")
    resp = await client.get(f"/api/v1/tools/{second['id']}", headers=auth)
    assert (await resp.json())["name"] == "second"


async def test_deleting_agent_deletes_its_tools(client, auth):
    agent_id = await make_agent(client, auth)
    tool = await created(client, auth, mock_tool(agent_id))
    resp = await client.delete(f"/api/v1/agents/{agent_id}", headers=auth)
    assert resp.status == 200
    resp = await client.get(f"/api/v1/tools/{tool['id']}", headers=auth)
    await assert_error(resp, 404, "NOT_FOUND")
    assert await tools_store.get_public(client.app[app_keys.db_key].reader, tool["id"]) is None


# ── validation ──────────────────────────────────────────────────────────────────────────


@pytest.mark.parametrize(
    ("over", "message"),
    [
        ({"name": "Lookup"}, "name: must start with a lowercase letter"),
        ({"name": "9lives"}, "name:"),
        ({"name": "has-dash"}, "name:"),
        ({"name": "a" * 65}, "name:"),
        ({"description": "  "}, "description: must be a non-empty string"),
        ({"executionType": "shell"}, "executionType: must be mock, http, form or mcp"),
        ({"inputSchema": {"type": "array"}}, 'inputSchema.type: must be "object"'),
        (
            {"inputSchema": {"type": "object", "properties": {"q": {"type": "strin"}}}},
            "inputSchema.properties.q.type: must be a JSON Schema type (array, boolean, ",
        ),
        ({"inputSchema": {"type": "object", "required": ["zzz"]}}, "inputSchema.required"),
        (
            {"inputSchema": {"type": "object", "required": "q"}},
            "inputSchema.required: must be a list",
        ),
        (
            {"inputSchema": {"type": "object", "properties": {"q": {"minLength": -1}}}},
            "inputSchema.properties.q.minLength: must be at least 0",
        ),
        ({"inputSchema": {"type": 5}}, "inputSchema"),
        ({"mockResponse": None}, "mockResponse: may not be null"),
        ({"httpUrl": "https://example.com"}, "httpUrl: is only for tools with executionType"),
        ({"isEnabled": "yes"}, "isEnabled"),
        ({"displayConfig": {"type": "hologram"}}, "displayConfig.type: must be one of"),
        ({"displayConfig": {"type": "table", "colour": "red"}}, "displayConfig.colour"),
        ({"displayConfig": {"options": {"showPrice": "yes"}}}, "displayConfig.options"),
        ({"unknownField": 1}, "unknownField: is not a known field"),
    ],
)
async def test_create_refuses_bad_fields(client, auth, over, message):
    agent_id = await make_agent(client, auth)
    body = mock_tool(agent_id, **over)
    resp = await post_tool(client, auth, body)
    await assert_error(resp, 400, "VALIDATION_ERROR", message)
    resp = await client.get("/api/v1/tools", params={"agentId": agent_id}, headers=auth)
    assert await resp.json() == []


async def test_required_fields_and_malformed_body(client, auth):
    agent_id = await make_agent(client, auth)
    for field in ("agentId", "name", "description"):
        body = mock_tool(agent_id)
        body.pop(field)
        resp = await post_tool(client, auth, body)
        await assert_error(resp, 400, "VALIDATION_ERROR", f"{field}: is required")
    body = mock_tool(agent_id)
    body.pop("inputSchema")
    await assert_error(await post_tool(client, auth, body), 400, "VALIDATION_ERROR", "inputSchema")
    body = mock_tool(agent_id)
    body.pop("mockResponse")
    resp = await post_tool(client, auth, body)
    await assert_error(resp, 400, "VALIDATION_ERROR", "mockResponse: is required for a mock tool")
    resp = await client.post("/api/v1/tools", data=b"{nope", headers=auth)
    await assert_error(resp, 400, "VALIDATION_ERROR", "malformed JSON")


@pytest.mark.parametrize(
    ("over", "message"),
    [
        ({"httpUrl": "ftp://example.com/x"}, "httpUrl: must be an http or https URL"),
        ({"httpUrl": "not a url"}, "httpUrl"),
        ({"httpUrl": "https://example.com/{nope}"}, "placeholder {nope} is not a property"),
        ({"httpMethod": "PATCH"}, "httpMethod: must be one of GET, POST, PUT, DELETE"),
        ({"httpHeaders": {"X-A": "a\r\nInjected: 1"}}, "httpHeaders"),
        ({"httpHeaders": {"Bad Name": "a"}}, "httpHeaders"),
        ({"mockResponse": "x"}, 'mockResponse: is only for tools with executionType "mock"'),
    ],
)
async def test_http_tool_validation(client, auth, over, message):
    agent_id = await make_agent(client, auth)
    body = {
        "agentId": agent_id,
        "name": "fetch",
        "description": "Fetch",
        "executionType": "http",
        "inputSchema": SCHEMA,
        "httpUrl": "https://api.example.com/search/{query}",
        **over,
    }
    await assert_error(await post_tool(client, auth, body), 400, "VALIDATION_ERROR", message)


async def test_http_tool_defaults_and_fields(client, auth):
    agent_id = await make_agent(client, auth)
    tool = await created(
        client,
        auth,
        {
            "agentId": agent_id,
            "name": "fetch",
            "description": "Fetch",
            "executionType": "http",
            "inputSchema": SCHEMA,
            "httpUrl": "https://api.example.com/search/{query}?key={{API_KEY}}",
            "httpHeaders": {"Authorization": "Bearer {{API_KEY}}"},
            "displayConfig": {
                "type": "product_card",
                "fieldMappings": {"title": "name", "price": "price"},
                "options": {"showPrice": True},
            },
        },
    )
    assert tool["httpMethod"] == "GET"
    assert tool["httpHeaders"] == {"Authorization": "Bearer {{API_KEY}}"}
    assert tool["displayConfig"]["fieldMappings"] == {"title": "name", "price": "price"}
    resp = await client.put(
        f"/api/v1/tools/{tool['id']}",
        json={"httpMethod": "post", "displayConfig": None},
        headers=auth,
    )
    updated = await resp.json()
    assert updated["httpMethod"] == "POST" and updated["displayConfig"] is None


@pytest.mark.parametrize(
    ("over", "message"),
    [
        ({"formSchema": {"fields": []}}, "formSchema.fields: must be a list of 1 to 50"),
        ({"formSchema": None}, "formSchema: may not be null"),
        (
            {"formSchema": {"fields": [{"name": "a", "label": "A", "type": "colour"}]}},
            "formSchema.fields.0.type: must be one of text, email",
        ),
        (
            {"formSchema": {"fields": [{"name": "a", "label": "A", "type": "select"}]}},
            "formSchema.fields.0.options: a select field needs a list of options",
        ),
        (
            {
                "formSchema": {
                    "fields": [
                        {"name": "a", "label": "A", "type": "multiselect", "options": [{"x": 1}]}
                    ]
                }
            },
            "formSchema.fields.0.options.0: must be {label, value}",
        ),
        (
            {
                "formSchema": {
                    "fields": [
                        {"name": "a", "label": "A", "type": "text"},
                        {"name": "a", "label": "B", "type": "text"},
                    ]
                }
            },
            "formSchema.fields.1.name",
        ),
        (
            {
                "formSchema": {
                    "fields": [
                        {"name": "a", "label": "A", "type": "text", "validation": {"big": 1}}
                    ]
                }
            },
            "formSchema.fields.0.validation.big: is not a rule",
        ),
        ({"formExecutionMode": "carrier_pigeon"}, "formExecutionMode: must be one of"),
        ({"formWebhookUrl": None}, "formWebhookUrl: is required when formExecutionMode is"),
        ({"formWebhookUrl": "javascript:alert(1)"}, "formWebhookUrl: must be an http or https"),
        ({"formExecutionMode": "both"}, "formClientHandler: is required"),
        ({"formPostActions": [{"type": "fax"}]}, "formPostActions.0.type: must be webhook"),
        ({"formPostActions": [{"type": "webhook"}]}, "formPostActions.0.webhookUrl"),
        (
            {"formPostActions": [{"type": "webhook", "url": "https://x.example", "foo": 1}]},
            "formPostActions.0.foo: is not a field of a webhook action",
        ),
        (
            {"formPostActions": [{"type": "team_chat", "webhookUrl": "https://x.example"}]},
            "formPostActions.0.messageTemplate",
        ),
        (
            {"formPostActions": [{"type": "email", "recipientIds": []}]},
            "formPostActions.0.recipientIds: must be a non-empty list",
        ),
        ({"httpMethod": "GET"}, 'httpMethod: is only for tools with executionType "http"'),
    ],
)
async def test_form_tool_validation(client, auth, over, message):
    agent_id = await make_agent(client, auth)
    resp = await post_tool(client, auth, form_tool(agent_id, **over))
    await assert_error(resp, 400, "VALIDATION_ERROR", message)


async def test_form_tool_with_post_actions_and_webhook_secret(client, auth):
    agent_id = await make_agent(client, auth)
    actions = [
        {
            "type": "webhook",
            "url": "https://crm.example.com/leads",
            "headers": {"X-Token": "{{CRM_TOKEN}}"},
            "payload": {"email": "{{email}}", "tool": "{{_toolName}}"},
        },
        {"type": "webhook", "webhookUrl": "https://other.example.com/in"},
        {"type": "team_chat", "webhookUrl": "https://chat.example.com/hook", "message": "New"},
        {
            "type": "team_chat",
            "webhookUrl": "https://chat.example.com/hook",
            "messageTemplate": "Lead {{email}}",
        },
        {"type": "email", "recipientIds": ["usr_1"], "subject": "New lead"},
    ]
    tool = await created(
        client,
        auth,
        form_tool(
            agent_id,
            formExecutionMode="both",
            formClientHandler="saveLead",
            formPostActions=actions,
            displayConfig={"type": "form"},
        ),
    )
    assert tool["executionType"] == "form"
    assert tool["formPostActions"] == actions
    assert tool["formExecutionMode"] == "both" and tool["formClientHandler"] == "saveLead"
    assert tool["formSchema"]["fields"][0]["validation"]["required"] == {
        "value": True,
        "message": "Needed",
    }
    secret = tool["formWebhookSecret"]
    assert secret.startswith("whsec_")
    assert len(base64.b64decode(secret.removeprefix("whsec_"))) >= 24
    resp = await client.get(f"/api/v1/tools/{tool['id']}", headers=auth)
    assert (await resp.json())["formWebhookSecret"] == secret
    # Stored sealed, never in the clear.
    stored = await tools_store.get_public(client.app[app_keys.db_key].reader, tool["id"])
    assert stored.form_webhook_secret and secret not in stored.form_webhook_secret
    # An update keeps the secret.
    resp = await client.put(f"/api/v1/tools/{tool['id']}", json={"name": "lead"}, headers=auth)
    assert (await resp.json())["formWebhookSecret"] == secret


async def test_form_spelling_type_and_form_fields_schema(client, auth):
    agent_id = await make_agent(client, auth)
    fields = [{"name": "email", "label": "E-mail", "type": "email"}]
    tool = await created(
        client,
        auth,
        {
            "agentId": agent_id,
            "name": "signup",
            "description": "Sign up",
            "type": "form",
            "formFieldsSchema": fields,
            "formExecutionMode": "client",
            "formClientHandler": "onSignup",
        },
    )
    assert tool["executionType"] == "form"
    assert tool["formSchema"] == {"fields": fields}
    assert "type" not in tool and "formFieldsSchema" not in tool
    assert tool["inputSchema"] == {"type": "object", "properties": {}}
    assert tool["formWebhookSecret"].startswith("whsec_")

    new_fields = [{"name": "phone", "label": "Phone", "type": "tel"}]
    resp = await client.put(
        f"/api/v1/tools/{tool['id']}", json={"formFieldsSchema": new_fields}, headers=auth
    )
    assert (await resp.json())["formSchema"] == {"fields": new_fields}

    body = {"agentId": agent_id, "name": "x", "description": "x", "type": "http"}
    await assert_error(await post_tool(client, auth, body), 400, "VALIDATION_ERROR", "type:")
    body = {**form_tool(agent_id), "formFieldsSchema": fields}
    resp = await post_tool(client, auth, body)
    await assert_error(resp, 400, "VALIDATION_ERROR", "formFieldsSchema")


async def test_switching_execution_type_drops_old_fields(client, auth):
    agent_id = await make_agent(client, auth)
    tool = await created(client, auth, form_tool(agent_id))
    resp = await client.put(
        f"/api/v1/tools/{tool['id']}",
        json={"executionType": "mock", "mockResponse": "hello"},
        headers=auth,
    )
    assert resp.status == 200, await resp.text()
    mock = await resp.json()
    assert mock["executionType"] == "mock" and mock["mockResponse"] == "hello"
    assert mock["formSchema"] is None and mock["formWebhookUrl"] is None
    assert mock["formWebhookSecret"] is None
    # Switching without the new type's required field is refused and changes nothing.
    resp = await client.put(
        f"/api/v1/tools/{tool['id']}", json={"executionType": "http"}, headers=auth
    )
    await assert_error(resp, 400, "VALIDATION_ERROR", "httpUrl")
    resp = await client.get(f"/api/v1/tools/{tool['id']}", headers=auth)
    assert (await resp.json()) == mock


async def test_members_manage_tools(client, auth):
    # A key of the same team with the member role acts on the team's tools.
    from agentsvc.services.team import accounts

    agent_id = await make_agent(client, auth)
    db = client.app[app_keys.db_key]
    owner_key = auth["Authorization"].removeprefix("Bearer ")
    principal = await client.app[app_keys.key_resolver_key].resolve(owner_key)
    member, _ = await accounts.ensure_user_with_team(db, email="m@example.com", name="", plan="pro")
    async with db.write() as conn:
        await conn.execute(
            "INSERT INTO memberships (id, team_id, user_id, role, created_at)"
            " VALUES ('mem_t', ?, ?, 'member', '2026-01-01T00:00:00.000Z')",
            (principal.team_id, member.id),
        )
        key = await accounts.create_api_key(
            conn, team_id=principal.team_id, user_id=member.id, name="m"
        )
    tool = await created(client, bearer(key.key), mock_tool(agent_id))
    resp = await client.delete(f"/api/v1/tools/{tool['id']}", headers=bearer(key.key))
    assert resp.status == 200


# ── plan limits ─────────────────────────────────────────────────────────────────────────


async def test_free_plan_allows_three_tools_per_agent(client):
    free = bearer(await new_api_key(client, "free@example.com", plan="free"))
    agent_id = await make_agent(client, free)
    resp = await client.get("/api/v1/tools/limits", params={"agentId": agent_id}, headers=free)
    assert resp.status == 200
    assert await resp.json() == {"current": 0, "limit": 3, "planId": "free", "canCreate": True}
    for i in range(3):
        await created(client, free, mock_tool(agent_id, name=f"t{i}"))
    resp = await post_tool(client, free, mock_tool(agent_id, name="t3"))
    await assert_error(resp, 403, "TOOL_LIMIT_REACHED", "free plan allows 3 tools per agent")
    resp = await client.get("/api/v1/tools/limits", params={"agentId": agent_id}, headers=free)
    assert await resp.json() == {"current": 3, "limit": 3, "planId": "free", "canCreate": False}
    resp = await client.get("/api/v1/tools", params={"agentId": agent_id}, headers=free)
    assert len(await resp.json()) == 3
    # The limit is per agent: another agent starts again.
    other = await make_agent(client, free, "Other")
    await created(client, free, mock_tool(other))


async def test_pro_plan_is_unlimited_and_limits_are_configurable(make_client):
    client = await make_client(plans={"pro": {"tool_limit": 1}})
    pro = bearer(await new_api_key(client, "pro@example.com", plan="pro"))
    agent_id = await make_agent(client, pro)
    await created(client, pro, mock_tool(agent_id))
    resp = await post_tool(client, pro, mock_tool(agent_id, name="two"))
    await assert_error(resp, 403, "TOOL_LIMIT_REACHED")


async def test_pro_limit_is_null(client, auth):
    agent_id = await make_agent(client, auth)
    resp = await client.get("/api/v1/tools/limits", params={"agentId": agent_id}, headers=auth)
    assert await resp.json() == {"current": 0, "limit": None, "planId": "pro", "canCreate": True}
    resp = await client.get("/api/v1/tools/limits", params={"agentId": "agt_x"}, headers=auth)
    await assert_error(resp, 404, "NOT_FOUND")


# ── running tools ───────────────────────────────────────────────────────────────────────


async def _stored(client, tool_json: dict):
    return await tools_store.get_public(client.app[app_keys.db_key].reader, tool_json["id"])


async def test_mock_tool_runs_and_validates_input(client, auth):
    agent_id = await make_agent(client, auth)
    runner = client.app[app_keys.tool_runner_key]
    tool = await _stored(client, await created(client, auth, mock_tool(agent_id)))
    result = await runner.run(tool, {"query": "shoes"})
    assert result.output == {"found": True} and result.is_error is False
    result = await runner.run(tool, {})
    assert result.is_error and "'query' is a required property" in result.output
    result = await runner.run(tool, {"query": 5})
    assert result.is_error and "query: 5 is not of type 'string'" in result.output
    text = await _stored(
        client, await created(client, auth, mock_tool(agent_id, name="t", mockResponse="hi"))
    )
    assert (await runner.run(text, {"query": "x"})).output == "hi"
    form = await _stored(client, await created(client, auth, form_tool(agent_id)))
    result = await runner.run(form, {})
    assert result.is_error and "form" in result.output


@pytest.fixture
async def receiver(aiohttp_server):
    fake = HttpReceiver()
    server = await aiohttp_server(fake.app)
    fake.base = str(server.make_url(""))  # type: ignore[attr-defined]
    return fake


async def _http_tool(client, auth, agent_id, url, **over) -> Any:
    body = {
        "agentId": agent_id,
        "name": over.pop("name", "fetch"),
        "description": "Fetch",
        "executionType": "http",
        "inputSchema": {
            "type": "object",
            "properties": {
                "id": {"type": "string"},
                "color": {"type": "string"},
                "sizes": {"type": "array", "items": {"type": "integer"}},
                "inStock": {"type": "boolean"},
            },
        },
        "httpUrl": url,
        **over,
    }
    return await _stored(client, await created(client, auth, body))


async def test_http_get_fills_placeholders_secrets_and_query(client, auth, receiver):
    agent_id = await make_agent(client, auth)
    resp = await client.put("/api/v1/secrets/API_KEY", json={"value": "s3cr/t"}, headers=auth)
    assert resp.status == 200
    tool = await _http_tool(
        client,
        auth,
        agent_id,
        receiver.base + "/items/{id}?key={{API_KEY}}",
        httpHeaders={"Authorization": "Bearer {{API_KEY}}", "X-Static": "1"},
    )
    result = await client.app[app_keys.tool_runner_key].run(
        tool, {"id": "a b/c", "color": "red", "sizes": [1, 2], "inStock": True}
    )
    assert result.is_error is False, result
    assert result.output["status"] == 200
    got = receiver.requests[-1]
    assert got.method == "GET"
    assert got.path == "/items/a%20b%2Fc"
    assert got.query == [
        ("key", "s3cr/t"),
        ("color", "red"),
        ("sizes", "1"),
        ("sizes", "2"),
        ("inStock", "true"),
    ]
    assert got.headers["Authorization"] == "Bearer s3cr/t"
    assert got.headers["X-Static"] == "1"
    assert result.output["body"]["method"] == "GET"


async def test_http_post_sends_rest_of_input_as_json(client, auth, receiver):
    agent_id = await make_agent(client, auth)
    tool = await _http_tool(
        client, auth, agent_id, receiver.base + "/orders/{id}", httpMethod="POST"
    )
    result = await client.app[app_keys.tool_runner_key].run(tool, {"id": "7", "color": "blue"})
    assert result.output["status"] == 200 and not result.is_error
    got = receiver.requests[-1]
    assert got.method == "POST" and got.path == "/orders/7"
    assert json.loads(got.body) == {"color": "blue"}
    assert got.headers["Content-Type"] == "application/json"


async def test_http_tool_errors(client, auth, receiver):
    agent_id = await make_agent(client, auth)
    runner = client.app[app_keys.tool_runner_key]
    failing = await _http_tool(client, auth, agent_id, receiver.base + "/status/503")
    result = await runner.run(failing, {})
    assert result.is_error and result.output == {"status": 503, "body": {"error": "nope"}}

    redirect = await _http_tool(client, auth, agent_id, receiver.base + "/redirect", name="r")
    result = await runner.run(redirect, {})
    assert result.is_error and result.output["status"] == 302
    assert [r.path for r in receiver.requests] == ["/status/503", "/redirect"]  # not followed

    text = await _http_tool(client, auth, agent_id, receiver.base + "/text", name="t")
    assert (await runner.run(text, {})).output == {"status": 200, "body": "plain words"}

    big = await _http_tool(client, auth, agent_id, receiver.base + "/big/3000000", name="big")
    result = await runner.run(big, {})
    assert result.output["truncated"] is True
    assert len(result.output["body"]) == 1024 * 1024

    missing = await _http_tool(
        client,
        auth,
        agent_id,
        receiver.base + "/x",
        name="m",
        httpHeaders={"X-Key": "{{NOT_SET}}"},
    )
    before = len(receiver.requests)
    result = await runner.run(missing, {})
    assert result.is_error and "NOT_SET" in result.output
    assert len(receiver.requests) == before  # nothing was sent

    needs_id = await _http_tool(client, auth, agent_id, receiver.base + "/i/{id}", name="n")
    result = await runner.run(needs_id, {})
    assert result.is_error and "id" in result.output
    assert len(receiver.requests) == before

    result = await runner.run(needs_id, {"sizes": "big"})
    assert result.is_error and "Invalid input" in result.output
    assert len(receiver.requests) == before


async def test_secrets_are_per_team(client, auth, receiver):
    agent_id = await make_agent(client, auth)
    other = bearer(await new_api_key(client, "other@example.com"))
    await client.put("/api/v1/secrets/TOKEN", json={"value": "other-team"}, headers=other)
    tool = await _http_tool(
        client, auth, agent_id, receiver.base + "/x", httpHeaders={"X-T": "{{TOKEN}}"}
    )
    result = await client.app[app_keys.tool_runner_key].run(tool, {})
    assert result.is_error and "TOKEN" in result.output
    assert receiver.requests == []
    await client.put("/api/v1/secrets/TOKEN", json={"value": "mine"}, headers=auth)
    result = await client.app[app_keys.tool_runner_key].run(tool, {})
    assert not result.is_error
    assert receiver.requests[-1].headers["X-T"] == "mine"
