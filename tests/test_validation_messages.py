"""Validation messages are written for people: every field of every request body, from the
OpenAPI document, answered with the field's name and what it expects, never pydantic's words."""

from __future__ import annotations

import re
from typing import Any

import pytest
from pydantic import ValidationError

from agentsvc.api import all_endpoints
from agentsvc.validation_messages import pattern_phrase
from tests.support.accounts import bearer, new_api_key
from tests.support.errors import assert_error

# Nothing of the validation library may reach a client.
BANNED = (
    "Input should",
    "pydantic",
    "type=",
    "https://errors.pydantic.dev",
    "regex",
    "^",
    "class",
    "dict_type",
    "model_type",
    "str_type",
    "Value error",
)

# JSON values of each type, to send where the schema wants another.
WRONG_TYPES: dict[str, Any] = {
    "string": "50",
    "number": 12345,
    "boolean": True,
    "object": {"a": 1},
    "array": ["a"],
}

# Strings tried, in order, for a field with a pattern (the first that matches is valid, the
# first that does not is the bad value).
PATTERN_CANDIDATES = [
    "lookup",
    "person@example.com",
    "builtin",
    "09:00",
    "A",
    " ",
    "Not valid!",
    "\x01",
    "\x00",  # the one text no JSON body may hold (NO_NUL_PATTERN)
]


class Schema:
    """The OpenAPI document's schemas, with `$ref` resolved."""

    def __init__(self, doc: dict[str, Any]):
        self.components = doc["components"]["schemas"]

    def resolve(self, node: dict[str, Any]) -> dict[str, Any]:
        while "$ref" in node:
            target = self.components[node["$ref"].rsplit("/", 1)[-1]]
            node = {**target, **{k: v for k, v in node.items() if k != "$ref"}}
        return node

    def branches(self, node: dict[str, Any]) -> list[dict[str, Any]]:
        node = self.resolve(node)
        options = node.get("anyOf")
        if not options:
            return [node]
        shared = {k: v for k, v in node.items() if k != "anyOf"}
        return [{**shared, **self.resolve(o)} for o in options]

    def types(self, node: dict[str, Any]) -> set[str]:
        """The JSON types a value of this node may have."""
        found: set[str] = set()
        for branch in self.branches(node):
            if "enum" in branch or "const" in branch:
                values = branch.get("enum", [branch.get("const")])
                found |= {_json_type(v) for v in values}
            kind = branch.get("type")
            if isinstance(kind, list):
                found |= set(kind)
            elif kind:
                found.add(kind)
            elif "properties" in branch:
                found.add("object")
        if "integer" in found:
            found.add("number")
        return found


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    return "array" if isinstance(value, list) else "object"


