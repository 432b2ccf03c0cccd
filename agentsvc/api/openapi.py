"""The OpenAPI 3.1 document, generated from the route table and its pydantic models."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable
from typing import Any

from pydantic import TypeAdapter

from agentsvc import __version__
from agentsvc.api.errors import ERROR_CLASSES, STATUS
from agentsvc.api.models import MODEL_ID_MARKER, NO_NUL_PATTERN
from agentsvc.api.routing import PATH_PARAM, Endpoint
from agentsvc.llm.base import BUILTIN

_REF = "#/components/schemas/{model}"

ERROR_SCHEMA = {
    "type": "object",
    "required": ["data", "error"],
    "properties": {
        "data": {"type": "null"},
        "error": {
            "type": "object",
            "required": ["code", "message"],
            "properties": {"code": {"type": "string"}, "message": {"type": "string"}},
        },
    },
}

RATE_LIMIT_HEADERS = {
    "X-RateLimit-Limit": {
        "description": "Requests allowed per minute for the team's plan",
        "schema": {"type": "integer"},
    },
    "X-RateLimit-Remaining": {
        "description": "Requests left in the current window",
        "schema": {"type": "integer"},
    },
    "X-RateLimit-Reset": {
        "description": "Epoch seconds at which the bucket is full again",
        "schema": {"type": "integer"},
    },
}

# One Server-Sent Event (OpenAPI 3.1 describes a stream by the schema of each event): its
# name and a JSON payload whose `type` repeats the name.
SSE_EVENT_SCHEMA = {
    "type": "object",
    "required": ["event", "data"],
    "properties": {
        "event": {"type": "string"},
        "data": {"type": "string", "contentMediaType": "application/json"},
    },
}

# SCIM's errors (RFC 7644 §3.12): the one exception to the envelope, on /scim/v2 only.
SCIM_MEDIA = "application/scim+json"
SCIM_ERROR_SCHEMA = {
    "type": "object",
    "required": ["schemas", "status", "detail"],
    "properties": {
        "schemas": {"type": "array", "items": {"type": "string"}},
        "status": {"type": "string"},
        "scimType": {"type": "string"},
        "detail": {"type": "string"},
    },
}

_STATUS_TEXT = {
    400: "Invalid request",
    401: "Missing or invalid credential",
    403: "Not allowed for this role or plan",
    404: "Not found",
    405: "Method not allowed",
    409: "Conflicts with the resource's current state",
    413: "Request body too large",
    415: "Unsupported media type",
    429: "Rate limit exceeded",
    500: "Unexpected error",
    503: "Unavailable for now: nothing was done, try again (Retry-After)",
}


class _Schemas:
    """Collects component schemas while describing types."""

    def __init__(self) -> None:
        self.components: dict[str, Any] = {}

    def describe(self, tp: Any, mode: str) -> dict[str, Any]:
        schema = TypeAdapter(tp).json_schema(ref_template=_REF, mode=mode)
        if mode == "validation":
            _no_nul_in_strings(schema)
        for name, sub in schema.pop("$defs", {}).items():
            self._add(name, sub)
        title = schema.get("title")
        if schema.get("type") == "object" and title and "properties" in schema:
            self._add(title, schema)
            return {"$ref": _REF.format(model=title)}
        return schema

    def _add(self, name: str, schema: dict[str, Any]) -> None:
        # Components are named by their model's class name: two models of one name with
        # different shapes would leave one of them described by the other's schema.
        known = self.components.setdefault(name, schema)
        if known != schema:
            raise ValueError(f"two response or request models are named {name}: rename one")


def _error_codes(status: int) -> list[str]:
    return [cls.code for cls in ERROR_CLASSES if STATUS[cls] == status]


def _statuses(endpoint: Endpoint) -> list[int]:
    statuses = {400, 500}
    if endpoint.auth != "public":
        statuses |= {401, 429}
    if endpoint.body is not None or endpoint.form is not None:
        statuses.add(413)
    if endpoint.form is not None and endpoint.body is None:
        statuses.add(415)
    if endpoint.owner_only:
        statuses.add(403)
    if PATH_PARAM.search(endpoint.path):
        statuses.add(404)
    if endpoint.below_api:  # while the process cannot reach its database (routing.py)
        statuses.add(503)
    statuses |= set(endpoint.errors)
    return sorted(statuses)


def _path_schema(endpoint: Endpoint, name: str, route_pattern: str) -> dict[str, Any]:
    # What the router matches (`{id:tool_...}`) or the service checks (a secret's name):
    # schema-valid path values are then the ones that reach the handler and pass.
    pattern = endpoint.path_patterns.get(name) or (
        f"^(?:{route_pattern})$" if route_pattern else None
    )
    schema: dict[str, Any] = {"type": "string", "minLength": 1, "maxLength": 200}
    if pattern:
        schema["pattern"] = pattern
    return schema


def _operation(endpoint: Endpoint, schemas: _Schemas) -> dict[str, Any]:
    op: dict[str, Any] = {
        "operationId": endpoint.handler.__name__,
        "summary": endpoint.summary,
        "tags": [endpoint.tag],
    }
    if "description" in endpoint.extra:
        op["description"] = endpoint.extra["description"]
    params = _parameters(endpoint)
    if params:
        op["parameters"] = params
    content: dict[str, Any] = {}
    if endpoint.body is not None:
        media = SCIM_MEDIA if endpoint.extra.get("scim") else "application/json"
        content[media] = {"schema": schemas.describe(endpoint.body, "validation")}
    if "body_schema" in endpoint.extra:
        # A body the handler reads itself (a signature is checked on its bytes first).
        body_schema = schemas.describe(endpoint.extra["body_schema"], "validation")
        content["application/json"] = {"schema": body_schema}
    if endpoint.form is not None:
        content["multipart/form-data"] = {"schema": schemas.describe(endpoint.form, "validation")}
    for media in endpoint.extra.get("request_media", ()):
        # A raw body (a picture): its bytes as sent.
        content[media] = {"schema": {"type": "string", "format": "binary"}}
    if content:
        op["requestBody"] = {"required": True, "content": content}
    scim = bool(endpoint.extra.get("scim"))
    if scim and endpoint.precheck is not None:
        op["security"] = [{"scimBearer": []}]  # the team's SCIM token, checked first
    elif endpoint.auth == "public":
        op["security"] = []
    elif endpoint.auth == "optional":
        op["security"] = [{"bearerAuth": []}, {"cookieAuth": []}, {}]

    rate_headers = RATE_LIMIT_HEADERS if endpoint.auth != "public" else {}
    responses: dict[str, Any] = {str(endpoint.status): _success(endpoint, schemas, rate_headers)}
    # Other successes of the route (an MCP notification's 202 with no body).
    for status, description in endpoint.extra.get("other_successes", {}).items():
        responses[str(status)] = {"description": description}
    for status in _statuses(endpoint):
        responses[str(status)] = _error_response(status, rate_headers, scim=scim)
    op["responses"] = responses
    return op


def _parameters(endpoint: Endpoint) -> list[dict[str, Any]]:
    """The path parameters, then the query model's fields."""
    params: list[dict[str, Any]] = [
        {"name": name, "in": "path", "required": True, "schema": _path_schema(endpoint, name, rx)}
        for name, rx in PATH_PARAM.findall(endpoint.path)
    ]
    if endpoint.query is not None:
        qschema = TypeAdapter(endpoint.query).json_schema(ref_template=_REF, mode="validation")
        required = set(qschema.get("required", []))
        for name, prop in qschema.get("properties", {}).items():
            prop = {k: v for k, v in prop.items() if k != "title"}
            param = {"name": name, "in": "query", "required": name in required, "schema": prop}
            if "description" in prop:
                param["description"] = prop.pop("description")
            params.append(param)
    return params


