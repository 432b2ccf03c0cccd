"""Slack as a channel speaks it (https://api.slack.com/apis/events-api): the Events API
POSTs events signed with `X-Slack-Signature` (`v0=` and the hex HMAC-SHA256 of
`v0:{X-Slack-Request-Timestamp}:{body}` with the app's signing secret; a timestamp more
than 5 minutes away is refused, so a recorded request cannot be replayed), answers go out
with `chat.postMessage` in the thread, and `auth.test` checks the bot's token and tells its
user id when the channel is created or enabled. The Web API answers 200 with
`{"ok": false, "error"}` when it refuses."""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

import orjson

from agentsvc.errors import ValidationFailed
from agentsvc.outbound import OutboundClient, OutboundError
from agentsvc.services.channels.buttons import Button, options_line
from agentsvc.services.delivery.outcome import Outcome

DEFAULT_API_BASE = "https://slack.com/api"
SIGNATURE_HEADER = "X-Slack-Signature"
TIMESTAMP_HEADER = "X-Slack-Request-Timestamp"
MAX_SKEW_SECONDS = 300
TEXT_LIMIT = 40_000  # chat.postMessage truncates longer texts
# Errors a retry can change; every other `ok: false` is permanent.
PASSING = ("ratelimited", "internal_error", "fatal_error", "service_unavailable", "request_timeout")


def method_url(base: str | None, method: str) -> str:
    return f"{(base or DEFAULT_API_BASE).rstrip('/')}/{method}"


def signature_refused(
    signing_secret: str, headers: Mapping[str, str], body: bytes, now: float
) -> str | None:
    """Why a request's signature is refused, or None when Slack signed it just now."""
    stamp = headers.get(TIMESTAMP_HEADER) or ""
    sent = headers.get(SIGNATURE_HEADER) or ""
    if not stamp or not sent:
        return f"{TIMESTAMP_HEADER} and {SIGNATURE_HEADER} are required"
    try:
        when = int(stamp)
    except ValueError:
        return f"{TIMESTAMP_HEADER} must be a Unix time in seconds"
    if abs(now - when) > MAX_SKEW_SECONDS:
        return f"{TIMESTAMP_HEADER} is more than 5 minutes away from now (a replay?)"
    base = b"v0:" + stamp.encode() + b":" + body
    expected = "v0=" + hmac.new(signing_secret.encode(), base, hashlib.sha256).hexdigest()
    if not hmac.compare_digest(sent.strip().encode(), expected.encode()):
        return f"{SIGNATURE_HEADER} does not match the body signed with the signing secret"
    return None


def post_message(address: str, text: str, buttons: tuple[Button, ...] = ()) -> dict[str, Any]:
    """A reply's chat.postMessage body: `address` is `channel:thread_ts`. Buttons would
    need the app's interactivity (another request URL): quick replies are a line of options
    the person can type."""
    channel, _, thread = address.partition(":")
    if buttons:
        options = options_line(buttons)
        text = f"{text[: TEXT_LIMIT - len(options) - 2]}\n\n{options}".strip()
    if len(text) > TEXT_LIMIT:
        text = text[: TEXT_LIMIT - 1] + "…"
    # Slack reads &, < and > as its markup's: the reply's own are escaped, as Slack asks.
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    body: dict[str, Any] = {"channel": channel, "text": text}
    if thread:
        body["thread_ts"] = thread
    return body


def _answer(body: bytes | str | None) -> dict[str, Any]:
    try:
        found = orjson.loads(body or b"")
    except orjson.JSONDecodeError:
        return {}
    return found if isinstance(found, dict) else {}


def outcome_of(outcome: Outcome, token: str) -> Outcome:
    """A chat.postMessage attempt as Slack answered it: `ok: false` is a failure, retried
    only when Slack was rate limiting or unwell; a 4xx other than 429 is not retried."""
    error = None if outcome.error is None else outcome.error.replace(token, "<botToken>")
    answer = _answer(outcome.body)
    if outcome.success and answer.get("ok") is not False:
        return outcome
    said = answer.get("error")
    if outcome.success:
        stop = said not in PASSING
        return replace(outcome, success=False, error=f"Slack refused: {said}", stop=stop)
    if said:
        error = f"{error}: {said}"
    code = outcome.status_code or 0
    stop = outcome.stop or (400 <= code < 500 and code != 429)
    return replace(outcome, error=error, stop=stop)


class SlackApi:
    """`auth.test` when a channel is created or enabled (replies go through the outbox)."""

    def __init__(self, outbound: OutboundClient, timeout_seconds: float):
        self._outbound = outbound
        self._timeout = timeout_seconds

    async def bot_user(self, base: str | None, token: str) -> str:
        """The bot's user id; ValidationFailed saying why Slack (or the network) refused."""
        try:
            resp = await self._outbound.request(
                "POST",
                method_url(base, "auth.test"),
                headers={"Authorization": f"Bearer {token}"},
                timeout=self._timeout,
                max_response_bytes=65536,
            )
        except OutboundError as exc:
            message = exc.message.replace(token, "<botToken>")
            raise ValidationFailed(
                f"config.apiBaseUrl: Slack could not be reached ({message})"
            ) from None
        answer = _answer(resp.body)
        if not resp.ok or answer.get("ok") is not True:
            said = answer.get("error") or f"HTTP {resp.status}"
            field = (
                "botToken"
                if said
                in (
                    "invalid_auth",
                    "not_authed",
                    "account_inactive",
                    "token_revoked",
                    "token_expired",
                )
                else "apiBaseUrl"
            )
            raise ValidationFailed(f"config.{field}: Slack refused auth.test: {said}")
        user = answer.get("user_id")
        if not isinstance(user, str) or not user:
            raise ValidationFailed("config.botToken: Slack's auth.test named no bot user")
        return user