class Bodies:
    """Minimal valid values for a schema, and the wrong ones to send instead."""

    def __init__(self, schema: Schema, known: dict[str, Any]):
        self.schema = schema
        self.known = known  # valid values of fields that name resources

    def valid(self, node: dict[str, Any], name: str = "") -> Any:
        if name in self.known:
            return self.known[name]
        branch = next(b for b in self.schema.branches(node) if b.get("type") != "null")
        if "const" in branch:
            return branch["const"]
        if "enum" in branch:
            return branch["enum"][0]
        kind = branch.get("type", "object")
        if kind == "string":
            value = "a"
            if "pattern" in branch:
                value = next(c for c in PATTERN_CANDIDATES if re.search(branch["pattern"], c))
            return value + "a" * max(0, branch.get("minLength", 0) - len(value))
        if kind in ("integer", "number"):
            return max(branch.get("minimum", 0), min(1, branch.get("maximum", 1)))
        if kind == "boolean":
            return True
        if kind == "array":
            count = branch.get("minItems", 0)
            return [self.valid(branch.get("items", {})) for _ in range(count)]
        required = branch.get("required", [])
        props = branch.get("properties", {})
        return {key: self.valid(props[key], key) for key in required if key in props}

    def wrong(self, node: dict[str, Any]) -> list[tuple[str, Any]]:
        """(what is wrong, value) pairs: each JSON type the field refuses, then its bounds."""
        accepted = self.schema.types(node)
        cases = [
            (f"a {kind}", value) for kind, value in WRONG_TYPES.items() if kind not in accepted
        ]
        if "null" not in accepted:
            cases.append(("null", None))
        for branch in self.schema.branches(node):
            cases += _out_of_bounds(branch)
            if branch.get("type") == "array" and branch.get("maxItems", 10**9) <= 600:
                item = self.valid(branch.get("items", {}))
                cases.append(("too many items", [item] * (branch["maxItems"] + 1)))
        return cases

    def fields(self, node: dict[str, Any], path: tuple = ()):
        """Every (path, schema) of an object's properties, nested objects and list items too."""
        for branch in self.schema.branches(node):
            for key, prop in branch.get("properties", {}).items():
                yield (*path, key), prop
                for sub in self.schema.branches(prop):
                    if "properties" in sub:
                        yield from self.fields(sub, (*path, key))
                    items = sub.get("items")
                    if (
                        sub.get("type") == "array"
                        and items
                        and "properties" in (self.schema.resolve(items))
                    ):
                        yield from self.fields(items, (*path, key, 0))

    def body_with(self, root: dict[str, Any], path: tuple, value: Any) -> dict[str, Any]:
        """A minimal valid body with the field at `path` set to `value`."""
        body = self.valid(root)
        target, node = body, root
        for step, nxt in zip(path, path[1:], strict=False):
            node = self._child(node, step)
            if isinstance(step, int):
                while len(target) <= step:
                    target.append(self.valid(node))
                target = target[step]
            else:
                if step not in target or not isinstance(target[step], dict | list):
                    target[step] = [] if isinstance(nxt, int) else self.valid(node, step)
                target = target[step]
        target[path[-1]] = value
        return body

    def _child(self, node: dict[str, Any], step: Any) -> dict[str, Any]:
        for branch in self.schema.branches(node):
            if isinstance(step, int) and "items" in branch:
                return branch["items"]
            if step in branch.get("properties", {}):
                return branch["properties"][step]
        return {}


def _out_of_bounds(branch: dict[str, Any]) -> list[tuple[str, Any]]:
    cases: list[tuple[str, Any]] = []
    if "enum" in branch and all(isinstance(v, str) for v in branch["enum"]):
        cases.append(("not one of the values", "not-a-choice"))
    if "maximum" in branch:
        cases.append(("above the maximum", branch["maximum"] + 1))
    if "minimum" in branch:
        cases.append(("below the minimum", branch["minimum"] - 1))
    if branch.get("type") == "string":
        if branch.get("maxLength", 10**9) <= 200_000:
            cases.append(("too long", "x" * (branch["maxLength"] + 1)))
        if branch.get("minLength", 0) >= 1:
            cases.append(("empty", ""))
        if "pattern" in branch:
            bad = [c for c in PATTERN_CANDIDATES if not re.search(branch["pattern"], c)]
            cases.append(("not matching the pattern", bad[0]))
    return cases


# Bodies read only once their signature holds (401 before any field is looked at): their
# fields are checked, signed, in tests/test_channels_refusals.py and test_channels_telegram.py.
SIGNED_BODIES = {("post", "/api/v1/channels/{id}/inbound")}


def _models() -> dict[tuple[str, str], Any]:
    return {(e.method.lower(), e.documented_path): e.body for e in all_endpoints() if e.body}


@pytest.fixture
async def client(make_client):
    """The app with a plan without a request limit: every field's bad values are more
    requests than a plan allows in a minute."""
    return await make_client(plans={"unmetered": {}})