def _success(endpoint: Endpoint, schemas: _Schemas, rate_headers: dict[str, Any]) -> dict[str, Any]:
    """The success response: its content (a stream, text, or JSON, enveloped or bare) and
    its headers."""
    success: dict[str, Any] = {"description": "Success"}
    if endpoint.stream:
        success["content"] = {"text/event-stream": {"schema": SSE_EVENT_SCHEMA}}
    elif endpoint.extra.get("scim"):  # a 204 (response None) has no content
        if endpoint.response is not None:
            schema = schemas.describe(endpoint.response, "serialization")
            success["content"] = {SCIM_MEDIA: {"schema": schema}}
    elif endpoint.media_type != "application/json":
        types = endpoint.media_type
        success["content"] = {
            media: {"schema": {"type": "string"}}
            for media in ((types,) if isinstance(types, str) else types)
        }
    elif endpoint.response is not None:
        schema = schemas.describe(endpoint.response, "serialization")
        if endpoint.envelope:
            extra = dict(endpoint.extra.get("envelope_extra", {}))
            schema = {
                "type": "object",
                "required": ["data"],
                "properties": {
                    "data": schema,
                    "error": {"type": "null"},
                    **extra.pop("properties_extra", {}),
                },
                **extra,
            }
        success["content"] = {"application/json": {"schema": schema}}
    headers = dict(rate_headers)
    for name in endpoint.response_headers:
        headers[name] = {"schema": {"type": "string"}}
    if headers:
        success["headers"] = headers
    return success


