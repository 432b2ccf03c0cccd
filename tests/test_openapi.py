"""The OpenAPI document covers every registered route and matches what handlers accept."""

from __future__ import annotations

import re

import pytest
from aiohttp import web
from pydantic import BaseModel

from agentsvc.api.openapi import _Schemas


async def test_every_route_is_documented(client):
    doc = await (await client.get("/api/v1/openapi.json")).json()
    assert doc["openapi"].startswith("3.1")
    documented = {(method.upper(), path) for path, ops in doc["paths"].items() for method in ops}
    registered = set()
    for route in client.app.router.routes():
        if route.method in ("HEAD", "*") or not isinstance(route.resource, web.Resource):
            continue
        info = route.resource.get_info()
        path = info.get("path") or info.get("formatter")
        registered.add((route.method, re.sub(r"{([^}:]+)(:[^}]*)?}", r"{\1}", path)))
    missing = registered - documented
    assert not missing, f"routes missing from the OpenAPI document: {sorted(missing)}"


async def test_operations_declare_errors_and_rate_limit_headers(client):
    doc = await (await client.get("/api/v1/openapi.json")).json()
    op = doc["paths"]["/api/v1/agents"]["post"]
    assert {"201", "400", "401", "403", "413", "429", "500"} <= set(op["responses"])
    assert "X-RateLimit-Limit" in op["responses"]["201"]["headers"]
    assert "Retry-After" in op["responses"]["429"]["headers"]
    body = op["requestBody"]["content"]["application/json"]["schema"]
    schema = doc["components"]["schemas"][body["$ref"].split("/")[-1]]
    assert schema["required"] == ["name"]
    assert schema["additionalProperties"] is False
    assert schema["properties"]["temperature"]["maximum"] == 100
    assert "systemPrompt" in schema["properties"]


async def test_model_ids_are_narrowed_to_configured_providers(make_client):
    client = await make_client(
        providers={"ollama": {"kind": "openai", "base_url": "http://127.0.0.1:1/v1"}}
    )
    doc = await (await client.get("/api/v1/openapi.json")).json()
    model = doc["components"]["schemas"]["AgentCreate"]["properties"]["model"]
    assert model["pattern"] == "^(builtin|(ollama)/.+)$"


async def test_schema_valid_means_acceptable(client):
    """Bounds the fuzzer relies on: path patterns, 409s, tool enums, SSE events, either/or."""
    doc = await (await client.get("/api/v1/openapi.json")).json()
    paths = doc["paths"]
    tool_id = paths["/api/v1/tools/{id}"]["get"]["parameters"][0]["schema"]
    assert tool_id["pattern"] == "^(?:tool_[A-Za-z0-9_-]+)$" and tool_id["maxLength"] == 200
    name = paths["/api/v1/secrets/{name}"]["put"]["parameters"][0]["schema"]
    assert re.match(name["pattern"], "CRM_TOKEN") and not re.match(name["pattern"], "1BAD")
    for path, method in [
        ("/api/v1/team/invite", "post"),
        ("/api/v1/team/invitations/{id}", "delete"),
        ("/api/v1/team/invitations/accept", "post"),
        ("/api/v1/form-submissions/client-result", "post"),
    ]:
        assert "CONFLICT" in paths[path][method]["responses"]["409"]["description"], path
    tool = doc["components"]["schemas"]["ToolCreate"]["properties"]
    assert tool["executionType"]["enum"] == ["mock", "http", "form", "mcp"]
    assert tool["httpMethod"]["enum"] == ["GET", "POST", "PUT", "DELETE"]
    assert tool["httpUrl"]["maxLength"] == 2048 and tool["name"]["pattern"].startswith("^[a-z]")
    stream = paths["/api/v1/chat"]["post"]["responses"]["200"]["content"]["text/event-stream"]
    assert stream["schema"]["required"] == ["event", "data"]
    document = doc["components"]["schemas"]["DocumentCreate"]
    assert document["oneOf"] == [{"required": ["title", "content"]}, {"required": ["url"]}]
    limit = paths["/api/v1/conversations"]["get"]["parameters"]
    assert next(p for p in limit if p["name"] == "offset")["schema"]["maximum"] == 10**12


def test_two_models_of_one_name_and_different_shapes_are_refused():
    """Components are named by class: a second model of the same name must not be
    described silently by the first one's schema (it happened to DeliveryOut)."""

    class DeliveryOut(BaseModel):
        url: str

    first = DeliveryOut

    class DeliveryOut(BaseModel):  # noqa: F811  (the clash under test)
        event_type: str

    schemas = _Schemas()
    schemas.describe(first, "serialization")
    schemas.describe(first, "serialization")  # the same model again is fine
    with pytest.raises(ValueError, match="named DeliveryOut"):
        schemas.describe(DeliveryOut, "serialization")