@pytest.fixture
async def resources(client) -> dict[str, Any]:
    """A team owner's key with a real agent, tool and trigger to name in paths and bodies."""
    headers = bearer(await new_api_key(client, plan="unmetered"))
    resp = await client.post("/api/v1/agents", json={"name": "Messages"}, headers=headers)
    agent_id = (await resp.json())["data"]["id"]
    tool = {
        "agentId": agent_id,
        "name": "lookup",
        "description": "Look things up",
        "executionType": "mock",
        "mockResponse": "ok",
        "inputSchema": {"type": "object", "properties": {}},
    }
    resp = await client.post("/api/v1/tools", json=tool, headers=headers)
    assert resp.status == 201, await resp.text()
    tool_id = (await resp.json())["id"]
    trigger = {
        "name": "Welcome",
        "triggerType": "time_on_page",
        "conditions": {"timeOnPage": 30},
        "actionType": "open_chat",
        "actionConfig": {"message": "Hi!"},
    }
    resp = await client.post(f"/api/v1/triggers?agentId={agent_id}", json=trigger, headers=headers)
    assert resp.status == 201, await resp.text()
    trigger_id = (await resp.json())["id"]
    answer = {"question": "Do you ship abroad?", "answer": "Yes, everywhere."}
    resp = await client.post(f"/api/v1/agents/{agent_id}/answers", json=answer, headers=headers)
    assert resp.status == 201, await resp.text()
    answer_id = (await resp.json())["data"]["id"]
    channel = {"type": "api", "config": {"outboundUrl": "http://127.0.0.1:9/replies"}}
    resp = await client.post(f"/api/v1/agents/{agent_id}/channels", json=channel, headers=headers)
    assert resp.status == 201, await resp.text()
    channel_id = (await resp.json())["data"]["id"]
    return {
        "headers": headers,
        "paths": {
            "agents": agent_id,
            "tools": tool_id,
            "triggers": trigger_id,
            "secrets": "CRM_TOKEN",
            "answers": answer_id,
            "channels": channel_id,
            "approvals": "apr_missing",  # bodies are checked before the approval is looked up
        },
        "fields": {"agentId": agent_id, "toolId": tool_id, "model": "builtin"},
    }


def _fill(path: str, ids: dict[str, str]) -> str:
    """The path with each parameter replaced by the id of its collection's resource."""
    collection = path.split("/")[3]
    return re.sub(r"{[^}]+}", ids.get(collection, "x_missing"), path)


def check_message(message: str, field: str) -> None:
    assert message.startswith(f"{field}: "), message
    for word in BANNED:
        assert word not in message, (word, message)


async def test_every_request_field_answers_bad_values_in_words(client, resources):
    """Each property of each JSON request body, given each JSON type it refuses, null, and
    values past its bounds: 400 VALIDATION_ERROR naming the field and what it expects."""
    doc = await (await client.get("/api/v1/openapi.json")).json()
    schema = Schema(doc)
    bodies = Bodies(schema, resources["fields"])
    models = _models()
    checked = 0
    for path, operations in doc["paths"].items():
        for method, op in operations.items():
            content = op.get("requestBody", {}).get("content", {})
            if "application/json" not in content or (method, path) in SIGNED_BODIES:
                continue
            root = content["application/json"]["schema"]
            url = _fill(path, resources["paths"])
            query = {
                p["name"]: bodies.valid(p["schema"], p["name"])
                for p in op.get("parameters", [])
                if p["in"] == "query" and p["required"]
            }
            model = models[(method, path)]
            for field_path, prop in list(bodies.fields(root)):
                field = ".".join(str(p) for p in field_path)
                for what, value in bodies.wrong(prop):
                    body = bodies.body_with(root, field_path, value)
                    try:
                        model.model_validate(body)
                    except ValidationError:
                        pydantic_refuses = True
                    else:
                        pydantic_refuses = False  # a bound the service checks itself
                    resp = await client.request(
                        method, url, json=body, params=query, headers=resources["headers"]
                    )
                    where = f"{method.upper()} {path} {field} {what}: {await resp.text()}"
                    if pydantic_refuses:
                        error = await assert_error(resp, 400, "VALIDATION_ERROR")
                        check_message(error["message"], field)
                        checked += 1
                    elif resp.status >= 400:
                        assert resp.content_type == "application/json", where
                        message = (await resp.json())["error"]["message"]
                        for word in BANNED:
                            assert word not in message, where
    assert checked > 300