def _error_response(
    status: int, rate_headers: dict[str, Any], *, scim: bool = False
) -> dict[str, Any]:
    """An error response: the envelope (SCIM's error on /scim/v2), its codes, and the
    headers it carries."""
    codes = ", ".join(_error_codes(status))
    media, model = (SCIM_MEDIA, "ScimError") if scim else ("application/json", "Error")
    response: dict[str, Any] = {
        "description": f"{_STATUS_TEXT.get(status, 'Error')} ({codes})",
        "content": {media: {"schema": {"$ref": _REF.format(model=model)}}},
    }
    error_headers = dict(rate_headers)
    if status in (429, 503):
        error_headers["Retry-After"] = {
            "description": "Seconds to wait before retrying",
            "schema": {"type": "integer"},
        }
    if status == 405:
        error_headers["Allow"] = {"schema": {"type": "string"}}
    if error_headers:
        response["headers"] = error_headers
    return response


def _admits_nul(pattern: str) -> bool:
    probes = ("a\x00", "\x00a", "a\x00a", "0\x00:00", "a\x00@b.c", "a@b\x00.c")
    return any(re.search(pattern, text) for text in probes)


def _no_nul_in_strings(node: Any) -> None:
    """Request strings without a pattern of their own say they hold no NUL character
    (routing.parse_json refuses one in a JSON body: PostgreSQL cannot store it)."""
    if isinstance(node, dict):
        if node.get("type") == "string" and not {"enum", "const", "format"} & set(node):
            if "pattern" not in node:
                node["pattern"] = NO_NUL_PATTERN
            elif _admits_nul(node["pattern"]):  # as `\S` did: a NUL beside a letter
                # A second pattern in allOf would say it, at 8x the fuzzer's time: models
                # write their patterns without NUL instead (api.models.NON_BLANK).
                raise ValueError(f"request pattern {node['pattern']!r} lets a NUL through")
        if node.get("additionalProperties") not in (None, False) and "propertyNames" not in node:
            node["propertyNames"] = {"pattern": NO_NUL_PATTERN}  # keys are text too
        for value in node.values():
            _no_nul_in_strings(value)
    elif isinstance(node, list):
        for value in node:
            _no_nul_in_strings(value)


def _narrow_model_ids(node: Any, pattern: str) -> None:
    if isinstance(node, dict):
        if node.pop(MODEL_ID_MARKER, False):
            node["pattern"] = pattern
        for value in node.values():
            _narrow_model_ids(value, pattern)
    elif isinstance(node, list):
        for value in node:
            _narrow_model_ids(value, pattern)


def model_id_pattern(providers: list[str]) -> str:
    """The regular expression of the model ids this configuration accepts."""
    if not providers:
        return f"^{BUILTIN}$"
    names = "|".join(re.escape(p) for p in sorted(providers))
    return f"^({BUILTIN}|({names})/.+)$"


def build_document(endpoints: list[Endpoint], providers: list[str]) -> dict[str, Any]:
    """Return the OpenAPI 3.1 document describing every endpoint."""
    schemas = _Schemas()
    paths: dict[str, dict[str, Any]] = {}
    for endpoint in endpoints:
        path = endpoint.documented_path
        paths.setdefault(path, {})[endpoint.method.lower()] = _operation(endpoint, schemas)
    schemas.components["Error"] = ERROR_SCHEMA
    schemas.components["ScimError"] = SCIM_ERROR_SCHEMA
    _narrow_model_ids(schemas.components, model_id_pattern(providers))
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "agentsvc",
            "version": __version__,
            "description": "Self-hosted configurable AI chat agents. Errors always use the "
            "envelope {data: null, error: {code, message}}, but on /scim/v2, which answers "
            "as SCIM (RFC 7644) does.",
        },
        "paths": paths,
        "components": {
            "schemas": dict(sorted(schemas.components.items())),
            "securitySchemes": {
                "bearerAuth": {"type": "http", "scheme": "bearer"},
                # Dashboard sessions; state changes also need a trusted Origin.
                "cookieAuth": {"type": "apiKey", "in": "cookie", "name": "agentsvc_session"},
                # /scim/v2: the team's SCIM token (POST /team/scim-token), not an API key.
                "scimBearer": {"type": "http", "scheme": "bearer"},
            },
        },
        "security": [{"bearerAuth": []}, {"cookieAuth": []}],
    }


class OpenApiDocument:
    """The document's bytes, built on the first request for them and then kept: start-up
    need not wait a third of a second for pydantic's schema generation, and the build runs
    in a thread, so the event loop serves on meanwhile."""

    def __init__(self, build: Callable[[], bytes]) -> None:
        self._build = build
        self._body: asyncio.Future[bytes] | None = None

    async def body(self) -> bytes:
        if self._body is None:
            self._body = asyncio.ensure_future(asyncio.to_thread(self._build))
        # Shielded: a client that goes away does not cancel the build the others await.
        return await asyncio.shield(self._body)
