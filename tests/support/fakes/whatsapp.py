"""A fake WhatsApp Cloud API (Graph API) on 127.0.0.1, speaking the documented protocol
(https://developers.facebook.com/docs/whatsapp/cloud-api/reference/messages): `POST
/{version}/{phone-number-id}/messages` with `Authorization: Bearer <token>` and a JSON
message, answered `{"messaging_product", "contacts", "messages": [{"id": "wamid..."}]}` or a
Graph error `{"error": {"message", "type", "code", "fbtrace_id"}}` (a token it does not know:
401, code 190), and `GET /{version}/{phone-number-id}` (the number's fields). It records
every call, can answer the next sends 429 with `Retry-After` or 400 (a permanent refusal),
and builds the webhook notifications Meta POSTs, signed with `X-Hub-Signature-256` as Meta
signs them. Messages are checked as the Cloud API checks them: a text's body of 1-4096
characters; an interactive message's reply buttons (1-3, ids of 1-256 characters and
titles of 1-20, both unique, a body of 1-1024) or list (a button of 1-20 characters, 1-10
sections, 1-10 rows in all with unique ids of 1-200 characters, titles of 1-24,
descriptions of up to 72, a body of 1-4096). A press of a button or row of an interactive
message sent comes back as Meta sends it (`interactive.button_reply` / `list_reply`).
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

SIGNATURE_HEADER = "X-Hub-Signature-256"


@dataclass
class Call:
    version: str
    phone_number_id: str
    authorization: str
    body: dict[str, Any]
    ok: bool = False


@dataclass
class FakeGraph:
    """Start with `await FakeGraph(tokens={...}).start()`; stop with close()."""

    tokens: set[str] = field(default_factory=set)
    calls: list[Call] = field(default_factory=list)
    too_many: int = 0  # the next sends answered 429
    retry_after: int = 1
    refuse: int = 0  # the next sends answered 400 (a permanent error)
    base_url: str = ""
    _runner: web.AppRunner | None = None
    _arrived: asyncio.Condition = field(default_factory=asyncio.Condition)
    _ids: itertools.count = field(default_factory=lambda: itertools.count(1))

    def sent(self) -> list[dict[str, Any]]:
        """The bodies of the sends that went through."""
        return [c.body for c in self.calls if c.ok]

    @staticmethod
    def _error(status: int, message: str, code: int, **headers: str) -> web.Response:
        body = {
            "error": {
                "message": message,
                "type": "OAuthException",
                "code": code,
                "fbtrace_id": "AbCdEf",
            }
        }
        return web.json_response(body, status=status, headers=headers)

    async def _handle(self, request: web.Request) -> web.Response:
        auth = request.headers.get("Authorization", "")
        try:
            body = orjson.loads(await request.read() or b"{}")
        except orjson.JSONDecodeError:
            return self._error(400, "(#100) Invalid JSON", 100)
        call = Call(request.match_info["version"], request.match_info["phone"], auth, body)
        async with self._arrived:
            self.calls.append(call)
            self._arrived.notify_all()
        if auth.removeprefix("Bearer ") not in self.tokens:
            return self._error(401, "Invalid OAuth access token.", 190)
        if self.too_many > 0:
            self.too_many -= 1
            headers = {"Retry-After": str(self.retry_after)}
            return self._error(429, "(#130429) Rate limit hit", 130429, **headers)
        if self.refuse > 0:
            self.refuse -= 1
            return self._error(400, "(#131030) Recipient phone number not in allowed list", 131030)
        if body.get("messaging_product") != "whatsapp" or not body.get("to"):
            return self._error(400, "(#100) Invalid parameter", 100)
        refused = refusal(body)
        if refused is not None:
            return self._error(400, f"(#131009) Parameter value is not valid: {refused}", 131009)
        async with self._arrived:
            call.ok = True
            self._arrived.notify_all()
        return web.json_response(
            {
                "messaging_product": "whatsapp",
                "contacts": [{"input": body["to"], "wa_id": body["to"]}],
                "messages": [{"id": f"wamid.OUT{next(self._ids)}"}],
            }
        )

    async def _phone_number(self, request: web.Request) -> web.Response:
        """`GET /{version}/{phone-number-id}`: the number's fields, for a known token."""
        auth = request.headers.get("Authorization", "")
        if auth.removeprefix("Bearer ") not in self.tokens:
            return self._error(401, "Invalid OAuth access token.", 190)
        phone = request.match_info["phone"]
        if not phone.isdigit():
            return self._error(400, f"(#100) Unknown path components: /{phone}", 100)
        return web.json_response(
            {"id": phone, "display_phone_number": "+1 555-000-1111", "verified_name": "Shop"}
        )

    async def start(self) -> FakeGraph:
        app = web.Application()
        app.router.add_post("/{version}/{phone}/messages", self._handle)
        app.router.add_get("/{version}/{phone}", self._phone_number)
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
        """Wait until `count` sends went through (ok=False: were attempted)."""

        def enough() -> bool:
            return len([c for c in self.calls if c.ok or not ok]) >= count

        async with self._arrived:
            await asyncio.wait_for(self._arrived.wait_for(enough), timeout)

    # ── what Meta POSTs to the webhook ──────────────────────────────────────────────────
    def notification(self, phone_number_id: str, *messages: dict, statuses=()) -> dict:
        """A `whatsapp_business_account` notification with messages (and statuses)."""
        value: dict[str, Any] = {
            "messaging_product": "whatsapp",
            "metadata": {"display_phone_number": "15550001111", "phone_number_id": phone_number_id},
        }
        if messages:
            value["contacts"] = [{"profile": {"name": "Ada"}, "wa_id": m["from"]} for m in messages]
            value["messages"] = list(messages)
        if statuses:
            value["statuses"] = list(statuses)
        return {
            "object": "whatsapp_business_account",
            "entry": [
                {"id": "102290129340398", "changes": [{"value": value, "field": "messages"}]}
            ],
        }

    def _message(self, wa_id: str, kind: str, **content: Any) -> dict:
        return {
            "from": wa_id,
            "id": f"wamid.HBgL{next(self._ids):08d}AA==",
            "timestamp": str(int(time.time())),
            "type": kind,
            **content,
        }

    def text(self, wa_id: str, body: str) -> dict:
        return self._message(wa_id, "text", text={"body": body})

    def button_reply(self, wa_id: str, title: str) -> dict:
        """The user pressed an interactive reply button."""
        reply = {"type": "button_reply", "button_reply": {"id": "b1", "title": title}}
        return self._message(wa_id, "interactive", interactive=reply)

    def press(self, wa_id: str, sent: dict, index: int) -> dict:
        """The user pressed button (or list row) `index` of an interactive message sent."""
        interactive = sent["interactive"]
        if interactive["type"] == "button":
            reply = interactive["action"]["buttons"][index]["reply"]
            pressed = {"type": "button_reply", "button_reply": dict(reply)}
        else:
            rows = [r for s in interactive["action"]["sections"] for r in s["rows"]]
            pressed = {"type": "list_reply", "list_reply": dict(rows[index])}
        return self._message(wa_id, "interactive", interactive=pressed)

    def template_button(self, wa_id: str, text: str) -> dict:
        """The user pressed a quick reply button of a template message."""
        return self._message(wa_id, "button", button={"payload": "p-1", "text": text})

    @staticmethod
    def status(wa_id: str) -> dict:
        return {
            "id": "wamid.OUT1",
            "status": "delivered",
            "timestamp": str(int(time.time())),
            "recipient_id": wa_id,
        }

    @staticmethod
    def signed(app_secret: str, body: bytes) -> dict[str, str]:
        """The headers Meta sends with a notification."""
        digest = hmac.new(app_secret.encode(), body, hashlib.sha256).hexdigest()
        return {"Content-Type": "application/json", SIGNATURE_HEADER: f"sha256={digest}"}


