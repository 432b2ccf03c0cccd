"""The widget's browser-test stack: the real app, a host site and a webhook receiver.

One server thread runs three aiohttp apps on free ports of 127.0.0.1: the service, a host
site of another origin that embeds the widget with the documented snippet, and a webhook
receiver (tests/browser/conftest.py starts it once for the package).
"""

from __future__ import annotations

import asyncio
import json
import threading
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aiohttp import web

from agentsvc.api import app_keys
from agentsvc.api.widget import embed_snippet
from agentsvc.app import create_app
from agentsvc.services.team import accounts
from tests.support.fakes.webhook_receiver import free_port
from tests.support.settings import make_settings


@dataclass
class HostSite:
    """The embedding site: every path answers the current page (so tests pick their paths)."""

    body_html: str = ""
    head_html: str = ""
    lang: str = ""  # the page's <html lang>, when set

    def render(self) -> str:
        lang = f" lang='{self.lang}'" if self.lang else ""
        return (
            f"<!doctype html><html{lang}><head><meta charset='utf-8'><title>Host</title>"
            "<style>body{font-family:serif;color:red} button{background:lime}</style>"
            f"{self.head_html}</head><body>{self.body_html}</body></html>"
        )


@dataclass
class Receiver:
    """A webhook receiver that records every request and answers 200."""

    received: list[dict[str, Any]] = field(default_factory=list)

    async def handle(self, request: web.Request) -> web.Response:
        self.received.append(
            {"path": request.path, "headers": dict(request.headers), "body": await request.json()}
        )
        return web.json_response({"ok": True})


class Stack:
    """The running service, host site and receiver, with a small JSON client for set-up."""

    def __init__(self, tmp: Path):
        self.tmp = tmp
        self.loop = asyncio.new_event_loop()
        self.host = HostSite()
        self.receiver = Receiver()
        self.runners: list[web.AppRunner] = []
        self.app: web.Application | None = None
        self.api_url = self.host_url = self.receiver_url = ""
        self.key = ""
        self._thread = threading.Thread(target=self.loop.run_forever, daemon=True)

    def run(self, coro) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout=30)

    def start(self) -> None:
        self._thread.start()
        api_port = free_port()
        settings = make_settings(
            self.tmp,
            webhooks={"retry_schedule_seconds": [0, 0.2]},
            ratelimit={
                "trigger_events_per_minute": 100000,
                "public_chat_per_minute": 100000,
                "form_submits_per_minute": 100000,
            },
            chat={"builtin_chunk_delay_ms": 60, "keepalive_seconds": 0.5},
            # A visitor who left a call waiting lets go of it within a second.
            approvals={"lease_seconds": 1, "sweep_seconds": 0.2},
            # Pages the service renders (the demo page) name public_url: the real address.
            server={"public_url": f"http://127.0.0.1:{api_port}"},
        )
        self.app = create_app(settings)
        self.api_url = self.run(self._serve(self.app, api_port))
        host_app = web.Application()
        host_app.router.add_get("/{tail:.*}", self._host_page)
        self.host_url = self.run(self._serve(host_app))
        receiver_app = web.Application()
        receiver_app.router.add_post("/{tail:.*}", self.receiver.handle)
        self.receiver_url = self.run(self._serve(receiver_app))
        self.key = self.run(self._new_key())

    async def _serve(self, app: web.Application, port: int = 0) -> str:
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", port)
        await site.start()
        self.runners.append(runner)
        port = runner.addresses[0][1]
        return f"http://127.0.0.1:{port}"

    async def _new_key(self) -> str:
        db = self.app[app_keys.db_key]
        user, team = await accounts.ensure_user_with_team(
            db, email="owner@example.com", name="", plan="pro"
        )
        async with db.write() as conn:
            created = await accounts.create_api_key(
                conn, team_id=team.id, user_id=user.id, name="b"
            )
        return created.key

    async def _host_page(self, request: web.Request) -> web.Response:
        return web.Response(text=self.host.render(), content_type="text/html")

    def stop(self) -> None:
        async def cleanup():
            for runner in reversed(self.runners):
                await runner.cleanup()

        self.run(cleanup())
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(timeout=10)
        self.loop.close()

    def api(self, method: str, path: str, body: Any = None, auth: bool = True) -> Any:
        """Call the service's API (JSON in, JSON out); raise on a non-2xx answer."""
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.api_url + "/api/v1" + path, data=data, method=method)
        req.add_header("Content-Type", "application/json")
        if auth:
            req.add_header("Authorization", f"Bearer {self.key}")
        try:
            with urllib.request.urlopen(req, timeout=30) as resp:
                raw = resp.read()
        except urllib.error.HTTPError as exc:
            raise AssertionError(f"{method} {path}: {exc.code} {exc.read()!r}") from exc
        return json.loads(raw) if raw else None

    def embed(self, config: dict[str, Any], *, before: str = "", after: str = "") -> None:
        """Make the host site embed the widget with the README's snippet."""
        snippet = embed_snippet(config, self.api_url + "/widget.js")
        self.host.head_html = before + snippet + after

    def new_agent(self, prompt: str = "We open at nine. Shipping is free over fifty euros.") -> str:
        return self.api("POST", "/agents", {"name": "Helper", "systemPrompt": prompt})["data"]["id"]
