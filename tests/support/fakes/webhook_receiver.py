"""A real webhook receiver on 127.0.0.1: succeeds, fails, is slow, or answers 410 by path.

Paths: /ok (200 and a body), /fail (500), /slow (sleeps `slow_seconds`, then 200), /gone
(410), /flaky (503 for the first `flaky_failures` requests, with `Retry-After` when set,
then 200). Every request is
recorded (headers and raw body) before it is answered.
"""

from __future__ import annotations

import asyncio
import socket
from dataclasses import dataclass, field

import orjson
from aiohttp import web


@dataclass
class Hook:
    path: str
    headers: dict[str, str]
    body: bytes

    @property
    def json(self):
        return orjson.loads(self.body)


@dataclass
class WebhookReceiver:
    """Start with `await receiver.start()` (optionally on a chosen port); stop with close()."""

    slow_seconds: float = 2.0
    flaky_failures: int = 2
    ok_body: str = '{"received": true}'
    retry_after: str | None = None  # the Retry-After header of /flaky's 503s
    hooks: list[Hook] = field(default_factory=list)
    port: int = 0
    host: str = "127.0.0.1"  # another address (a test bridge's) for receivers on other hosts
    _runner: web.AppRunner | None = None
    _arrived: asyncio.Condition = field(default_factory=asyncio.Condition)
    _closing: asyncio.Event = field(default_factory=asyncio.Event)

    def url(self, path: str) -> str:
        return f"http://{self.host}:{self.port}{path}"

    def at(self, path: str) -> list[Hook]:
        return [h for h in self.hooks if h.path == path]

    async def _handle(self, request: web.Request) -> web.Response:
        hook = Hook(request.path, dict(request.headers), await request.read())
        async with self._arrived:
            self.hooks.append(hook)
            self._arrived.notify_all()
        name = request.match_info["name"]
        if name == "fail":
            return web.Response(status=500, text="receiver broke")
        if name == "gone":
            return web.Response(status=410, text="no longer here")
        if name == "slow" and self.slow_seconds > 0:
            # Ends early when the receiver closes, so close() never waits for a sleeper.
            try:
                await asyncio.wait_for(self._closing.wait(), self.slow_seconds)
            except TimeoutError:
                pass
        if name == "flaky" and len(self.at(request.path)) <= self.flaky_failures:
            wait = {"Retry-After": self.retry_after} if self.retry_after else None
            return web.Response(status=503, text="try later", headers=wait)
        return web.Response(text=self.ok_body, content_type="application/json")

    async def start(self, port: int = 0) -> WebhookReceiver:
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_post("/{name}", self._handle)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.host, port)
        await site.start()
        self.port = self._runner.addresses[0][1]
        return self

    async def close(self) -> None:
        self._closing.set()
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def wait_for(self, count: int, path: str | None = None, timeout: float = 10) -> None:
        """Wait until `count` requests (to `path`, if given) have arrived."""

        def enough() -> bool:
            return len(self.at(path) if path else self.hooks) >= count

        async with self._arrived:
            await asyncio.wait_for(self._arrived.wait_for(enough), timeout)


def free_port() -> int:
    """A loopback port nobody listens on (a receiver that is down)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
