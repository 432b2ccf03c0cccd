"""MCP tools: list a server's tools, name and check the ones exposed, run their calls.

An `mcp` tool is one row for one server; the model is offered each function it exposes as
a tool of its own, named `<tool name>__<server's name>` (see `exposed_names`). The
functions are stored when the tool is created or refreshed, so a chat never waits for a
listing; a call goes to the server with the team's secrets filled into the headers.
"""

from __future__ import annotations

import asyncio
import hashlib
import re
from collections import Counter
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

import orjson

from agentsvc import cpu
from agentsvc.errors import ValidationFailed
from agentsvc.mcp_client import CallOutcome, ListedTool, McpClient, McpFailure
from agentsvc.secretbox import SecretBoxError
from agentsvc.services.tenant_input import schemas as tenant_schemas
from agentsvc.services.tools import secrets as secret_service
from agentsvc.store.tools import Tool

SEPARATOR = "__"
MAX_NAME_CHARS = 64
HASH_CHARS = 6
MAX_SERVER_NAME_CHARS = 200
MAX_FUNCTION_DESCRIPTION_CHARS = 10_000
_UNSAFE = re.compile(r"[^a-z0-9_]+")


def _slug(server_name: str) -> str:
    return _UNSAFE.sub("_", server_name.lower()).strip("_") or "tool"


def exposed_names(prefix: str, server_names: list[str]) -> dict[str, str]:
    """The name the model sees for each of a server's tools.

    `<prefix>__<name>`: the server's name lowercased, each run of characters other than
    a-z, 0-9 and `_` made one `_`. When that would pass 64 characters, or when a changed
    name would meet another tool's, it is cut to 57 characters and ends in `_` and six hex
    digits of the SHA-256 of the server's name (so it stays the same at every listing).
    """
    slugs = {name: _slug(name) for name in server_names}
    counts = Counter(slugs.values())
    out: dict[str, str] = {}
    for name, slug in slugs.items():
        exposed = f"{prefix}{SEPARATOR}{slug}"
        changed = slug != name
        if len(exposed) > MAX_NAME_CHARS or (changed and counts[slug] > 1):
            digest = hashlib.sha256(name.encode()).hexdigest()[:HASH_CHARS]
            exposed = f"{exposed[: MAX_NAME_CHARS - HASH_CHARS - 1]}_{digest}"
        out[name] = exposed
    return out


# Steps of checking one listing's schemas may take together: each schema has the budget
# of one tool's inputSchema (MAX_VALIDATION_STEPS), and a listing five of those (~1 s).
MAX_LISTING_STEPS = 5 * tenant_schemas.MAX_VALIDATION_STEPS
LISTING_TOO_COMPLEX = (
    "not checked: the server's input schemas together are too large or complex to check"
)


def schema_problem(schema: Any, budget: tenant_schemas.WorkBudget | None = None) -> str | None:
    """Why a server tool's input schema cannot be offered (the inputSchema rules), or None.

    With `budget`, the listing's shared work budget, the check takes its steps from it."""
    if budget is not None and budget.left <= 0:
        return LISTING_TOO_COMPLEX
    try:
        tenant_schemas.check_schema(schema, "inputSchema", budget)
    except ValidationFailed as exc:
        return exc.message
    if schema.get("type") != "object":
        return 'inputSchema.type: must be "object"'
    properties = schema.get("properties", {})
    for name in schema.get("required", []):
        if name not in properties:
            return f"inputSchema.required: {name!r} is not one of the properties"
    return None


def _description(tool: ListedTool) -> str:
    text = " ".join(tool.description.split()) or f"{tool.name} (a tool of an MCP server)"
    return text[:MAX_FUNCTION_DESCRIPTION_CHARS]


def preview(listed: list[ListedTool], prefix: str | None) -> list[dict[str, Any]]:
    """Every listed tool as the dashboard's checklist shows it: the server's name, the
    description, the schema, the name the model would see, and why it cannot be offered."""
    names = exposed_names(prefix, [t.name for t in listed]) if prefix else {}
    budget = tenant_schemas.WorkBudget(MAX_LISTING_STEPS)
    out = []
    for tool in listed:
        problem = _name_problem(tool.name) or schema_problem(tool.input_schema, budget)
        out.append(
            {
                "name": tool.name,
                "description": tool.description,
                "inputSchema": tool.input_schema,
                "exposedName": names.get(tool.name),
                "problem": problem,
            }
        )
    return out


