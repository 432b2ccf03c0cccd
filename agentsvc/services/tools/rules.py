"""What makes a tool definition valid; every message names the field it is about."""

from __future__ import annotations

import re
from typing import Any

from agentsvc.errors import ValidationFailed
from agentsvc.outbound import OutboundError, check_headers, check_url, private_host
from agentsvc.services.tenant_input import patterns as tenant_patterns
from agentsvc.services.tenant_input import schemas as tenant_schemas
from agentsvc.services.tools.url import host_params
from agentsvc.text_patterns import NON_BLANK
from agentsvc.text_patterns import TOOL_NAME_PATTERN as NAME_PATTERN

EXECUTION_TYPES = ("mock", "http", "form", "mcp")
HTTP_METHODS = ("GET", "POST", "PUT", "DELETE")
EXECUTION_MODES = ("webhook", "client", "both")
DISPLAY_TYPES = (
    "text",
    "product_card",
    "product_carousel",
    "image",
    "table",
    "buttons",
    "form",
    "custom",
)
FIELD_TYPES = (
    "text",
    "email",
    "tel",
    "number",
    "textarea",
    "select",
    "multiselect",
    "date",
    "datetime",
    "file",
    "image",
)
CHOICE_FIELD_TYPES = ("select", "multiselect")
VALIDATION_RULES = {
    "required": bool,
    "minLength": int,
    "maxLength": int,
    "min": (int, float),
    "max": (int, float),
    "pattern": str,
}
MAX_FIELDS = 50
MAX_POST_ACTIONS = 10
MAX_HEADERS = 50
MAX_URL_CHARS = 2048
MAX_DESCRIPTION_CHARS = 10_000
MAX_MOCK_RESPONSE_CHARS = 100_000
MAX_CLIENT_HANDLER_CHARS = 200
DESCRIPTION_SCHEMA = {"minLength": 1, "maxLength": MAX_DESCRIPTION_CHARS, "pattern": NON_BLANK}
CLIENT_HANDLER_SCHEMA = {
    "minLength": 1,
    "maxLength": MAX_CLIENT_HANDLER_CHARS,
    "pattern": NON_BLANK,
}

# Fields that belong to one execution type (Python names, as stored).
TYPE_FIELDS = {
    "mock": ("mock_response",),
    "http": ("http_url", "http_method", "http_headers"),
    "form": (
        "form_schema",
        "form_execution_mode",
        "form_webhook_url",
        "form_client_handler",
        "form_post_actions",
    ),
    "mcp": ("mcp_url", "mcp_headers", "mcp_tools"),
}
# Set by the service, never by a client; cleared when a tool stops being of that type.
SERVICE_FIELDS = {"mcp": {"mcp_server_tools": None, "mcp_listed_at": None, "counts_as": 1}}
MAX_MCP_TOOL_NAMES = 200
MAX_MCP_TOOL_NAME_CHARS = 200
WIRE_NAMES = {
    "mock_response": "mockResponse",
    "http_url": "httpUrl",
    "http_method": "httpMethod",
    "http_headers": "httpHeaders",
    "form_schema": "formSchema",
    "form_execution_mode": "formExecutionMode",
    "form_webhook_url": "formWebhookUrl",
    "form_client_handler": "formClientHandler",
    "form_post_actions": "formPostActions",
    "mcp_url": "mcpUrl",
    "mcp_headers": "mcpHeaders",
    "mcp_tools": "mcpTools",
}
EMPTY_INPUT_SCHEMA = {"type": "object", "properties": {}}
# How long a call of a tool that requires approval waits for a person (services.approvals)
# when the tool says nothing; and the longest it may wait.
DEFAULT_APPROVAL_TIMEOUT_SECONDS = 3600
MAX_APPROVAL_TIMEOUT_SECONDS = 7 * 86400

_NAME = re.compile(NAME_PATTERN)
# Names the service offers the model itself (services/chat/turn.py).
RESERVED_NAMES = frozenset({"request_human"})
_FIELD_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")
_URL_PARAM = re.compile(r"\{\{[^{}]*\}\}|\{([A-Za-z_][A-Za-z0-9_]*)\}")


