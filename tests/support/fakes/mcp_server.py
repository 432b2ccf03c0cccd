"""A real MCP server on 127.0.0.1: the SDK's low-level `Server` behind its own Streamable
HTTP app, served by uvicorn in the test's event loop.

Tools (the list is mutable: tests change it and the service refreshes):
- `get_order` {id}: "Order <id>: shipped" and an image part;
- `Search-Docs` {query}: a name the service has to map;
- `whoami`: the Authorization header it received;
- `fail`: an error result (isError); `crash`: the handler raises;
- `hang`: never answers; `huge` {size}: that many characters of text;
- with `echo`, one more tool repeating the Authorization header it was listed with.

With `sessions=True` it is a 2025-era server: stateful (`Mcp-Session-Id`, idle sessions
expire after `session_idle_timeout` seconds) and refusing the 2026 protocol's
`server/discover` probe as such servers do (400), so clients fall back to `initialize`.
`http` lists every HTTP request as (method, session id sent), `call_sessions` the session
of each tool call; `restart()` starts it again on its port, with every session forgotten.

Beside `/mcp`, raw routes misbehave at the HTTP level: `/redirect` (307 to /mcp, same
origin: the SDK alone would follow it), `/status/{code}`, `/endless` (an event stream that
never ends, as fast as it can) and `/trickle` (one small event a second).
"""

from __future__ import annotations