def _name_problem(name: str) -> str | None:
    if not name.strip() or len(name) > MAX_SERVER_NAME_CHARS:
        return f"its name must be 1 to {MAX_SERVER_NAME_CHARS} characters"
    return None


def expose(listed: list[ListedTool], selection: list[str] | None, prefix: str) -> list[dict]:
    """The functions to store: the selected tools (all when `selection` is None), each
    `{name, serverName, description, inputSchema}`; ValidationFailed when a selected tool
    cannot be offered. Selected names the server no longer lists are left out."""
    by_name = {t.name: t for t in listed}
    chosen = (
        list(by_name.values())
        if selection is None
        else [by_name[n] for n in selection if n in by_name]
    )
    names = exposed_names(prefix, [t.name for t in chosen])
    budget = tenant_schemas.WorkBudget(MAX_LISTING_STEPS)
    functions = []
    for tool in chosen:
        problem = _name_problem(tool.name) or schema_problem(tool.input_schema, budget)
        if problem:
            raise ValidationFailed(
                f"mcpTools: the server's tool {tool.name[:100]!r} cannot be offered ({problem});"
                " leave it out with mcpTools"
            )
        functions.append(
            {
                "name": names[tool.name],
                "serverName": tool.name,
                "description": _description(tool),
                "inputSchema": tool.input_schema,
            }
        )
    seen = Counter(f["name"] for f in functions)
    clash = next((name for name, n in seen.items() if n > 1), None)
    if clash:
        raise ValidationFailed(f"mcpTools: two of the server's tools would both be named {clash}")
    return functions


async def checked_functions(
    listed: list[ListedTool], selection: list[str] | None, prefix: str, *, strict: bool
) -> list[dict]:
    """`expose` in a low-priority worker thread (schemas are checked against the
    metaschema, within the listing's work budget); with `strict`, a selected name the
    server does not list is refused (a typo on create). Call it before a write
    transaction, never inside one."""
    if strict and selection is not None:
        known = {t.name for t in listed}
        missing = [n for n in selection if n not in known]
        if missing:
            raise ValidationFailed(
                f"mcpTools: the server lists no tool named {missing[0][:100]!r}"
                f" (it lists {len(known)} tools)"
            )
    return await cpu.exchange(expose, listed, selection, prefix)


async def _filled_headers(
    secrets: secret_service.SecretsService, team_id: str, headers: Mapping[str, str]
) -> tuple[dict[str, str], secret_service.Scrubber]:
    """The headers with `{{NAME}}` filled from the team's secrets; ValueError naming what
    is missing or cannot be opened."""
    wanted = secret_service.placeholder_names(*headers.values())
    try:
        values = await secrets.reveal(team_id, wanted)
    except SecretBoxError as exc:
        raise ValueError("a secret used by this tool cannot be decrypted") from exc
    missing = sorted(wanted - set(values))
    if missing:
        raise ValueError(f"missing secret(s) {', '.join(missing)}: set them with PUT /secrets/NAME")
    filled = {
        name: secret_service.SECRET_PLACEHOLDER.sub(lambda m: values[m.group(1)], value)
        for name, value in headers.items()
    }
    # A header value with secrets in it is a secret too (as a whole: "Basic" + base64).
    templates = {filled[name]: value for name, value in headers.items() if filled[name] != value}
    return filled, secret_service.Scrubber(values, templates)


# A secret is looked for in exposed names (lowercased, other characters made `_`) once its
# own slug is this long: shorter ones would meet ordinary words.
MIN_SLUG_SECRET_CHARS = 8


def _scrubbed_json(value: Any, scrub: secret_service.Scrubber) -> Any:
    if isinstance(value, str):
        return scrub(value)
    if isinstance(value, dict):
        return {scrub(k): _scrubbed_json(v, scrub) for k, v in value.items()}
    if isinstance(value, list):
        return [_scrubbed_json(v, scrub) for v in value]
    return value


