"""The WhatsApp Cloud API as a channel speaks it
(https://developers.facebook.com/docs/whatsapp/cloud-api): Meta checks the webhook with a
GET carrying `hub.verify_token` and `hub.challenge`, signs every POST with
`X-Hub-Signature-256` (HMAC-SHA256 of the raw body with the app's secret), and takes
replies at `POST {graphBaseUrl}/{apiVersion}/{phoneNumberId}/messages` with the access
token as a bearer. A business may write freely only within 24 hours of the user's last
message (the customer service window); after that only an approved template may go.

Quick replies go as an interactive message: up to 3 reply buttons (titles of 20
characters, a body of 1,024), else a list (up to 10 rows of 24 characters, a body of
4,096) opened by a button named `LIST_BUTTON`. A press comes back as an `interactive`
message (`button_reply` or `list_reply`) with the id sent: the text the button sends, or,
when that is longer than an id may be, the button's place, read as the title pressed."""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

import orjson

from agentsvc.services.channels.buttons import Button, cut, platform_id
from agentsvc.services.delivery.outcome import Outcome

DEFAULT_GRAPH_BASE = "https://graph.facebook.com"
DEFAULT_API_VERSION = "v21.0"
DEFAULT_TEMPLATE_LANGUAGE = "en_US"
SIGNATURE_HEADER = "X-Hub-Signature-256"
TEXT_LIMIT = 4096  # a text message's longest body
WINDOW_SECONDS = 24 * 3600.0  # the customer service window
MAX_REPLY_BUTTONS = 3
BUTTON_BODY_LIMIT = 1024  # a reply buttons message's body
BUTTON_TITLE_LIMIT = 20
BUTTON_ID_LIMIT = 256
ROW_TITLE_LIMIT = 24
ROW_DESCRIPTION_LIMIT = 72
ROW_ID_LIMIT = 200
LIST_BUTTON = "Options"  # what opens a list (at most 20 characters)


def phone_number_url(config: Mapping[str, Any]) -> str:
    """The Graph API node of the channel's phone number."""
    base = (config.get("graphBaseUrl") or DEFAULT_GRAPH_BASE).rstrip("/")
    version = config.get("apiVersion") or DEFAULT_API_VERSION
    return f"{base}/{version}/{config['phoneNumberId']}"


def messages_url(config: Mapping[str, Any]) -> str:
    """Where replies of a phone number are POSTed."""
    return phone_number_url(config) + "/messages"


def signature_refused(app_secret: str, headers: Mapping[str, str], body: bytes) -> str | None:
    """Why a POST's signature is refused, or None when it is the app's."""
    sent = headers.get(SIGNATURE_HEADER) or ""
    if not sent:
        return f"{SIGNATURE_HEADER} is missing"
    expected = "sha256=" + hmac.new(app_secret.encode(), body, hashlib.sha256).hexdigest()
    if not hmac.compare_digest(sent.strip().lower().encode(), expected.encode()):
        return f"{SIGNATURE_HEADER} does not match the body signed with the app secret"
    return None


def text_message(to: str, text: str) -> dict[str, Any]:
    """A text reply's body."""
    if len(text) > TEXT_LIMIT:
        text = text[: TEXT_LIMIT - 1] + "…"
    return {
        "messaging_product": "whatsapp",
        "recipient_type": "individual",
        "to": to,
        "type": "text",
        "text": {"preview_url": False, "body": text},
    }


def _unique(titles: list[str]) -> list[bool]:
    """Which titles to keep: the first of each (WhatsApp refuses repeated titles, which
    cutting long labels can make)."""
    seen: set[str] = set()
    kept = []
    for title in titles:
        kept.append(title not in seen)
        seen.add(title)
    return kept


def interactive_message(to: str, text: str, buttons: tuple[Button, ...]) -> dict[str, Any]:
    """A reply with quick replies: reply buttons when they fit, else a list."""
    message: dict[str, Any] = {
        "messaging_product": "whatsapp",
        "recipient_type": "individual",
        "to": to,
        "type": "interactive",
    }
    titles = [cut(b.label, BUTTON_TITLE_LIMIT) for b in buttons]
    if len(buttons) <= MAX_REPLY_BUTTONS and len(text) <= BUTTON_BODY_LIMIT:
        replies = [
            {"type": "reply", "reply": {"id": platform_id(b, i, BUTTON_ID_LIMIT), "title": t}}
            for (i, b), t, keep in zip(enumerate(buttons), titles, _unique(titles), strict=True)
            if keep
        ]
        body = {"text": text}
        message["interactive"] = {"type": "button", "body": body, "action": {"buttons": replies}}
        return message
    rows = []
    titles = [cut(b.label, ROW_TITLE_LIMIT) for b in buttons]
    for (i, b), title, keep in zip(enumerate(buttons), titles, _unique(titles), strict=True):
        if not keep:
            continue
        row = {"id": platform_id(b, i, ROW_ID_LIMIT), "title": title}
        if title != b.label:  # the whole label under the cut title
            row["description"] = cut(b.label, ROW_DESCRIPTION_LIMIT)
        rows.append(row)
    action = {"button": LIST_BUTTON, "sections": [{"rows": rows}]}
    body = {"text": cut(text, TEXT_LIMIT)}
    message["interactive"] = {"type": "list", "body": body, "action": action}
    return message


def template_message(to: str, config: Mapping[str, Any]) -> dict[str, Any]:
    """The configured template's body (sent instead of a text outside the window)."""
    language = config.get("templateLanguage") or DEFAULT_TEMPLATE_LANGUAGE
    return {
        "messaging_product": "whatsapp",
        "recipient_type": "individual",
        "to": to,
        "type": "template",
        "template": {"name": config["templateName"], "language": {"code": language}},
    }


def outside_window(to: str, config: Mapping[str, Any]) -> dict[str, Any] | None:
    """What may go once the window closed: the template, or None (nothing may go)."""
    return template_message(to, config) if config.get("templateName") else None


def outcome_of(outcome: Outcome, token: str) -> Outcome:
    """A send as the Graph API answered it: its error message kept, a 4xx other than 429
    (a bad request, a token or number it refuses) not retried."""
    error = None if outcome.error is None else outcome.error.replace(token, "<accessToken>")
    if outcome.success:
        return outcome
    try:
        answer = orjson.loads(outcome.body or "")
    except orjson.JSONDecodeError:
        answer = None
    said = answer.get("error") if isinstance(answer, dict) else None
    if isinstance(said, dict) and said.get("message"):
        error = f"{error}: {said['message']}"
    code = outcome.status_code or 0
    stop = outcome.stop or (400 <= code < 500 and code != 429)
    return replace(outcome, error=error, stop=stop)
