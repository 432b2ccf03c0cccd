"""Opaque page cursors: the (created_at, id) key of the last item a page returned.

A client passes `nextCursor` back as `cursor` to get the page after it; the key is
base64url JSON so that clients treat it as a token, not as data to build themselves.
"""

from __future__ import annotations

import base64
import binascii

import orjson

from agentsvc.errors import ValidationFailed

MAX_CURSOR_LENGTH = 300


def encode_cursor(created_at: str, item_id: str) -> str:
    return base64.urlsafe_b64encode(orjson.dumps([created_at, item_id])).decode().rstrip("=")


def decode_cursor(cursor: str | None) -> tuple[str, str] | None:
    """The key in a cursor this API returned; ValidationFailed for anything else."""
    if cursor is None:
        return None
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        key = orjson.loads(raw)
    except (binascii.Error, ValueError):
        key = None
    if not (isinstance(key, list) and len(key) == 2 and all(isinstance(k, str) and k for k in key)):
        raise ValidationFailed("cursor: not a cursor returned by this API (use nextCursor)")
    return key[0], key[1]


def next_cursor(items: list, more: bool) -> str | None:
    """The cursor of the page after `items` (None when it was the last page)."""
    if not more or not items:
        return None
    last = items[-1]
    return encode_cursor(last.created_at, last.id)