async def test_missing_and_unknown_fields_are_named(client, resources):
    doc = await (await client.get("/api/v1/openapi.json")).json()
    schema = Schema(doc)
    bodies = Bodies(schema, resources["fields"])
    for path, operations in doc["paths"].items():
        for method, op in operations.items():
            content = op.get("requestBody", {}).get("content", {})
            if "application/json" not in content or (method, path) in SIGNED_BODIES:
                continue
            root = schema.resolve(content["application/json"]["schema"])
            url = _fill(path, resources["paths"])
            query = {
                p["name"]: bodies.valid(p["schema"], p["name"])
                for p in op.get("parameters", [])
                if p["in"] == "query" and p["required"]
            }
            headers = resources["headers"]
            for name in root.get("required", []):
                body = bodies.valid(root)
                del body[name]
                resp = await client.request(method, url, json=body, params=query, headers=headers)
                error = await assert_error(resp, 400, "VALIDATION_ERROR")
                assert error["message"] == f"{name}: is required", (path, error)
            body = {**bodies.valid(root), "bogusField": 1}
            resp = await client.request(method, url, json=body, params=query, headers=headers)
            error = await assert_error(resp, 400, "VALIDATION_ERROR")
            assert error["message"] == "bogusField: is not a known field", (path, error)


@pytest.mark.parametrize(
    ("path", "body", "message"),
    [
        (
            "/api/v1/agents",
            {"name": "A", "temperature": "50"},
            "temperature: must be a number from 0 to 100",
        ),
        (
            "/api/v1/agents",
            {"name": "A", "temperature": 500},
            "temperature: must be a number from 0 to 100",
        ),
        (
            "/api/v1/agents",
            {"name": "   "},
            "name: must be a non-blank string of 1 to 200 characters",
        ),
        (
            "/api/v1/agents",
            {"name": "A", "temperature": None},
            "temperature: may not be null, must be a number from 0 to 100",
        ),
        (
            "/api/v1/team/invite",
            {"email": "nope"},
            "email: must be an e-mail address of at most 254 characters",
        ),
        (
            "/api/v1/team/invite",
            {"email": "a@example.com", "role": "boss"},
            'role: must be "member" or "owner"',
        ),
        (
            "/api/v1/chat",
            {"agentId": "agt_x", "messages": [{"role": "user", "content": "hi"}], "user": "bob"},
            "user: must be an object with the fields id, email, name, attributes",
        ),
        (
            "/api/v1/chat",
            {"agentId": "agt_x", "messages": {"role": "user"}},
            "messages: must be a list of 1 to 500 objects (role, content)",
        ),
        (
            "/api/v1/chat",
            {"agentId": "agt_x", "messages": [{"role": "bot", "content": "hi"}]},
            'messages.0.role: must be "user" or "assistant"',
        ),
    ],
)
async def test_messages_say_what_is_expected(client, auth, path, body, message):
    resp = await client.post(path, json=body, headers=auth)
    error = await assert_error(resp, 400, "VALIDATION_ERROR")
    assert error["message"] == message


async def test_query_values_are_described_too(client, auth):
    resp = await client.get("/api/v1/conversations?agentId=agt_x&limit=abc", headers=auth)
    error = await assert_error(resp, 400, "VALIDATION_ERROR")
    assert error["message"] == "query.limit: must be a whole number from 1 to 100"


async def test_every_documented_pattern_has_words(client):
    """A new pattern on a request field needs its phrase in api/messages.py, so that no
    message falls back to the vague one (and none ever shows the regular expression)."""
    doc = await (await client.get("/api/v1/openapi.json")).json()
    missing = set()
    # Model ids are checked against the configured providers, with their own message.
    MODEL_IDS = ("^builtin$", "^(builtin|")

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            pattern = node.get("pattern")
            if isinstance(pattern, str) and "x-agentsvc-model-id" not in node:
                if pattern_phrase(pattern) is None and not pattern.startswith(MODEL_IDS):
                    missing.add(pattern)
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(doc["components"]["schemas"])
    assert not missing, f"patterns without a phrase in agentsvc/api/messages.py: {missing}"
