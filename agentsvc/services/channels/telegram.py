"""The Telegram Bot API as a channel speaks it (https://core.telegram.org/bots/api):
`setWebhook` (the channel's inbound URL and a generated `secret_token`, which Telegram sends
back in `X-Telegram-Bot-Api-Secret-Token` with every update), `deleteWebhook` when the
channel is disabled or deleted, and `sendMessage` for replies (sent by the outbox, whose
attempts this module's `outcome_of` reads: `ok: false`, a 429's `retry_after`).

A reply longer than a message may be goes as several messages, cut at paragraphs, lines or
words; its quick replies are an inline keyboard under the last one. A press comes back as
a `callback_query` whose `data` is the button's `callback_data` (at most 64 bytes): the text
the button sends, or, when that is longer, the button's place, read back as the label of
the pressed button in the keyboard Telegram sends with the query. `answerCallbackQuery`
stops the spinner on the person's button."""

from __future__ import annotations

import secrets
from dataclasses import replace
from typing import Any

import orjson

from agentsvc.errors import ValidationFailed
from agentsvc.outbound import OutboundClient, OutboundError
from agentsvc.services.channels.buttons import KEY_PREFIX, Button, carried_text, cut, platform_id
from agentsvc.services.delivery.outcome import Outcome

DEFAULT_API_BASE = "https://api.telegram.org"
SECRET_HEADER = "X-Telegram-Bot-Api-Secret-Token"  # noqa: S105 (a header name)
# Telegram's answers that no retry can change: a bad request, a token it does not know, a
# bot the user blocked, a chat that does not exist.
PERMANENT = (400, 401, 403, 404)
TEXT_LIMIT = 4096  # sendMessage's longest text, in UTF-16 code units
CALLBACK_DATA_BYTES = 64  # an inline button's callback_data
LABEL_LIMIT = 64  # a button's text: Telegram cuts long ones on narrow screens anyway


def method_url(base: str | None, token: str, method: str) -> str:
    """The address of a Bot API method for a bot."""
    return f"{(base or DEFAULT_API_BASE).rstrip('/')}/bot{token}/{method}"


def new_webhook_secret() -> str:
    """A `secret_token` for setWebhook: 1-256 characters of A-Z, a-z, 0-9, _ and -."""
    return secrets.token_urlsafe(32)


def scrubbed(text: str | None, token: str) -> str | None:
    """A text (an error of the outbound client) without the bot's token in it."""
    return None if text is None else text.replace(token, "<botToken>")


def _answer(body: bytes) -> dict[str, Any]:
    try:
        found = orjson.loads(body)
    except orjson.JSONDecodeError:
        return {}
    return found if isinstance(found, dict) else {}


class TelegramApi:
    """The Bot API calls a channel makes while it is being set up (replies go through the
    outbox)."""

    def __init__(self, outbound: OutboundClient, timeout_seconds: float):
        self._outbound = outbound
        self._timeout = timeout_seconds

    async def _call(self, base: str | None, token: str, method: str, body: dict) -> dict:
        """One call; its answer, or ValidationFailed saying what Telegram (or the network)
        said."""
        try:
            resp = await self._outbound.request(
                "POST",
                method_url(base, token, method),
                json=body,
                timeout=self._timeout,
                max_response_bytes=65536,
            )
        except OutboundError as exc:
            message = scrubbed(exc.message, token)
            raise ValidationFailed(
                f"config.apiBaseUrl: Telegram could not be reached ({message})"
            ) from None
        answer = _answer(resp.body)
        if not resp.ok or answer.get("ok") is not True:
            said = answer.get("description") or f"HTTP {resp.status}"
            field = "botToken" if resp.status in (401, 404) else "apiBaseUrl"
            raise ValidationFailed(f"config.{field}: Telegram refused {method}: {said}")
        return answer

    async def set_webhook(self, base: str | None, token: str, url: str, secret: str) -> None:
        """Have Telegram send the bot's updates (messages, button presses) to `url`."""
        body = {
            "url": url,
            "secret_token": secret,
            "allowed_updates": ["message", "callback_query"],
        }
        await self._call(base, token, "setWebhook", body)

    async def delete_webhook(self, base: str | None, token: str) -> None:
        """Stop Telegram sending updates (best effort: a failure is only logged)."""
        await self._call(base, token, "deleteWebhook", {})

    async def answer_callback_query(
        self, base: str | None, token: str, query_id: str, text: str | None
    ) -> None:
        """Tell Telegram a button press was taken (its client stops the spinner), with a
        short notice to show when there is one."""
        body: dict[str, Any] = {"callback_query_id": query_id}
        if text:
            body["text"] = text
        await self._call(base, token, "answerCallbackQuery", body)


