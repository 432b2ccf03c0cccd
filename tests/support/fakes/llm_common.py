"""Shared machinery of the fake model providers: scripted replies written byte by byte."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

import orjson
from aiohttp import web
from aiohttp.test_utils import TestServer


@dataclass
class Reply:
    """One scripted answer: an error status before any stream, or raw stream writes."""

    writes: list[bytes] = field(default_factory=list)
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    body: Any = None  # JSON body of an error status
    drop: bool = False  # close the connection after the writes, without ending the stream
    pause: float = 0.0  # seconds between writes, so each arrives as its own read
    delay: float = 0.0  # seconds before answering at all


def split_every(data: bytes, size: int) -> list[bytes]:
    """Cut bytes into pieces of `size` (JSON and lines split across writes)."""
    return [data[i : i + size] for i in range(0, len(data), size)]


def sse(data: Any, event: str | None = None, crlf: bool = False, space: bool = True) -> bytes:
    """Frame one event as a provider writes it."""
    nl = "\r\n" if crlf else "\n"
    payload = data if isinstance(data, str) else orjson.dumps(data).decode()
    sep = ": " if space else ":"
    head = f"event{sep}{event}{nl}" if event else ""
    return f"{head}data{sep}{payload}{nl}{nl}".encode()


class FakeProvider:
    """A real aiohttp app on 127.0.0.1 replaying scripted replies in order."""

    path = "/"

    def __init__(self) -> None:
        self.replies: list[Reply] = []
        self.requests: list[dict[str, Any]] = []
        # A benchmark's server: this reply to every request, and no request kept.
        self.always: Reply | None = None
        self.server: TestServer | None = None
        app = web.Application()
        app.router.add_post(self.path, self._handle)
        self.app = app

    @property
    def url(self) -> str:
        assert self.server is not None
        return f"http://127.0.0.1:{self.server.port}"

    def script(self, *replies: Reply) -> None:
        """Queue replies; each request takes the next one."""
        self.replies.extend(replies)

    async def start(self) -> FakeProvider:
        self.server = TestServer(self.app, host="127.0.0.1")
        await self.server.start_server()
        return self

    async def close(self) -> None:
        if self.server is not None:
            await self.server.close()

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        if self.always is not None:
            await request.read()
            reply = self.always
        else:
            self.requests.append(
                {
                    "headers": dict(request.headers),
                    "json": await request.json(),
                    "path": request.path,
                }
            )
            if not self.replies:
                return web.json_response({"error": {"message": "no scripted reply"}}, status=500)
            reply = self.replies.pop(0)
        if reply.delay:
            await asyncio.sleep(reply.delay)
        if reply.status != 200:
            return web.json_response(reply.body or {}, status=reply.status, headers=reply.headers)
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream", **reply.headers})
        await resp.prepare(request)
        for chunk in reply.writes:
            await resp.write(chunk)
            if reply.pause:
                await asyncio.sleep(reply.pause)
        if reply.drop:
            assert request.transport is not None
            request.transport.abort()
            raise asyncio.CancelledError  # the connection is gone; nothing more to send
        await resp.write_eof()
        return resp
