"""Running a tool the model called: validate its input, then mock, HTTP or MCP call.

Form tools are not run here: the chat loop shows the form and ends the turn.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import Any

import orjson

from agentsvc.db import Database
from agentsvc.mcp_client import McpClient
from agentsvc.outbound import OutboundClient, OutboundError
from agentsvc.secretbox import SecretBox, SecretBoxError
from agentsvc.services.tenant_input.schemas import validation_errors
from agentsvc.services.tools import mcp as mcp_service
from agentsvc.services.tools import secrets as secret_service
from agentsvc.services.tools.url import UrlRefused, add_query, build_url, input_text
from agentsvc.store.tools import Tool

log = logging.getLogger(__name__)

QUERY_METHODS = frozenset({"GET", "DELETE"})


@dataclass(frozen=True)
class ToolResult:
    """What a tool call produced: JSON-able output, and whether it is an error."""

    output: Any
    is_error: bool


def query_items(values: dict[str, Any]) -> list[tuple[str, str]]:
    """Input parameters as query items (a list repeats its key; null is left out)."""
    items: list[tuple[str, str]] = []
    for key, value in values.items():
        if value is None:
            continue
        if isinstance(value, list):
            items.extend((key, input_text(v)) for v in value)
        else:
            items.append((key, input_text(value)))
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


def _scrubbed(result: ToolResult, scrub: secret_service.Scrubber) -> ToolResult:
    """The result with every secret value replaced by its `{{NAME}}` (output is shown)."""
    if isinstance(result.output, str):
        return ToolResult(scrub(result.output), result.is_error)
    return result


class ToolRunner:
    """Run tools for the chat loop with the app's database, secret box and outbound client."""

    def __init__(
        self,
        db: Database,
        box: SecretBox,
        outbound: OutboundClient,
        mcp: McpClient | None = None,
    ):
        self._secrets = secret_service.SecretsService(db, box)
        self._outbound = outbound
        self._mcp = mcp

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
        if tool.execution_type == "mcp" and self._mcp is not None:
            text, failed = await mcp_service.call(self._secrets, self._mcp, tool, tool_input)
            return ToolResult(text, failed)
        return ToolResult(f"Tool {tool.name} is a form: it is shown to the user, not run", True)

    @staticmethod
    def _run_mock(tool: Tool) -> ToolResult:
        return ToolResult(_parse_body(tool.mock_response or ""), False)

    async def _run_http(self, tool: Tool, tool_input: dict) -> ToolResult:
        headers = tool.http_headers or {}
        url_template = tool.http_url or ""
        wanted = secret_service.placeholder_names(url_template, *headers.values())
        try:
            values = await self._secrets.reveal(tool.team_id, wanted)
        except SecretBoxError:
            log.warning("tool %s: a team secret cannot be decrypted with this key", tool.id)
            return ToolResult("A secret used by this tool cannot be decrypted", True)
        missing = sorted(wanted - set(values))
        if missing:
            names = ", ".join(missing)
            return ToolResult(f"Missing secret(s) {names}: set them with PUT /secrets/NAME", True)
        # The output goes to the model, the visitor and the transcript: no secret value may
        # come back in it, whether from an error message (a host) or an echoing server.
        scrub = secret_service.Scrubber(values)
        result = await self._send(tool, tool_input, headers, values, scrub)
        return _scrubbed(result, scrub)

    async def _send(
        self,
        tool: Tool,
        tool_input: dict,
        headers: dict[str, str],
        values: dict[str, str],
        scrub: secret_service.Scrubber,
    ) -> ToolResult:
        method = (tool.http_method or "GET").upper()
        try:
            built = build_url(tool.http_url or "", values, tool_input)
            rest = {k: v for k, v in tool_input.items() if k not in built.used_params}
            url = built.url
            if method in QUERY_METHODS:
                url = add_query(url, query_items(rest))
        except UrlRefused as exc:
            return ToolResult(exc.message, True)
        sent_headers = {
            name: secret_service.SECRET_PLACEHOLDER.sub(lambda m: values[m.group(1)], value)
            for name, value in headers.items()
        }
        body = None if method in QUERY_METHODS else rest
        try:
            resp = await self._outbound.request(method, url, headers=sent_headers, json=body)
        except OutboundError as exc:
            return ToolResult(f"HTTP call failed: {exc.message}", True)
        # Scrubbed before parsing, so a value echoed inside a number or a key goes as well.
        text = scrub.cut(resp.text()) if resp.truncated else scrub(resp.text())
        output: dict[str, Any] = {"status": resp.status, "body": _parse_body(text)}
        if resp.truncated:
            output["truncated"] = True
        return ToolResult(output, not resp.ok)
