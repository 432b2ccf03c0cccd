"""POST /mcp/:agentId: an agent as a Streamable HTTP MCP server (tools ask, search_knowledge).

The SDK's transport is an ASGI application; each request is handed to it as an ASGI call
(the body already read and checked by the route's model) and its answer becomes the aiohttp
response. The server runs stateless with JSON answers: every POST carries everything it
needs (no session to keep between requests or processes, no event stream to hold open),
so the route works behind several processes as every other route does. The caller is
authenticated and rate limited like every API route, and the agent must be its team's.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

import orjson
from aiohttp import web
from pydantic import Field
from pydantic.json_schema import SkipJsonSchema

from agentsvc.api import app_keys
from agentsvc.api.errors import error_body
from agentsvc.api.models import RequestModel, ResponseModel
from agentsvc.api.routing import Call, RouteTable
from agentsvc.services.agents.mcp_service import McpServerService

routes = RouteTable("mcp")

ACCEPT = "application/json, text/event-stream"


class JsonRpcRequest(RequestModel):
    """One JSON-RPC 2.0 message of an MCP client: a request (with `id`) or a notification."""

    jsonrpc: Literal["2.0"]
    id: (
        Annotated[int, Field(ge=-(2**53), le=2**53)]
        | Annotated[str, Field(min_length=1, max_length=200)]
        | SkipJsonSchema[None]
    ) = None
    method: Annotated[str, Field(min_length=1, max_length=200)]
    params: dict[str, Any] | SkipJsonSchema[None] = None


class JsonRpcError(ResponseModel):
    code: int
    message: str
    data: Any = None


class JsonRpcResponse(ResponseModel):
    jsonrpc: Literal["2.0"]
    id: int | str | None
    result: dict[str, Any] | None = None
    error: JsonRpcError | None = None


def _mcp(call: Call) -> McpServerService:
    return call.app[app_keys.mcp_server_key]


def _scope(request: web.Request, body: bytes) -> dict[str, Any]:
    headers = [
        (name.lower().encode("latin-1"), value.encode("latin-1"))
        for name, value in request.headers.items()
        if name.lower() not in ("content-type", "content-length", "accept", "host", "origin")
    ]
    # The body was read and checked as JSON; the SDK answers JSON (clients that only
    # accept JSON are served too).
    headers += [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
        (b"accept", ACCEPT.encode()),
        (b"host", b"agentsvc"),
    ]
    return {
        "type": "http",
        "asgi": {"version": "3.0", "spec_version": "2.3"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": request.path,
        "raw_path": request.raw_path.split("?", 1)[0].encode(),
        "query_string": b"",
        "root_path": "",
        "headers": headers,
        "client": (request.remote or "", 0),
        "server": ("agentsvc", 80),
        "state": {},
    }


async def _serve(server: Any, request: web.Request, body: bytes) -> web.Response:
    """Run the SDK's transport for one request and return its answer."""
    from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

    manager = StreamableHTTPSessionManager(
        app=server, stateless=True, json_response=True, session_idle_timeout=None
    )
    started: dict[str, Any] = {}
    chunks: list[bytes] = []
    delivered = False

    async def receive() -> dict[str, Any]:
        nonlocal delivered
        if not delivered:
            delivered = True
            return {"type": "http.request", "body": body, "more_body": False}
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            started.update(message)
        elif message["type"] == "http.response.body":
            chunks.append(message.get("body", b""))

    async with manager.run():
        await manager.handle_request(_scope(request, body), receive, send)
    status = started.get("status", 500)
    headers = {
        k.decode("latin-1"): v.decode("latin-1")
        for k, v in started.get("headers", [])
        if k.lower() in (b"content-type", b"mcp-protocol-version")
    }
    payload = b"".join(chunks)
    if status >= 400 and not headers.get("content-type", "").startswith("application/json"):
        # A transport refusal in plain text: said in the service's envelope instead.
        text = payload.decode("utf-8", "replace")[:200] or "The MCP request was refused"
        return web.Response(
            body=error_body("MCP_REQUEST_REFUSED", text),
            status=status,
            content_type="application/json",
        )
    return web.Response(body=payload, status=status, headers=headers)


@routes.post(
    "/mcp/{agentId}",
    body=JsonRpcRequest,
    response=JsonRpcResponse,
    errors=(404,),
    extra={
        "description": "Streamable HTTP MCP endpoint of the agent (stateless, JSON answers):"
        " tools `ask` {question, conversationId?} and `search_knowledge` {query, limit?}."
        " A notification is answered 202 with no body; JSON-RPC errors come in the body.",
        "other_successes": {202: "A notification, accepted (no body)"},
    },
)
async def post_mcp(call: Call):
    """Speak MCP (Streamable HTTP) with one of the team's agents."""
    # The SDK is loaded on the first MCP request, not at start-up (it takes about as long to
    # import as the rest of the service).
    server = await _mcp(call).server_for(call.team_id, call.params["agentId"])
    message: JsonRpcRequest = call.body
    body = orjson.dumps(message.model_dump(by_alias=True, exclude_unset=True))
    return await _serve(server, call.request, body)