def fail(field: str, message: str) -> ValidationFailed:
    return ValidationFailed(f"{field}: {message}")


def check_name(name: str) -> None:
    """A tool name: lowercase letter first, then lowercase letters, digits, underscores."""
    if not _NAME.match(name):
        raise fail(
            "name",
            "must start with a lowercase letter and hold only lowercase letters, digits and "
            "underscores (at most 64 characters)",
        )
    if name in RESERVED_NAMES:
        raise fail("name", f"{name!r} is reserved (agents with handoff are offered it)")


def check_input_schema(schema: Any) -> None:
    """A safe, valid JSON Schema (2020-12) describing an object."""
    tenant_schemas.check_schema(schema, "inputSchema")
    if schema.get("type") != "object":
        raise fail("inputSchema.type", 'must be "object"')
    properties = schema.get("properties", {})
    for name in schema.get("required", []):
        if name not in properties:
            raise fail("inputSchema.required", f"{name!r} is not one of the properties")


def _check_text(field: str, value: Any, *, max_len: int = 2000, required: bool = True) -> None:
    if not isinstance(value, str) or (required and not value.strip()):
        raise fail(field, "must be a non-empty string")
    if len(value) > max_len:
        raise fail(field, f"must be at most {max_len} characters")


def _check_url(field: str, url: Any, *, allow_private: bool, template: bool = False) -> None:
    if not isinstance(url, str) or not url.strip():
        raise fail(field, "must be an http or https URL")
    if len(url) > MAX_URL_CHARS:
        raise fail(field, f"must be at most {MAX_URL_CHARS} characters")
    # Placeholders are filled at call time; check the shape with stand-ins.
    probe = re.sub(r"\{\{[^{}]*\}\}|\{[^{}]*\}", "x", url) if template else url
    try:
        parsed = check_url(probe, allow_private=True)
    except (OutboundError, ValueError) as exc:
        message = exc.message if isinstance(exc, OutboundError) else str(exc)
        raise fail(field, f"must be an http or https URL ({message})") from exc
    # Said now rather than at every delivery attempt. Names are resolved (and checked) when
    # connecting; a host made of a secret is only known then too.
    shown = None if allow_private else private_host(parsed.raw_host or "")
    if shown:
        raise fail(
            field,
            f"points to a private address ({shown}); "
            "set [outbound] allow_private = true to allow it",
        )


def check_target_url(field: str, url: Any, *, allow_private: bool) -> None:
    """An http(s) URL the service will post to, or ValidationFailed naming the field."""
    _check_url(field, url, allow_private=allow_private)


def _check_headers(field: str, headers: Any) -> None:
    if not isinstance(headers, dict) or len(headers) > MAX_HEADERS:
        raise fail(field, f"must be an object of at most {MAX_HEADERS} string values")
    for name, value in headers.items():
        if not isinstance(value, str):
            raise fail(f"{field}.{name}", "must be a string")
    try:
        check_headers(headers)
    except OutboundError as exc:
        raise fail(field, exc.message) from exc


def check_headers_field(field: str, headers: Any) -> None:
    """An object of header values (no line breaks), or ValidationFailed naming the field."""
    _check_headers(field, headers)


def url_params(url: str) -> list[str]:
    """The `{param}` placeholders of an httpUrl (not the `{{SECRET}}` ones)."""
    return [m.group(1) for m in _URL_PARAM.finditer(url) if m.group(1)]


def check_display_config(config: Any) -> None:
    """`{type, fieldMappings, options}` with a known display type."""
    if not isinstance(config, dict):
        raise fail("displayConfig", "must be an object")
    unknown = set(config) - {"type", "fieldMappings", "options"}
    if unknown:
        raise fail(f"displayConfig.{sorted(unknown)[0]}", "is not a known field")
    kind = config.get("type", "text")
    if kind not in DISPLAY_TYPES:
        raise fail("displayConfig.type", f"must be one of {', '.join(DISPLAY_TYPES)}")
    mappings = config.get("fieldMappings", {})
    if not isinstance(mappings, dict) or not all(isinstance(v, str) for v in mappings.values()):
        raise fail("displayConfig.fieldMappings", "must be an object of field names (strings)")
    options = config.get("options", {})
    if not isinstance(options, dict) or not all(isinstance(v, bool) for v in options.values()):
        raise fail("displayConfig.options", "must be an object of booleans")


