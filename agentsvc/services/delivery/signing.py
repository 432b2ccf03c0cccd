"""Standard Webhooks signatures, for every signed POST (form and event webhooks, handoff
team chat, the api channel's replies) and their check on what the api channel receives."""

from __future__ import annotations

import base64
import hashlib
import hmac
import time
from collections.abc import Mapping

# How far a received message's timestamp may be from now (Standard Webhooks' advice).
TOLERANCE_SECONDS = 300


def sign(secret: str, message_id: str, timestamp: int, body: bytes) -> str:
    """The Standard Webhooks `webhook-signature` value: `v1,` + base64 HMAC-SHA256."""
    key = base64.b64decode(secret.removeprefix("whsec_"))
    signed = f"{message_id}.{timestamp}.".encode() + body
    return "v1," + base64.b64encode(hmac.new(key, signed, hashlib.sha256).digest()).decode()


def signature_headers(secret: str, message_id: str, body: bytes) -> dict[str, str]:
    """The `webhook-id`, `webhook-timestamp` and `webhook-signature` headers, signed now."""
    stamp = int(time.time())
    return {
        "webhook-id": message_id,
        "webhook-timestamp": str(stamp),
        "webhook-signature": sign(secret, message_id, stamp, body),
    }


def verify(secret: str, headers: Mapping[str, str], body: bytes, now: float) -> str | None:
    """Why a received request's Standard Webhooks signature does not hold, or None when it
    does: the three headers present, the timestamp within 5 minutes of `now`, and one of the
    `v1,` signatures (space-separated) matching."""
    message_id = headers.get("webhook-id")
    stamp = headers.get("webhook-timestamp")
    signatures = headers.get("webhook-signature")
    if not message_id or not stamp or not signatures:
        return "the webhook-id, webhook-timestamp and webhook-signature headers are required"
    try:
        timestamp = int(stamp)
    except ValueError:
        return "webhook-timestamp must be the Unix time in seconds"
    if abs(now - timestamp) > TOLERANCE_SECONDS:
        return "webhook-timestamp is more than 5 minutes from now"
    expected = sign(secret, message_id, timestamp, body)
    for candidate in signatures.split():
        if hmac.compare_digest(candidate.encode(), expected.encode()):
            return None
    return "webhook-signature does not match"
