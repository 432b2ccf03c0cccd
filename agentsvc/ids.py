"""Identifiers and timestamps: opaque prefixed random ids, ISO 8601 UTC times."""

from __future__ import annotations

import base64
import os
import threading
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
    "experiment": "exp",
    "evalset": "evs",
    "eval_case": "evc",
    "eval_run": "evr",
    "source": "src",
    "approval": "apr",
    "paused_turn": "pt",
}


# A message makes about ten ids: the operating system's randomness is read a page at a
# time, not with a system call per id (costly on a loaded machine). Each thread takes from
# its own page, each byte once; a forked child starts afresh, so it never repeats its
# parent's ids.
_PAGE_BYTES = 4096


class _RandomPage(threading.local):
    def __init__(self) -> None:
        self.page = b""
        self.at = 0


_random = _RandomPage()
os.register_at_fork(after_in_child=_random.__init__)


def _random_bytes(n: int) -> bytes:
    page = _random
    at = page.at
    if at + n > len(page.page):
        page.page, at = os.urandom(_PAGE_BYTES), 0
    page.at = at + n
    return page.page[at : at + n]


def new_id(kind: str) -> str:
    """Return a new unguessable id such as `agt_3kT...` (120 random bits)."""
    return f"{PREFIXES[kind]}_{base64.urlsafe_b64encode(_random_bytes(15)).decode('ascii')}"


def iso(dt: datetime) -> str:
    """Format a datetime as ISO 8601 UTC with milliseconds and `Z`."""
    if dt.tzinfo is not UTC:
        dt = dt.astimezone(UTC)
    return dt.isoformat(timespec="milliseconds")[:-6] + "Z"  # "+00:00" -> "Z"


def now_iso() -> str:
    """Return the current time in the service's timestamp format."""
    return iso(datetime.now(UTC))


def parse_iso(value: str) -> datetime:
    """Parse a timestamp written by `iso`."""
    return datetime.fromisoformat(value.replace("Z", "+00:00"))