def _normalise_validation(where: str, rules: Any) -> dict:
    if not isinstance(rules, dict):
        raise fail(where, "must be an object of rules")
    out = {}
    for rule, spec in rules.items():
        if rule not in VALIDATION_RULES:
            raise fail(f"{where}.{rule}", f"is not a rule ({', '.join(VALIDATION_RULES)})")
        # `{value, message}` is the documented shape; a bare value is accepted and wrapped.
        spec = spec if isinstance(spec, dict) else {"value": spec}
        if set(spec) - {"value", "message"} or "value" not in spec:
            raise fail(f"{where}.{rule}", "must be {value, message?}")
        value = spec["value"]
        expected = VALIDATION_RULES[rule]
        if not isinstance(value, expected) or (expected is int and isinstance(value, bool)):
            raise fail(f"{where}.{rule}.value", "has the wrong type")
        if "message" in spec and not isinstance(spec["message"], str):
            raise fail(f"{where}.{rule}.message", "must be a string")
        if rule == "pattern":
            problem = tenant_patterns.pattern_problem(value)
            if problem:
                raise fail(f"{where}.pattern.value", problem)
        out[rule] = spec
    return out


def _normalise_field(where: str, field: Any) -> dict:
    if not isinstance(field, dict):
        raise fail(where, "must be an object")
    allowed = {"name", "label", "type", "validation", "options", "placeholder", "description"}
    unknown = set(field) - allowed
    if unknown:
        raise fail(f"{where}.{sorted(unknown)[0]}", "is not a known field")
    if not isinstance(field.get("name"), str) or not _FIELD_NAME.match(field["name"]):
        raise fail(f"{where}.name", "must be letters, digits and _ (starting with a letter or _)")
    _check_text(f"{where}.label", field.get("label"), max_len=500)
    if field.get("type") not in FIELD_TYPES:
        raise fail(f"{where}.type", f"must be one of {', '.join(FIELD_TYPES)}")
    out = dict(field)
    for key in ("placeholder", "description"):
        if key in field:
            _check_text(f"{where}.{key}", field[key], max_len=1000, required=False)
    if "validation" in field:
        out["validation"] = _normalise_validation(f"{where}.validation", field["validation"])
    options = field.get("options")
    if field["type"] in CHOICE_FIELD_TYPES:
        if not isinstance(options, list) or not options:
            raise fail(f"{where}.options", f"a {field['type']} field needs a list of options")
        seen = set()
        for j, option in enumerate(options):
            spot = f"{where}.options.{j}"
            if not isinstance(option, dict) or set(option) != {"label", "value"}:
                raise fail(spot, "must be {label, value}")
            _check_text(f"{spot}.label", option["label"], max_len=500)
            if not isinstance(option["value"], str | int | float) or isinstance(
                option["value"], bool
            ):
                raise fail(f"{spot}.value", "must be a string or a number")
            if option["value"] in seen:
                raise fail(f"{spot}.value", "repeats another option's value")
            seen.add(option["value"])
    elif options is not None:
        raise fail(f"{where}.options", "only select and multiselect fields have options")
    return out


def normalise_form_schema(schema: Any) -> dict:
    """`{fields, submitLabel?, successMessage?, title?, description?}` with valid fields."""
    if not isinstance(schema, dict):
        raise fail("formSchema", "must be an object with a fields list")
    allowed = {"fields", "submitLabel", "successMessage", "title", "description"}
    unknown = set(schema) - allowed
    if unknown:
        raise fail(f"formSchema.{sorted(unknown)[0]}", "is not a known field")
    fields = schema.get("fields")
    if not isinstance(fields, list) or not fields or len(fields) > MAX_FIELDS:
        raise fail("formSchema.fields", f"must be a list of 1 to {MAX_FIELDS} fields")
    out = dict(schema)
    out["fields"] = [_normalise_field(f"formSchema.fields.{i}", f) for i, f in enumerate(fields)]
    names = [f["name"] for f in out["fields"]]
    for i, name in enumerate(names):
        if name in names[:i]:
            raise fail(f"formSchema.fields.{i}.name", f"{name!r} is used by another field")
    for key in ("submitLabel", "successMessage", "title", "description"):
        if key in schema:
            _check_text(f"formSchema.{key}", schema[key], max_len=1000)
    return out