import asyncio
import base64
import socket
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the SDK, starlette and uvicorn load when a server starts (a second of
    # imports that every test process would otherwise pay when it collects the suite)
    import mcp_types as types
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import Response

ORDER_SCHEMA = {
    "type": "object",
    "properties": {"id": {"type": "string", "description": "The order id"}},
    "required": ["id"],
}
QUERY_SCHEMA = {"type": "object", "properties": {"query": {"type": "string"}}}
EMPTY_SCHEMA = {"type": "object", "properties": {}}
SIZE_SCHEMA = {"type": "object", "properties": {"size": {"type": "integer"}}}


def default_tools() -> dict[str, tuple[str, dict[str, Any]]]:
    """Name -> (description, input schema)."""
    return {
        "get_order": ("Look up an order by id", ORDER_SCHEMA),
        "Search-Docs": ("Search the shop's documentation", QUERY_SCHEMA),
        "whoami": ("Tell who is calling", EMPTY_SCHEMA),
        "fail": ("Always fails", EMPTY_SCHEMA),
        "crash": ("Raises", EMPTY_SCHEMA),
        "hang": ("Never answers", EMPTY_SCHEMA),
        "huge": ("Answers a lot of text", SIZE_SCHEMA),
    }


@dataclass
class FakeMcpServer:
    """Start with `await FakeMcpServer().start()`; `url` is its MCP endpoint."""

    json_response: bool = False
    tools: dict[str, tuple[str, dict[str, Any]]] = field(default_factory=default_tools)
    calls: list[tuple[str, dict[str, Any], str | None]] = field(default_factory=list)
    # The W3C traceparent each tool call arrived with (None: none).
    traceparents: list[str | None] = field(default_factory=list)
    requests: int = 0
    port: int = 0
    # Echoing mode: where the listing repeats the Authorization header it received
    # ("description", "schema", "name", "slug_name": the token part with `-` made `_`,
    # "base64": the description carries the header's token base64-encoded).
    echo: tuple[str, ...] = ()
    sessions: bool = False
    session_idle_timeout: float | None = None
    http: list[tuple[str, str | None]] = field(default_factory=list)
    call_sessions: list[str | None] = field(default_factory=list)

    async def _list_tools(self, ctx, params) -> types.ListToolsResult:
        import mcp_types as types

        listed = [
            types.Tool(name=name, description=description, input_schema=schema)
            for name, (description, schema) in self.tools.items()
        ]
        if self.echo:
            auth = ctx.request.headers.get("authorization", "") if ctx.request else ""
            listed.append(_echoing_tool(auth, self.echo))
        return types.ListToolsResult(tools=listed)

    async def _call_tool(self, ctx, params) -> types.CallToolResult:
        import mcp_types as types

        name, args = params.name, params.arguments or {}
        auth = ctx.request.headers.get("authorization") if ctx.request is not None else None
        self.calls.append((name, args, auth))
        headers = ctx.request.headers if ctx.request is not None else {}
        self.traceparents.append(headers.get("traceparent"))
        self.call_sessions.append(headers.get("mcp-session-id"))
        if name == "echo" and self.echo:
            return _text("echoed")
        if name not in self.tools:
            return _text(f"Unknown tool: {name}", error=True)
        if name == "get_order":
            return types.CallToolResult(
                content=[
                    types.TextContent(type="text", text=f"Order {args.get('id')}: shipped"),
                    types.ImageContent(type="image", data="aGVsbG8=", mime_type="image/png"),
                ]
            )
        if name == "Search-Docs":
            return _text(f"Found 2 pages about {args.get('query')}")
        if name == "whoami":
            return _text(f"Authorization: {auth}")
        if name == "fail":
            return _text("The order system is down", error=True)
        if name == "crash":
            raise RuntimeError("database connection lost")
        if name == "hang":
            await self._released.wait()
        if name == "huge":
            return _text("x" * int(args.get("size", 5_000_000)))
        return _text("ok")

    def app(self) -> Starlette:
        from mcp.server import Server
        from starlette.applications import Starlette
        from starlette.responses import RedirectResponse, Response, StreamingResponse
        from starlette.routing import Mount, Route

        server = Server("fake-shop", on_list_tools=self._list_tools, on_call_tool=self._call_tool)
        mcp_app = server.streamable_http_app(
            json_response=self.json_response,
            stateless_http=not self.sessions,
            session_idle_timeout=self.session_idle_timeout,
            streamable_http_path="/mcp",
        )

        async def redirect(request: Request) -> Response:
            return RedirectResponse("/mcp", status_code=307)

        async def status(request: Request) -> Response:
            return Response("no", status_code=int(request.path_params["code"]))

        async def endless(request: Request) -> Response:
            async def events():
                comment = b": " + b"x" * 65536 + b"\n\n"  # ignored by parsers, not by caps
                while True:
                    yield comment
                    await asyncio.sleep(0)

            return StreamingResponse(events(), media_type="text/event-stream")

        async def trickle(request: Request) -> Response:
            async def events():
                while True:
                    yield b": still here\n\n"
                    await asyncio.sleep(1)

            return StreamingResponse(events(), media_type="text/event-stream")

        async def count(scope, receive, send):
            self.requests += 1
            headers = dict(scope.get("headers") or [])
            session = headers.get(b"mcp-session-id")
            self.http.append((scope.get("method", ""), session and session.decode()))
            version = headers.get(b"mcp-protocol-version", b"").decode()
            if self.sessions and version and version[:4] >= "2026":
                await _unsupported_version(version)(scope, receive, send)
                return
            await mcp_app(scope, receive, send)

        return Starlette(
            routes=[
                Route("/redirect", redirect, methods=["GET", "POST", "DELETE"]),
                Route("/status/{code}", status, methods=["GET", "POST", "DELETE"]),
                Route("/endless", endless, methods=["GET", "POST", "DELETE"]),
                Route("/trickle", trickle, methods=["GET", "POST", "DELETE"]),
                Mount("/", app=count),
            ],
            lifespan=lambda app: server.session_manager.run(),
        )

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    def address(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    async def start(self) -> FakeMcpServer:
        import uvicorn

        self._released = asyncio.Event()
        # IPPROTO_TCP named: asyncio then sets TCP_NODELAY on each accepted connection, as
        # on a socket uvicorn binds itself (with protocol 0 it does not, and each answer's
        # body waits ~40 ms for the ACK of its headers: Nagle against delayed ACKs).
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # a restart on its port
        sock.bind(("127.0.0.1", self.port))
        self.port = sock.getsockname()[1]
        config = uvicorn.Config(
            self.app(), log_level="error", lifespan="on", timeout_graceful_shutdown=1
        )
        self._server = uvicorn.Server(config)
        self._task = asyncio.create_task(self._server.serve(sockets=[sock]))
        while not self._server.started:
            if self._task.done():
                self._task.result()
            await asyncio.sleep(0.01)
        return self

    async def close(self) -> None:
        self._released.set()  # a hanging call ends, so the server can stop
        self._server.should_exit = True
        await self._task

    async def restart(self) -> FakeMcpServer:
        """Stop and start again on the same port: every session is forgotten."""
        await self.close()
        return await self.start()

    def sessions_called(self) -> int:
        """How many sessions the tool calls came on (2025 era)."""
        return len(set(self.call_sessions))


def _unsupported_version(version: str) -> Response:
    """A 2025-era server's answer to a protocol version it does not know."""
    from starlette.responses import JSONResponse

    error = {"code": -32600, "message": f"Bad Request: Unsupported protocol version: {version}"}
    return JSONResponse({"jsonrpc": "2.0", "id": "server-error", "error": error}, status_code=400)


def _text(text: str, error: bool = False) -> types.CallToolResult:
    import mcp_types as types

    return types.CallToolResult(content=[types.TextContent(type="text", text=text)], is_error=error)


def _echoing_tool(auth: str, places: tuple[str, ...]) -> types.Tool:
    """A tool that repeats the Authorization header it was listed with where `places` say."""
    import mcp_types as types

    token = auth.removeprefix("Bearer ")
    name = "echo"
    if "name" in places:
        name = f"echo {auth}"
    elif "slug_name" in places:
        name = "echo_" + token.replace("-", "_")
    description = "Echoes the caller"
    if "description" in places:
        description = f"Called with Authorization: {auth} (token {token})"
    if "base64" in places:
        description += " as base64: " + base64.b64encode(token.encode()).decode()
    schema: dict[str, Any] = {"type": "object", "properties": {}}
    if "schema" in places:
        schema = {
            "type": "object",
            "description": f"auth {auth}",
            "properties": {
                token: {"type": "string", "default": token, "enum": [token, "x"]},
                "note": {"type": "string", "description": f"sent {auth}"},
            },
            "required": [token],
        }
    return types.Tool(name=name, description=description, input_schema=schema)