def _units(text: str) -> int:
    """A text's length as Telegram counts it: UTF-16 code units."""
    return len(text.encode("utf-16-le")) // 2


def _fitting(text: str, limit: int) -> int:
    """How many characters of `text` fit in `limit` UTF-16 code units."""
    units = 0
    for index, char in enumerate(text):
        units += 2 if ord(char) > 0xFFFF else 1
        if units > limit:
            return index
    return len(text)


def split_text(text: str, limit: int = TEXT_LIMIT) -> list[str]:
    """A text as messages of at most `limit` units: cut at the last paragraph break, else
    line break, else space of each message's second half, else (one long word) anywhere."""
    parts: list[str] = []
    rest = text.strip()
    while _units(rest) > limit:
        end = _fitting(rest, limit)
        at = -1
        for mark in ("\n\n", "\n", " "):
            at = rest.rfind(mark, end // 2, end)
            if at > 0:
                break
        head = rest[:at] if at > 0 else rest[:end]
        parts.append(head.rstrip())
        rest = rest[len(head) :].strip()
    if rest:
        parts.append(rest)
    return parts or [text]


def keyboard(buttons: tuple[Button, ...]) -> dict[str, Any]:
    """The inline keyboard of quick replies: one button a row."""
    rows = []
    for index, button in enumerate(buttons):
        data = platform_id(button, index, CALLBACK_DATA_BYTES)
        rows.append([{"text": cut(button.label, LABEL_LIMIT), "callback_data": data}])
    return {"inline_keyboard": rows}


def messages(chat_id: str, text: str, buttons: tuple[Button, ...]) -> dict[str, Any]:
    """A reply's outbox body: one sendMessage body, or several to send in order
    (`{"parts": [...], "sent": 0}`, `sent` counting those Telegram took, so a retry goes on
    from the first it did not); the keyboard goes under the last."""
    bodies: list[dict[str, Any]] = [{"chat_id": chat_id, "text": t} for t in split_text(text)]
    if buttons:
        bodies[-1]["reply_markup"] = keyboard(buttons)
    return bodies[0] if len(bodies) == 1 else {"parts": bodies, "sent": 0}


def pressed_text(data: str, keyboard_rows: list[list[tuple[str, str | None]]]) -> str | None:
    """The text a press sends: the one its callback_data carries, or the label of the
    button whose place it names in the message's keyboard (rows of (text, callback_data));
    None when the data is none of ours or the message is too old for Telegram to show."""
    carried = carried_text(data)
    if carried is not None:
        return carried
    if not data.startswith(KEY_PREFIX):
        return None
    for row in keyboard_rows:
        for label, button_data in row:
            if button_data == data and label.strip():
                return label
    return None


def outcome_of(outcome: Outcome, token: str) -> Outcome:
    """A sendMessage attempt as Telegram answered it: `ok: false` is a failure, a 429's
    `parameters.retry_after` is waited for, permanent refusals stop the retries."""
    error = scrubbed(outcome.error, token)
    answer = _answer((outcome.body or "").encode())
    if outcome.success and answer.get("ok") is False:
        return replace(outcome, success=False, error=answer.get("description") or "ok: false")
    if outcome.success:
        return outcome
    said = answer.get("description")
    if said:
        error = f"{error}: {said}"
    retry_after = outcome.retry_after
    parameters = answer.get("parameters")
    if outcome.status_code == 429 and isinstance(parameters, dict):
        wait = parameters.get("retry_after")
        if isinstance(wait, int | float) and wait >= 0:
            retry_after = float(wait)
    stop = outcome.stop or outcome.status_code in PERMANENT
    return replace(outcome, error=error, retry_after=retry_after, stop=stop)