def _check_post_action(where: str, action: Any, *, allow_private: bool) -> None:
    if not isinstance(action, dict):
        raise fail(where, "must be an object")
    kind = action.get("type")
    shapes = {
        "webhook": {"type", "url", "webhookUrl", "headers", "payload"},
        "team_chat": {"type", "webhookUrl", "messageTemplate", "message"},
        "email": {"type", "recipientIds", "subject"},
    }
    if kind not in shapes:
        raise fail(f"{where}.type", "must be webhook, team_chat or email")
    unknown = set(action) - shapes[kind]
    if unknown:
        raise fail(f"{where}.{sorted(unknown)[0]}", f"is not a field of a {kind} action")
    if kind == "webhook":
        if "url" in action and "webhookUrl" in action:
            raise fail(f"{where}.url", "give url or webhookUrl, not both")
        key = "url" if "url" in action else "webhookUrl"
        _check_url(f"{where}.{key}", action.get(key), allow_private=allow_private)
        if "headers" in action:
            _check_headers(f"{where}.headers", action["headers"])
        if "payload" in action and not isinstance(action["payload"], dict):
            raise fail(f"{where}.payload", "must be an object")
        depth = tenant_schemas.MAX_SCHEMA_DEPTH
        if "payload" in action and tenant_schemas.json_depth(action["payload"], depth) > depth:
            raise fail(f"{where}.payload", f"must not nest deeper than {depth} levels")
    elif kind == "team_chat":
        _check_url(f"{where}.webhookUrl", action.get("webhookUrl"), allow_private=allow_private)
        if "messageTemplate" in action and "message" in action:
            raise fail(f"{where}.messageTemplate", "give messageTemplate or message, not both")
        key = "message" if "message" in action else "messageTemplate"
        _check_text(f"{where}.{key}", action.get(key), max_len=4000)
    else:
        ids = action.get("recipientIds")
        if not isinstance(ids, list) or not ids or not all(isinstance(i, str) for i in ids):
            raise fail(f"{where}.recipientIds", "must be a non-empty list of user ids")
        if "subject" in action:
            _check_text(f"{where}.subject", action["subject"], max_len=500)


def check_tool(tool: dict[str, Any], *, allow_private: bool = False) -> dict[str, Any]:
    """Check a whole tool definition (Python field names); return it as it is stored.

    `allow_private` is the `[outbound]` setting: without it, addresses that can only be
    private are refused here instead of failing at every call or delivery.
    """
    tool = dict(tool)
    check_name(tool["name"])
    _check_text("description", tool["description"], max_len=MAX_DESCRIPTION_CHARS)
    kind = tool["execution_type"]
    if kind not in EXECUTION_TYPES:
        raise fail("executionType", "must be mock, http, form or mcp")
    check_input_schema(tool["input_schema"])
    if tool.get("display_config") is not None:
        check_display_config(tool["display_config"])
    _check_approval(tool)
    for other, fields in TYPE_FIELDS.items():
        if other == kind:
            continue
        for field in fields:
            if tool.get(field) is not None:
                raise fail(WIRE_NAMES[field], f'is only for tools with executionType "{other}"')
    if kind == "mock":
        if not isinstance(tool.get("mock_response"), str):
            raise fail("mockResponse", "is required for a mock tool")
        if len(tool["mock_response"]) > MAX_MOCK_RESPONSE_CHARS:
            raise fail("mockResponse", f"must be at most {MAX_MOCK_RESPONSE_CHARS} characters")
    elif kind == "http":
        _check_url("httpUrl", tool.get("http_url"), allow_private=allow_private, template=True)
        if tool.get("http_method") not in HTTP_METHODS:
            raise fail("httpMethod", f"must be one of {', '.join(HTTP_METHODS)}")
        if tool.get("http_headers") is not None:
            _check_headers("httpHeaders", tool["http_headers"])
        properties = tool["input_schema"].get("properties", {})
        for param in url_params(tool["http_url"]):
            if param not in properties:
                raise fail("httpUrl", f"placeholder {{{param}}} is not a property of inputSchema")
        in_host = host_params(tool["http_url"])
        if in_host:
            raise fail(
                "httpUrl",
                f"placeholder {{{in_host[0]}}} is in the host; input may fill only the path "
                "and the query",
            )
    elif kind == "mcp":
        _check_mcp(tool, allow_private=allow_private)
    else:
        if tool.get("form_schema") is None:
            raise fail("formSchema", "is required for a form tool")
        tool["form_schema"] = normalise_form_schema(tool["form_schema"])
        _check_form(tool, allow_private=allow_private)
    return tool


