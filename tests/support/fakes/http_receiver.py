"""A real HTTP server on 127.0.0.1 that records every request (for tools and webhooks)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web


@dataclass
class Received:
    method: str
    path: str
    query: list[tuple[str, str]]
    headers: dict[str, str]
    body: bytes
    raw_query: str = ""  # the query string exactly as sent


@dataclass
class HttpReceiver:
    """Records requests; routes: /echo, /status/{code}, /big/{bytes}, /redirect, /slow."""

    requests: list[Received] = field(default_factory=list)
    app: web.Application = field(init=False)

    def __post_init__(self) -> None:
        self.app = web.Application()
        self.app.router.add_route("*", "/status/{code}", self._status)
        self.app.router.add_route("*", "/big/{size}", self._big)
        self.app.router.add_route("*", "/redirect", self._redirect)
        self.app.router.add_route("*", "/slow", self._slow)
        self.app.router.add_route("*", "/text", self._text)
        self.app.router.add_route("*", "/{tail:.*}", self._echo)

    async def _record(self, request: web.Request) -> Received:
        item = Received(
            method=request.method,
            path=request.raw_path.split("?", 1)[0],
            query=list(request.query.items()),
            headers=dict(request.headers),
            body=await request.read(),
            raw_query=request.raw_path.partition("?")[2],
        )
        self.requests.append(item)
        return item

    async def _echo(self, request: web.Request) -> web.Response:
        item = await self._record(request)
        payload: dict[str, Any] = {
            "method": item.method,
            "path": item.path,
            "query": item.query,
            "body": item.body.decode(),
        }
        return web.json_response(payload)

    async def _status(self, request: web.Request) -> web.Response:
        await self._record(request)
        return web.json_response({"error": "nope"}, status=int(request.match_info["code"]))

    async def _big(self, request: web.Request) -> web.Response:
        await self._record(request)
        return web.Response(body=b"x" * int(request.match_info["size"]))

    async def _redirect(self, request: web.Request) -> web.Response:
        await self._record(request)
        raise web.HTTPFound("/echo")

    async def _slow(self, request: web.Request) -> web.Response:
        await self._record(request)
        await asyncio.sleep(5)
        return web.Response(text="late")

    async def _text(self, request: web.Request) -> web.Response:
        await self._record(request)
        return web.Response(text="plain words")
