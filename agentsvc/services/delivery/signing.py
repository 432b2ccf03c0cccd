"""Standard Webhooks signatures, for every signed POST (form and event webhooks, handoff
team chat)."""

from __future__ import annotations

import base64
import hashlib
import hmac
import time


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