def _check_approval(tool: dict[str, Any]) -> None:
    """`requiresApproval` (not for a form: the visitor fills it in) and how long a call waits."""
    if tool.get("requires_approval") and tool["execution_type"] == "form":
        raise fail(
            "requiresApproval",
            "a form tool cannot require approval: the visitor fills the form in themselves",
        )
    timeout = tool.get("approval_timeout_seconds")
    if timeout is not None and (
        isinstance(timeout, bool)
        or not isinstance(timeout, int)
        or not 1 <= timeout <= MAX_APPROVAL_TIMEOUT_SECONDS
    ):
        raise fail(
            "approvalTimeoutSeconds",
            f"must be a whole number of seconds from 1 to {MAX_APPROVAL_TIMEOUT_SECONDS} (7 days)",
        )


def _check_form(tool: dict[str, Any], *, allow_private: bool) -> None:
    mode = tool.get("form_execution_mode")
    if mode not in EXECUTION_MODES:
        raise fail("formExecutionMode", f"must be one of {', '.join(EXECUTION_MODES)}")
    if mode in ("webhook", "both"):
        if tool.get("form_webhook_url") is None:
            raise fail("formWebhookUrl", f'is required when formExecutionMode is "{mode}"')
    if tool.get("form_webhook_url") is not None:
        _check_url("formWebhookUrl", tool["form_webhook_url"], allow_private=allow_private)
    # `client` without a handler is a form that only stores its submissions.
    if mode == "both" and tool.get("form_client_handler") is None:
        raise fail("formClientHandler", 'is required when formExecutionMode is "both"')
    if tool.get("form_client_handler") is not None:
        _check_text(
            "formClientHandler", tool["form_client_handler"], max_len=MAX_CLIENT_HANDLER_CHARS
        )
    actions = tool.get("form_post_actions")
    if actions is not None:
        if not isinstance(actions, list) or len(actions) > MAX_POST_ACTIONS:
            raise fail("formPostActions", f"must be a list of at most {MAX_POST_ACTIONS} actions")
        for i, action in enumerate(actions):
            _check_post_action(f"formPostActions.{i}", action, allow_private=allow_private)


def _check_mcp(tool: dict[str, Any], *, allow_private: bool) -> None:
    if tool["input_schema"] != EMPTY_INPUT_SCHEMA:
        raise fail(
            "inputSchema",
            "an mcp tool takes the input schemas of its server's tools; leave it out",
        )
    _check_url("mcpUrl", tool.get("mcp_url"), allow_private=allow_private)
    if tool.get("mcp_headers") is not None:
        _check_headers("mcpHeaders", tool["mcp_headers"])
    names = tool.get("mcp_tools")
    if names is None:
        return
    if not isinstance(names, list) or not 1 <= len(names) <= MAX_MCP_TOOL_NAMES:
        raise fail(
            "mcpTools",
            f"must be a list of 1 to {MAX_MCP_TOOL_NAMES} of the server's tool names"
            " (leave it out to expose them all)",
        )
    for i, name in enumerate(names):
        if not isinstance(name, str) or not name.strip() or len(name) > MAX_MCP_TOOL_NAME_CHARS:
            raise fail(
                f"mcpTools.{i}", f"must be a name of 1 to {MAX_MCP_TOOL_NAME_CHARS} characters"
            )
        if name in names[:i]:
            raise fail(f"mcpTools.{i}", f"{name!r} is listed twice")