def _text(value: Any, low: int, high: int) -> bool:
    return isinstance(value, str) and low <= len(value) <= high


def _buttons_refusal(action: dict) -> str | None:
    buttons = action.get("buttons")
    if not isinstance(buttons, list) or not 1 <= len(buttons) <= 3:
        return "action.buttons must hold 1 to 3 buttons"
    replies = [b.get("reply") if isinstance(b, dict) else None for b in buttons]
    for button, reply in zip(buttons, replies, strict=True):
        if button.get("type") != "reply" or not isinstance(reply, dict):
            return "a button must be of type reply"
        if not _text(reply.get("id"), 1, 256) or not _text(reply.get("title"), 1, 20):
            return "a button's id must be 1-256 characters and its title 1-20"
    if len({r["id"] for r in replies}) < len(replies):
        return "buttons' ids must be unique"
    if len({r["title"] for r in replies}) < len(replies):
        return "buttons' titles must be unique"
    return None


def _list_refusal(action: dict) -> str | None:
    sections = action.get("sections")
    if not _text(action.get("button"), 1, 20):
        return "action.button must be 1-20 characters"
    if not isinstance(sections, list) or not 1 <= len(sections) <= 10:
        return "action.sections must hold 1 to 10 sections"
    if len(sections) > 1 and not all(_text(s.get("title"), 1, 24) for s in sections):
        return "sections must have titles when there are several"
    rows = [r for s in sections for r in (s.get("rows") or [])]
    if not 1 <= len(rows) <= 10:
        return "a list must hold 1 to 10 rows"
    for row in rows:
        if not _text(row.get("id"), 1, 200) or not _text(row.get("title"), 1, 24):
            return "a row's id must be 1-200 characters and its title 1-24"
        if "description" in row and not _text(row["description"], 0, 72):
            return "a row's description must be at most 72 characters"
    if len({r["id"] for r in rows}) < len(rows):
        return "rows' ids must be unique"
    return None


def refusal(body: dict[str, Any]) -> str | None:
    """Why the Cloud API refuses a message's content, or None."""
    kind = body.get("type")
    if kind == "text":
        text = body.get("text")
        ok = isinstance(text, dict) and _text(text.get("body"), 1, 4096)
        return None if ok else "text.body must be 1-4096 characters"
    if kind != "interactive":
        return None
    interactive = body.get("interactive")
    if not isinstance(interactive, dict) or not isinstance(interactive.get("action"), dict):
        return "interactive.action is required"
    body_text = (interactive.get("body") or {}).get("text")
    if interactive.get("type") == "button":
        if not _text(body_text, 1, 1024):
            return "interactive.body.text must be 1-1024 characters"
        return _buttons_refusal(interactive["action"])
    if interactive.get("type") == "list":
        if not _text(body_text, 1, 4096):
            return "interactive.body.text must be 1-4096 characters"
        return _list_refusal(interactive["action"])
    return "interactive.type must be button or list"
