"""A fake Telegram Bot API on 127.0.0.1, speaking the documented protocol
(https://core.telegram.org/bots/api): `POST /bot<token>/<method>` with JSON parameters,
answered `{"ok": true, "result": ...}` or `{"ok": false, "error_code", "description",
"parameters"?}` with the error code as the HTTP status. It knows `setWebhook` (checking the
`secret_token`'s characters), `deleteWebhook`, `getWebhookInfo`, `getMe`,
`sendMessage` (a text of 1-4096 UTF-16 code units; an inline keyboard's buttons with a
text and 1-64 bytes of `callback_data`, checked as Telegram checks them) and
`answerCallbackQuery` (of a query it sent, once); an unknown token is `401 Unauthorized`.
It records every call, can answer the next sends `429` with `parameters.retry_after`, and
builds the Update objects Telegram would POST to a webhook (a press of a button of a
message the bot sent carries that message with its keyboard, as Telegram's do), with the
`X-Telegram-Bot-Api-Secret-Token` header it was given.
"""

from __future__ import annotations

import asyncio
import itertools
import re
import time
from dataclasses import dataclass, field
from typing import Any

import orjson
from aiohttp import web

SECRET_TOKEN = re.compile(r"^[A-Za-z0-9_-]{1,256}$")
SECRET_HEADER = "X-Telegram-Bot-Api-Secret-Token"


@dataclass
class Call:
    token: str
    method: str
    params: dict[str, Any]