def without_secrets(listed: list[ListedTool], scrub: secret_service.Scrubber) -> list[ListedTool]:
    """The listing with every secret of the tool's mcpHeaders (each `{{NAME}}` value, and
    each header value once filled) replaced by its placeholder in descriptions and input
    schemas (keys and values); ValidationFailed naming mcpUrl when a tool's name carries
    one, as is or as the name the model and visitors would see."""
    if not scrub.values:
        return listed
    slugs = {
        name: _slug(value)
        for name, value in scrub.values.items()
        if len(_slug(value)) >= MIN_SLUG_SECRET_CHARS
    }
    out = []
    for tool in listed:
        carried = scrub.carried_by(tool.name)
        slug = _slug(tool.name)
        carried = carried or next(("{{" + n + "}}" for n, s in slugs.items() if s in slug), None)
        if carried:
            raise ValidationFailed(
                f"mcpUrl: the server lists a tool whose name holds the value of {carried}"
                " (from mcpHeaders); tool names are shown to visitors, so its tools cannot"
                " be offered"
            )
        try:
            schema = _scrubbed_json(tool.input_schema, scrub)
        except RecursionError:
            raise ValidationFailed(
                f"mcpUrl: the input schema of the server's tool {tool.name[:100]!r} nests too deep"
            ) from None
        out.append(ListedTool(tool.name, scrub(tool.description), schema))
    return out


async def list_server(
    secrets: secret_service.SecretsService,
    client: McpClient,
    team_id: str,
    url: str,
    headers: Mapping[str, str] | None,
) -> list[ListedTool]:
    """The server's tools with the headers' secrets scrubbed (`without_secrets`), or
    ValidationFailed naming mcpUrl (or mcpHeaders) and why."""
    try:
        filled, scrub = await _filled_headers(secrets, team_id, headers or {})
    except ValueError as exc:
        raise ValidationFailed(f"mcpHeaders: {exc}") from exc
    try:
        listed = await client.list_tools(url, filled)
    except McpFailure as exc:
        raise ValidationFailed(
            f"mcpUrl: could not list the MCP server's tools: {scrub(exc.message)}"
        ) from exc
    # Before anything listed is answered, stored or offered: a server may echo the headers.
    return await asyncio.to_thread(without_secrets, listed, scrub)


def function_of(tool: Tool) -> dict[str, Any] | None:
    """The stored function a per-function tool (see `offered`) stands for."""
    return next((f for f in tool.mcp_server_tools or () if f["name"] == tool.name), None)


def offered(tools: list[Tool]) -> list[Tool]:
    """The tools as the model is offered them: each MCP tool becomes one tool per function
    it exposes (its name, description and input schema), the others stay as they are."""
    out: list[Tool] = []
    for tool in tools:
        if tool.execution_type != "mcp":
            out.append(tool)
            continue
        for function in tool.mcp_server_tools or ():
            out.append(
                replace(
                    tool,
                    name=function["name"],
                    description=function["description"],
                    input_schema=function["inputSchema"],
                )
            )
    return out


def result_text(outcome: CallOutcome) -> str:
    """A call's result as the model reads it: text parts joined, other parts described."""
    parts: list[str] = []
    for block in outcome.content:
        kind = block.get("type")
        if kind == "text":
            parts.append(str(block.get("text", "")))
        elif kind in ("image", "audio"):
            size = len(str(block.get("data", ""))) * 3 // 4
            parts.append(f"[{kind} {block.get('mimeType', '')}, about {size} bytes, not shown]")
        elif kind == "resource_link":
            parts.append(f"[resource link {block.get('name', '')}: {block.get('uri', '')}]")
        elif kind == "resource":
            resource = block.get("resource") or {}
            uri = resource.get("uri", "")
            if "text" in resource:
                parts.append(f"[resource {uri}]\n{resource['text']}")
            else:
                parts.append(f"[resource {uri} ({resource.get('mimeType', 'binary')}), not shown]")
        else:
            parts.append(f"[{kind} content, not shown]")
    if not parts and outcome.structured is not None:
        parts.append(orjson.dumps(outcome.structured).decode())
    return "\n".join(parts)


async def call(
    secrets: secret_service.SecretsService, client: McpClient, tool: Tool, tool_input: dict
) -> tuple[str, bool]:
    """Call the function a per-function tool stands for; (text for the model, is_error).

    A missing secret fails before anything is sent; secret values never come back in the
    text (error messages included)."""
    function = function_of(tool)
    if function is None or not tool.mcp_url:
        return f"Tool {tool.name} is no longer offered by its MCP server", True
    try:
        filled, scrub = await _filled_headers(secrets, tool.team_id, tool.mcp_headers or {})
    except ValueError as exc:
        return f"MCP call failed: {exc}", True
    try:
        outcome = await client.call_tool(
            tool.mcp_url, filled, function["serverName"], tool_input, team=tool.team_id
        )
    except McpFailure as exc:
        return scrub(f"MCP call failed: {exc.message}"), True
    return scrub(result_text(outcome)), outcome.is_error
