"""Parsing a submit body without a second copy of its files.

A form file arrives as a base64 data URL inside the JSON. Parsed normally, each one would
exist twice (the body, and the parsed str; orjson also needs a scratch copy while it
parses). Here every long `"data:...` string without escapes is cut out of the JSON before
it is parsed and put back, as a `BodyText` pointing into the body buffer, where the parsed
formData has it as a field's value; the file is later decoded from there straight to disk.

The cut is taken only when it changes nothing: each cut string must come back as exactly
one formData value (the body's tokens are identical outside the cuts, so a standalone
placeholder there proves the cut was a whole string). Anything else (a data URL as a key, in
a list, in another field, a repeated key) parses the body as it is.
"""

from __future__ import annotations

import secrets
from typing import Any

from agentsvc.api.routing import parse_json
from agentsvc.services.forms.values import BodyText

# Shorter strings are cheap to parse; only long ones are worth leaving in the buffer.
MIN_CUT_BYTES = 64 * 1024
_PREFIX = "agentsvc-body-text:"  # + a random token per body: a sender cannot forge one


def parse_submit_body(raw: bytes | bytearray) -> Any:
    """Parse a submit body, leaving long data URLs of formData in the buffer."""
    if len(raw) < MIN_CUT_BYTES:
        return parse_json(raw)
    token = f"{_PREFIX}{secrets.token_hex(16)}:"
    pieces: list[bytes] = []
    cuts: list[tuple[int, int]] = []
    kept = 0
    at = raw.find(b'"data:')
    while at >= 0:
        end = raw.find(b'"', at + 1)
        if end < 0:
            break
        if end - at > MIN_CUT_BYTES and raw.find(b"\\", at + 1, end) < 0:
            pieces.append(bytes(raw[kept : at + 1]))
            pieces.append(f"{token}{len(cuts)}".encode())
            cuts.append((at + 1, end))
            kept = end
        at = raw.find(b'"data:', end + 1)
    if not cuts:
        return parse_json(raw)
    pieces.append(bytes(raw[kept:]))
    data = parse_json(b"".join(pieces))
    if _restore(data, token, raw, cuts):
        return data
    return parse_json(raw)


def _restore(data: Any, token: str, raw: bytes | bytearray, cuts: list[tuple[int, int]]) -> bool:
    """Put each cut back into formData as a BodyText; False when one is anywhere else."""
    form = data.get("formData") if isinstance(data, dict) else None
    if not isinstance(form, dict):
        return False
    found: dict[str, BodyText] = {}
    for name, value in form.items():
        if isinstance(value, str) and value.startswith(token):
            start, end = cuts[int(value[len(token) :])]
            found[name] = BodyText(raw, start, end)
    if len(found) != len(cuts):
        return False
    form.update(found)
    return True
