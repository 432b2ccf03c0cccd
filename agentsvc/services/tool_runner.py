"""Running a tool the model called: validate its input, then mock or HTTP call.

Form tools are not run here: the chat loop shows the form and ends the turn.
"""

from __future__ import annotations

import asyncio
import logging
import re
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

import orjson

from agentsvc.db import Database
from agentsvc.outbound import OutboundClient, OutboundError
from agentsvc.secretbox import SecretBox, SecretBoxError
from agentsvc.services import secrets as secret_service
from agentsvc.services.tenant_schemas import validation_errors
from agentsvc.store.tools import Tool

log = logging.getLogger(__name__)

# `{{SECRET}}` and `{param}` in one pattern, so a filled-in value is never scanned again.
_URL_PLACEHOLDER = re.compile(
    r"\{\{\s*(?P<secret>[A-Za-z_][A-Za-z0-9_]{0,63})\s*\}\}|\{(?P<param>[A-Za-z_][A-Za-z0-9_]*)\}"
)
QUERY_METHODS = frozenset({"GET", "DELETE"})


@dataclass(frozen=True)
class ToolResult:
    """What a tool call produced: JSON-able output, and whether it is an error."""

    output: Any
    is_error: bool


def _query_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return value
    if isinstance(value, int | float):
        return str(value)
    return orjson.dumps(value).decode()


def query_items(values: dict[str, Any]) -> list[tuple[str, str]]:
    """Input parameters as query items (a list repeats its key; null is left out)."""
    items: list[tuple[str, str]] = []
    for key, value in values.items():
        if value is None:
            continue
        if isinstance(value, list):
            items.extend((key, _query_value(v)) for v in value)
        else:
            items.append((key, _query_value(value)))
    return items


def _parse_body(text: str) -> Any:
    try:
        value = orjson.loads(text)
        # Shown in the stream and stored as JSON: an output its encoder refuses (nested
        # over 255 levels) stays text.
        orjson.dumps(value)
    except (orjson.JSONDecodeError, TypeError):
        return text
    return value


class ToolRunner:
    """Run tools for the chat loop with the app's database, secret box and outbound client."""

    def __init__(self, db: Database, box: SecretBox, outbound: OutboundClient):
        self._db = db
        self._box = box
        self._outbound = outbound

    async def run(self, tool: Tool, tool_input: dict) -> ToolResult:
        """Validate the input against the tool's inputSchema, then run the tool."""
        if not isinstance(tool_input, dict):
            return ToolResult("Invalid input: the input must be a JSON object", True)
        # Bounded, but up to a fraction of a second on a big input: off the event loop.
        problems = await asyncio.to_thread(validation_errors, tool.input_schema, tool_input)
        if problems:
            return ToolResult(f"Invalid input for tool {tool.name}: " + "; ".join(problems), True)
        if tool.execution_type == "mock":
            return self._run_mock(tool)
        if tool.execution_type == "http":
            return await self._run_http(tool, tool_input)
        return ToolResult(f"Tool {tool.name} is a form: it is shown to the user, not run", True)

    @staticmethod
    def _run_mock(tool: Tool) -> ToolResult:
        return ToolResult(_parse_body(tool.mock_response or ""), False)

    async def _run_http(self, tool: Tool, tool_input: dict) -> ToolResult:
        headers = tool.http_headers or {}
        url_template = tool.http_url or ""
        wanted = secret_service.placeholder_names(url_template, *headers.values())
        try:
            values = await secret_service.reveal(self._db, self._box, tool.team_id, wanted)
        except SecretBoxError:
            log.warning("tool %s: a team secret cannot be decrypted with this key", tool.id)
            return ToolResult("A secret used by this tool cannot be decrypted", True)
        missing = sorted(wanted - set(values))
        if missing:
            names = ", ".join(missing)
            return ToolResult(f"Missing secret(s) {names}: set them with PUT /secrets/NAME", True)

        used_params: set[str] = set()
        unfilled: list[str] = []

        def fill_url(match: re.Match[str]) -> str:
            if match.group("secret"):
                return quote(values[match.group("secret")], safe="")
            name = match.group("param")
            if tool_input.get(name) is None:
                unfilled.append(name)
                return ""
            used_params.add(name)
            return quote(_query_value(tool_input[name]), safe="")

        url = _URL_PLACEHOLDER.sub(fill_url, url_template)
        if unfilled:
            return ToolResult(
                f"Missing input parameter(s) for the URL: {', '.join(unfilled)}", True
            )
        sent_headers = {
            name: secret_service.SECRET_PLACEHOLDER.sub(lambda m: values[m.group(1)], value)
            for name, value in headers.items()
        }
        rest = {k: v for k, v in tool_input.items() if k not in used_params}
        method = (tool.http_method or "GET").upper()
        try:
            if method in QUERY_METHODS:
                resp = await self._outbound.request(
                    method, url, headers=sent_headers, params=query_items(rest)
                )
            else:
                resp = await self._outbound.request(method, url, headers=sent_headers, json=rest)
        except OutboundError as exc:
            return ToolResult(f"HTTP call failed: {exc.message}", True)
        output: dict[str, Any] = {"status": resp.status, "body": _parse_body(resp.text())}
        if resp.truncated:
            output["truncated"] = True
        return ToolResult(output, not resp.ok)
