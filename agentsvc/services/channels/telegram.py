"""The Telegram Bot API as a channel speaks it (https://core.telegram.org/bots/api):
`setWebhook` (the channel's inbound URL and a generated `secret_token`, which Telegram sends
back in `X-Telegram-Bot-Api-Secret-Token` with every update), `deleteWebhook` when the
channel is disabled or deleted, and `sendMessage` for replies (sent by the outbox, whose
attempts this module's `outcome_of` reads: `ok: false`, a 429's `retry_after`)."""

from __future__ import annotations

import secrets
from dataclasses import replace
from typing import Any

import orjson

from agentsvc.errors import ValidationFailed
from agentsvc.outbound import OutboundClient, OutboundError
from agentsvc.services.delivery.outcome import Outcome

DEFAULT_API_BASE = "https://api.telegram.org"
SECRET_HEADER = "X-Telegram-Bot-Api-Secret-Token"  # noqa: S105 (a header name)
# Telegram's answers that no retry can change: a bad request, a token it does not know, a
# bot the user blocked, a chat that does not exist.
PERMANENT = (400, 401, 403, 404)


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