@dataclass
class FakeTelegram:
    """Start with `await FakeTelegram(tokens={...}).start()`; stop with close()."""

    tokens: set[str] = field(default_factory=set)
    calls: list[Call] = field(default_factory=list)
    webhooks: dict[str, tuple[str, str]] = field(default_factory=dict)  # token -> url, secret
    too_many: int = 0  # the next sends answered 429
    too_many_at: set[int] = field(default_factory=set)  # these sends (1 = the first) too
    retry_after: int = 1
    username: str = "shop_helper_bot"  # what getMe answers
    base_url: str = ""
    _runner: web.AppRunner | None = None
    _arrived: asyncio.Condition = field(default_factory=asyncio.Condition)
    _update_ids: itertools.count = field(default_factory=lambda: itertools.count(1000))
    _message_ids: itertools.count = field(default_factory=lambda: itertools.count(1))
    messages: list[dict[str, Any]] = field(default_factory=list)  # the Messages sent
    _queries: dict[str, bool] = field(default_factory=dict)  # query id -> answered

    def sent(self, token: str | None = None) -> list[dict[str, Any]]:
        """The parameters of every sendMessage that went through (not the refused ones)."""
        return [
            c.params
            for c in self.calls
            if c.method == "sendMessage" and c.params.get("_ok") and token in (None, c.token)
        ]

    @staticmethod
    def _error(code: int, description: str, **parameters: Any) -> web.Response:
        body: dict[str, Any] = {"ok": False, "error_code": code, "description": description}
        if parameters:
            body["parameters"] = parameters
        return web.json_response(body, status=code)

    async def _handle(self, request: web.Request) -> web.Response:
        token, method = request.match_info["token"], request.match_info["method"]
        try:
            params = orjson.loads(await request.read() or b"{}")
        except orjson.JSONDecodeError:
            return self._error(400, "Bad Request: can't parse JSON")
        call = Call(token, method, params)
        async with self._arrived:
            self.calls.append(call)
            self._arrived.notify_all()
        if token not in self.tokens:
            return self._error(401, "Unauthorized")
        if method == "setWebhook":
            secret = params.get("secret_token", "")
            if not SECRET_TOKEN.match(secret):
                return self._error(400, "Bad Request: secret token contains unallowed characters")
            self.webhooks[token] = (params["url"], secret)
            return web.json_response({"ok": True, "result": True, "description": "Webhook was set"})
        if method == "deleteWebhook":
            self.webhooks.pop(token, None)
            return web.json_response(
                {"ok": True, "result": True, "description": "Webhook was deleted"}
            )
        if method == "sendMessage":
            return self._send(call)
        if method == "answerCallbackQuery":
            return self._answer_query(params)
        if method == "getMe":
            bot = {"id": 1, "is_bot": True, "first_name": "Shop", "username": self.username}
            return web.json_response({"ok": True, "result": bot})
        if method == "getWebhookInfo":
            return self._webhook_info(token)
        return self._error(404, "Not Found")

    def _webhook_info(self, token: str) -> web.Response:
        url, _ = self.webhooks.get(token, ("", ""))
        info: dict[str, Any] = {"url": url, "has_custom_certificate": False}
        info["pending_update_count"] = 0
        return web.json_response({"ok": True, "result": info})

    def answered(self) -> list[dict[str, Any]]:
        """The parameters of every answerCallbackQuery Telegram took."""
        return [c.params for c in self.calls if c.method == "answerCallbackQuery"]

    def _answer_query(self, params: dict[str, Any]) -> web.Response:
        query = params.get("callback_query_id")
        text = params.get("text")
        if query not in self._queries or self._queries[query]:
            return self._error(
                400,
                "Bad Request: query is too old and response timeout expired or query ID is invalid",
            )
        if text is not None and (not isinstance(text, str) or len(text) > 200):
            return self._error(400, "Bad Request: MESSAGE_TOO_LONG")
        self._queries[query] = True
        return web.json_response({"ok": True, "result": True})

    @staticmethod
    def _keyboard_refused(markup: Any) -> str | None:
        """Why Telegram refuses a reply_markup (an inline keyboard), or None."""
        rows = markup.get("inline_keyboard") if isinstance(markup, dict) else None
        if not isinstance(rows, list) or not all(isinstance(r, list) for r in rows):
            return "Bad Request: can't parse reply keyboard markup JSON object"
        buttons = [b for row in rows for b in row]
        if len(buttons) > 100:
            return "Bad Request: reply markup is too long"
        for button in buttons:
            if not isinstance(button, dict) or not button.get("text"):
                return "Bad Request: text buttons are unallowed in the inline keyboard"
            data = button.get("callback_data")
            if not isinstance(data, str) or not 1 <= len(data.encode()) <= 64:
                return "Bad Request: BUTTON_DATA_INVALID"
        return None

    def _send(self, call: Call) -> web.Response:
        params = call.params
        number = sum(1 for c in self.calls if c.method == "sendMessage")
        if self.too_many > 0 or number in self.too_many_at:
            self.too_many = max(0, self.too_many - 1)
            wait = self.retry_after
            return self._error(429, f"Too Many Requests: retry after {wait}", retry_after=wait)
        text = params.get("text")
        if not isinstance(params.get("chat_id"), int | str) or not text:
            return self._error(400, "Bad Request: message text is empty")
        if len(text.encode("utf-16-le")) // 2 > 4096:
            return self._error(400, "Bad Request: message is too long")
        if "reply_markup" in params:
            refused = self._keyboard_refused(params["reply_markup"])
            if refused:
                return self._error(400, refused)
        params["_ok"] = True
        result = {
            "message_id": next(self._message_ids),
            "from": {"id": 1, "is_bot": True, "first_name": "Bot"},
            "chat": {"id": int(params["chat_id"]), "type": "private"},
            "date": int(time.time()),
            "text": text,
        }
        if "reply_markup" in params:
            result["reply_markup"] = params["reply_markup"]
        self.messages.append(result)
        return web.json_response({"ok": True, "result": result})

    async def start(self) -> FakeTelegram:
        app = web.Application()
        app.router.add_post("/bot{token}/{method}", self._handle)
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

    async def wait_for(self, method: str, count: int, timeout: float = 10) -> None:
        """Wait until `count` calls of `method` went through."""

        def enough() -> bool:
            done = [c for c in self.calls if c.method == method]
            if method == "sendMessage":
                done = [c for c in done if c.params.get("_ok")]
            return len(done) >= count

        async with self._arrived:
            await asyncio.wait_for(self._arrived.wait_for(enough), timeout)

    # ── what Telegram POSTs to the webhook ──────────────────────────────────────────────
    def text_update(self, user_id: int, text: str, chat_id: int | None = None) -> dict:
        """An Update with a text message from a user, in their private chat by default."""
        return {
            "update_id": next(self._update_ids),
            "message": {
                "message_id": next(self._message_ids),
                "from": {
                    "id": user_id,
                    "is_bot": False,
                    "first_name": "Ada",
                    "language_code": "en",
                },
                "chat": {"id": chat_id or user_id, "type": "private", "first_name": "Ada"},
                "date": int(time.time()),
                "text": text,
            },
        }

    def button_update(self, user_id: int, data: str, message: dict | None = None) -> dict:
        """An Update with a callback_query: the user pressed an inline keyboard button with
        this callback_data (under `message`, or a message without a keyboard)."""
        chat = {"id": user_id, "type": "private"}
        if message is None:
            message = {"message_id": 1, "chat": chat, "date": int(time.time()), "text": "?"}
        query = str(next(self._update_ids) * 7919)
        self._queries[query] = False
        return {
            "update_id": next(self._update_ids),
            "callback_query": {
                "id": query,
                "from": {"id": user_id, "is_bot": False, "first_name": "Ada"},
                "message": message,
                "chat_instance": "42",
                "data": data,
            },
        }

    def press(self, message: dict, row: int, old: bool = False) -> dict:
        """The Update of a press of a button (the first of keyboard row `row`) of a message
        the bot sent (one of `messages`). Telegram sends the message with its keyboard;
        past 48 hours (`old`) only an InaccessibleMessage (date 0)."""
        button = message["reply_markup"]["inline_keyboard"][row][0]
        if old:
            message = {"chat": message["chat"], "message_id": message["message_id"], "date": 0}
        return self.button_update(message["chat"]["id"], button["callback_data"], message)

    def headers_for(self, token: str) -> dict[str, str]:
        """The headers Telegram sends with each update to the bot's webhook."""
        _, secret = self.webhooks[token]
        return {"Content-Type": "application/json", SECRET_HEADER: secret}
