"""The WhatsApp Cloud API as a channel speaks it
(https://developers.facebook.com/docs/whatsapp/cloud-api): Meta checks the webhook with a
GET carrying `hub.verify_token` and `hub.challenge`, signs every POST with
`X-Hub-Signature-256` (HMAC-SHA256 of the raw body with the app's secret), and takes
replies at `POST {graphBaseUrl}/{apiVersion}/{phoneNumberId}/messages` with the access
token as a bearer. A business may write freely only within 24 hours of the user's last
message (the customer service window); after that only an approved template may go."""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

import orjson

from agentsvc.services.delivery.outcome import Outcome

DEFAULT_GRAPH_BASE = "https://graph.facebook.com"
DEFAULT_API_VERSION = "v21.0"
DEFAULT_TEMPLATE_LANGUAGE = "en_US"
SIGNATURE_HEADER = "X-Hub-Signature-256"
TEXT_LIMIT = 4096  # a text message's longest body
WINDOW_SECONDS = 24 * 3600.0  # the customer service window


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
