"""Identifiers and timestamps: opaque prefixed random ids, ISO 8601 UTC times."""

from __future__ import annotations

import secrets
from datetime import UTC, datetime

PREFIXES = {
    "agent": "agt",
    "conversation": "conv",
    "message": "msg",
    "tool": "tool",
    "trigger": "trg",
    "submission": "sub",
    "delivery": "dlv",
    "user": "usr",
    "membership": "mem",
    "invitation": "inv",
    "api_key": "key",
    "team": "team",
    "session": "ses",
    "mail": "mail",
    "document": "doc",
    "webhook": "wh",
    "event": "evt",
    "webhook_delivery": "whd",
    "audit": "aud",
    "answer": "ans",
    "note": "note",
    "canned": "cnd",
    "avatar": "av",
    "scim_group": "grp",
    "channel": "ch",
    "channel_delivery": "chd",
    "attachment": "att",
}


def new_id(kind: str) -> str:
    """Return a new unguessable id such as `agt_3kT...` (120 random bits)."""
    return f"{PREFIXES[kind]}_{secrets.token_urlsafe(15)}"


def iso(dt: datetime) -> str:
    """Format a datetime as ISO 8601 UTC with milliseconds and `Z`."""
    return dt.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.") + f"{dt.microsecond // 1000:03d}Z"


def now_iso() -> str:
    """Return the current time in the service's timestamp format."""
    return iso(datetime.now(UTC))


def parse_iso(value: str) -> datetime:
    """Parse a timestamp written by `iso`."""
    return datetime.fromisoformat(value.replace("Z", "+00:00"))
