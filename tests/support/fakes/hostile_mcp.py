"""A hostile MCP server on 127.0.0.1 (a raw aiohttp app): it answers the handshake as MCP
requires, then answers `tools/list` and `tools/call` with what `mode` says:

- `not_json`: a JSON content type around a body that is not JSON;
- `not_jsonrpc`: JSON that is no JSON-RPC message;
- `html`: an HTML page;
- `bad_result`: a JSON-RPC result of the wrong shape (a tool whose name is a number);
- `sse_garbage`: an event stream whose event is not JSON;
- `too_deep`: JSON nested 3,000 levels deep;
- `long_error`: a JSON-RPC error whose message runs over many lines;
- `drops_calls`: answers the first `tools/call`, then closes the connection on each one
  it has received (`calls` counts them): the call may have run, so it must not be resent.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from aiohttp import web

INITIALIZED = {
    "protocolVersion": "2025-06-18",
    "capabilities": {"tools": {}},
    "serverInfo": {"name": "hostile", "version": "1"},
}
LONG_ERROR = "Traceback (most recent call last):\n  File 'x.py'\n" + "boom " * 400


@dataclass
class HostileMcp:
    """Build with a mode; `app()` is served by the test's `aiohttp_server`."""

    mode: str
    calls: int = 0

    async def _post(self, request: web.Request) -> web.Response:
        message = await request.json()
        if "id" not in message:
            return web.Response(status=202)  # a notification
        rid, method = message["id"], message.get("method")
        if method in ("initialize", "server/discover"):
            return web.json_response({"jsonrpc": "2.0", "id": rid, "result": INITIALIZED})
        if method not in ("tools/list", "tools/call"):
            return web.json_response({"jsonrpc": "2.0", "id": rid, "result": {}})
        if method == "tools/call" and self.mode == "drops_calls":
            self.calls += 1
            if self.calls > 1 and request.transport is not None:
                request.transport.close()  # received, and no answer will come
            done = {"content": [{"type": "text", "text": "done"}]}
            return web.json_response({"jsonrpc": "2.0", "id": rid, "result": done})
        if method == "tools/call" or self.mode not in ("fine", "drops_calls"):
            return self._hostile(rid)
        tool = {"name": "lookup", "inputSchema": {"type": "object", "properties": {}}}
        return web.json_response({"jsonrpc": "2.0", "id": rid, "result": {"tools": [tool]}})

    def _hostile(self, rid: int | str) -> web.Response:
        if self.mode == "not_json":
            return web.Response(text="{'not': json", content_type="application/json")
        if self.mode == "not_jsonrpc":
            return web.json_response({"hello": "world"})
        if self.mode == "html":
            return web.Response(text="<html><body>Login</body></html>", content_type="text/html")
        if self.mode == "bad_result":
            result = {"tools": [{"name": 42, "inputSchema": "none"}], "content": 7}
            return web.json_response({"jsonrpc": "2.0", "id": rid, "result": result})
        if self.mode == "too_deep":
            deep = '{"a":' * 3000 + "1" + "}" * 3000
            text = f'{{"jsonrpc":"2.0","id":{json.dumps(rid)},"result":{deep}}}'
            return web.Response(text=text, content_type="application/json")
        if self.mode == "sse_garbage":
            return web.Response(
                text="event: message\ndata: {oops\n\n", content_type="text/event-stream"
            )
        error = {"code": -32000, "message": LONG_ERROR}
        return web.json_response({"jsonrpc": "2.0", "id": rid, "error": error})

    async def _no_stream(self, request: web.Request) -> web.Response:
        return web.Response(status=405)

    def app(self) -> web.Application:
        app = web.Application()
        app.router.add_post("/mcp", self._post)
        app.router.add_route("*", "/mcp", self._no_stream)
        return app
