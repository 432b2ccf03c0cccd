"""A fake Slack Web API on 127.0.0.1, speaking the documented protocol
(https://api.slack.com/web): `POST /<method>` with `Authorization: Bearer xoxb-...`,
answered 200 `{"ok": true, ...}` or 200 `{"ok": false, "error"}`, and 429 with
`Retry-After` when rate limited. It knows `auth.test` and `chat.postMessage`, records every
call, can answer the next posts 429 or `channel_not_found`, and builds the Events API
requests Slack POSTs, signed with `X-Slack-Signature` and `X-Slack-Request-Timestamp`.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import itertools
import time
from dataclasses import dataclass, field
from typing import Any

import orjson
from aiohttp import web

BOT_USER = "U0BOT0001"
TEAM = "T0TEAM001"


@dataclass
class Call:
    method: str
    authorization: str
    params: dict[str, Any]
    ok: bool = False


@dataclass
class FakeSlack:
    """Start with `await FakeSlack(tokens={...}).start()`; stop with close()."""

    tokens: set[str] = field(default_factory=set)
    calls: list[Call] = field(default_factory=list)
    too_many: int = 0  # the next posts answered 429
    retry_after: int = 1
    refuse: int = 0  # the next posts answered ok: false, channel_not_found
    base_url: str = ""
    _runner: web.AppRunner | None = None
    _arrived: asyncio.Condition = field(default_factory=asyncio.Condition)
    _ids: itertools.count = field(default_factory=lambda: itertools.count(1))

    def posted(self) -> list[dict[str, Any]]:
        """The parameters of the chat.postMessage calls that went through."""
        return [c.params for c in self.calls if c.method == "chat.postMessage" and c.ok]

    async def _handle(self, request: web.Request) -> web.Response:
        method = request.match_info["method"]
        auth = request.headers.get("Authorization", "")
        raw = await request.read()
        params = orjson.loads(raw) if raw else {}
        call = Call(method, auth, params)
        async with self._arrived:
            self.calls.append(call)
            self._arrived.notify_all()
        if auth.removeprefix("Bearer ") not in self.tokens:
            return web.json_response({"ok": False, "error": "invalid_auth"})
        if method == "auth.test":
            return web.json_response(
                {
                    "ok": True,
                    "url": "https://acme.slack.com/",
                    "team": "Acme",
                    "user": "helper",
                    "team_id": TEAM,
                    "user_id": BOT_USER,
                    "bot_id": "B0BOT0001",
                }
            )
        if method != "chat.postMessage":
            return web.json_response({"ok": False, "error": "unknown_method"}, status=404)
        if self.too_many > 0:
            self.too_many -= 1
            return web.json_response(
                {"ok": False, "error": "ratelimited"},
                status=429,
                headers={"Retry-After": str(self.retry_after)},
            )
        if self.refuse > 0:
            self.refuse -= 1
            return web.json_response({"ok": False, "error": "channel_not_found"})
        if not params.get("channel") or not params.get("text"):
            return web.json_response({"ok": False, "error": "no_text"})
        async with self._arrived:
            call.ok = True
            self._arrived.notify_all()
        ts = f"{int(time.time())}.{next(self._ids):06d}"
        return web.json_response({"ok": True, "channel": params["channel"], "ts": ts})

    async def start(self) -> FakeSlack:
        app = web.Application()
        app.router.add_post("/{method}", self._handle)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.base_url = f"http://127.0.0.1:{self._runner.addresses[0][1]}"
        return self

    async def close(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def wait_for(self, count: int, timeout: float = 10, ok: bool = True) -> None:
        """Wait until `count` chat.postMessage calls went through (ok=False: attempted)."""

        def enough() -> bool:
            posts = [c for c in self.calls if c.method == "chat.postMessage"]
            return len([c for c in posts if c.ok or not ok]) >= count

        async with self._arrived:
            await asyncio.wait_for(self._arrived.wait_for(enough), timeout)

    # ── what Slack POSTs to the Request URL ─────────────────────────────────────────────
    def event(self, event: dict[str, Any]) -> dict[str, Any]:
        """An `event_callback` wrapping an event."""
        return {
            "token": "deprecated-verification-token",
            "team_id": TEAM,
            "api_app_id": "A0APP0001",
            "event": event,
            "type": "event_callback",
            "event_id": f"Ev0{next(self._ids):08d}",
            "event_time": int(time.time()),
            "authorizations": [{"team_id": TEAM, "user_id": BOT_USER, "is_bot": True}],
        }

    def mention(self, user: str, text: str, channel: str = "C0GENERAL", thread_ts=None) -> dict:
        """Someone mentions the bot in a channel (in a thread when thread_ts is given)."""
        ts = f"{int(time.time())}.{next(self._ids):06d}"
        event = {
            "type": "app_mention",
            "user": user,
            "text": f"<@{BOT_USER}> {text}",
            "ts": ts,
            "channel": channel,
            "event_ts": ts,
        }
        if thread_ts:
            event["thread_ts"] = thread_ts
        return self.event(event)

    def direct(self, user: str, text: str, channel: str = "D0DIRECT1", **extra: Any) -> dict:
        """A direct message to the bot."""
        ts = f"{int(time.time())}.{next(self._ids):06d}"
        event = {
            "type": "message",
            "channel_type": "im",
            "user": user,
            "text": text,
            "ts": ts,
            "channel": channel,
            "event_ts": ts,
            **extra,
        }
        return self.event(event)

    @staticmethod
    def signed(secret: str, body: bytes, timestamp: int | None = None, retry: int = 0) -> dict:
        """The headers Slack sends with a request (with X-Slack-Retry-Num on a retry)."""
        stamp = str(int(time.time()) if timestamp is None else timestamp)
        base = b"v0:" + stamp.encode() + b":" + body
        digest = hmac.new(secret.encode(), base, hashlib.sha256).hexdigest()
        headers = {
            "Content-Type": "application/json",
            "X-Slack-Request-Timestamp": stamp,
            "X-Slack-Signature": f"v0={digest}",
        }
        if retry:
            headers["X-Slack-Retry-Num"] = str(retry)
            headers["X-Slack-Retry-Reason"] = "http_timeout"
        return headers
