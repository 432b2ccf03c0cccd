"""An HTTP tool's request URL: its template filled so that model input keeps the URL's shape.

Every value (a `{{SECRET}}` or a `{param}`) is percent-encoded whole, nothing reserved, so no
value can add a path segment, a query item or a fragment. Model input fills only the path and
the query: a `{param}` in the scheme or authority is refused. A path value may not be empty and
no path segment may come out as `.` or `..` (servers resolve `%2E%2E` too, so encoding them is
not enough: they are refused). The query items the template fixes cannot be set again by the
rest of the input, and the scheme, host and port of the result must be the template's.
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, unquote

import orjson
from yarl import URL

# `{{SECRET}}` and `{param}` in one pattern, so a filled-in value is never scanned again.
URL_PLACEHOLDER = re.compile(
    r"\{\{\s*(?P<secret>[A-Za-z_][A-Za-z0-9_]{0,63})\s*\}\}|\{(?P<param>[A-Za-z_][A-Za-z0-9_]*)\}"
)


class UrlRefused(Exception):
    """The URL cannot be built from this input; the message is for the model (no values)."""

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message


@dataclass(frozen=True, slots=True)
class BuiltUrl:
    """The filled URL (already encoded) and the input parameters its placeholders used."""

    url: URL
    used_params: frozenset[str]


@dataclass(frozen=True, slots=True)
class _Slot:
    kind: str  # "secret" or "param"
    name: str


def input_text(value: Any) -> str:
    """An input value as text for a URL or a query item (JSON for lists and objects)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return value
    if isinstance(value, int | float):
        return str(value)
    return orjson.dumps(value).decode()


def _encode(text: str) -> str:
    return quote(text, safe="")


def _mark(template: str) -> tuple[str, dict[str, _Slot]]:
    """The template with each placeholder replaced by a unique marker yarl leaves intact."""
    # Lowercase letters and digits survive yarl's normalising (hosts are lowercased), and a
    # random part keeps the template's own text from ever looking like a marker.
    prefix = "zq" + secrets.token_hex(8)
    slots: dict[str, _Slot] = {}

    def mark(match: re.Match[str]) -> str:
        marker = f"{prefix}n{len(slots)}z"
        if match.group("secret"):
            slots[marker] = _Slot("secret", match.group("secret"))
        else:
            slots[marker] = _Slot("param", match.group("param"))
        return marker

    return URL_PLACEHOLDER.sub(mark, template), slots


def host_params(template: str) -> list[str]:
    """The `{param}` placeholders in the scheme or authority of a URL template, in order."""
    head, sep, rest = template.partition("://")
    authority = re.split(r"[/?#]", rest, maxsplit=1)[0] if sep else ""
    found = URL_PLACEHOLDER.finditer(head + authority)
    return list(dict.fromkeys(m.group("param") for m in found if m.group("param")))


def _fill(text: str, encoded: Mapping[str, str]) -> str:
    for marker, value in encoded.items():
        text = text.replace(marker, value)
    return text


def _check_path_segments(path: str, slots: Mapping[str, _Slot], encoded: Mapping[str, str]):
    """Refuse input that leaves a path segment empty (`/users/` for `/users/{id}`)."""
    for segment in path.split("/"):
        names = [s.name for m, s in slots.items() if s.kind == "param" and m in segment]
        if names and _fill(segment, encoded) == "":
            listed = ", ".join(dict.fromkeys(names))
            raise UrlRefused(f"Input parameter(s) {listed}: a URL path segment cannot be empty")


def build_url(template: str, secret_values: Mapping[str, str], tool_input: dict) -> BuiltUrl:
    """Fill an httpUrl template; raise UrlRefused when the input would change its shape."""
    in_host = host_params(template)
    if in_host:
        raise UrlRefused(
            f"Input parameter(s) {', '.join(in_host)} cannot be used in the host of the URL"
        )
    marked, slots = _mark(template)
    try:
        parsed = URL(marked)
    except ValueError as exc:
        raise UrlRefused("The tool's httpUrl is not a valid URL") from exc
    if any(marker not in str(parsed) for marker in slots):
        # Only a placeholder glued to non-ASCII host text (IDNA-encoded as a whole) gets here.
        raise UrlRefused("The tool's httpUrl cannot be filled: a placeholder is inside a name")
    shape = parsed.with_fragment(None)  # a fragment is never sent
    authority = shape.raw_authority
    if any(s.kind == "param" and m in authority for m, s in slots.items()):
        raise UrlRefused("Input cannot be used in the host of the URL")
    encoded: dict[str, str] = {}  # marker -> its value, percent-encoded
    missing: list[str] = []
    for marker, slot in slots.items():
        if slot.kind == "secret":
            encoded[marker] = _encode(secret_values[slot.name])
            continue
        raw = tool_input.get(slot.name)
        if raw is None:
            missing.append(slot.name)
            continue
        encoded[marker] = _encode(input_text(raw))
    if missing:
        names = ", ".join(dict.fromkeys(missing))
        raise UrlRefused(f"Missing input parameter(s) for the URL: {names}")
    _check_path_segments(shape.raw_path, slots, encoded)
    url = URL(_fill(str(shape), encoded), encoded=True)
    if any(unquote(segment) in (".", "..") for segment in url.raw_path.split("/")):
        raise UrlRefused('Input for the URL path cannot be "." or "..": it would change the path')
    expected = URL(f"{shape.scheme}://{_fill(authority, encoded)}/", encoded=True)
    if (url.scheme, (url.raw_host or "").lower(), url.port) != (
        expected.scheme,
        (expected.raw_host or "").lower(),
        expected.port,
    ):
        raise UrlRefused("Input cannot change the scheme, host or port of the URL")
    used = frozenset(s.name for s in slots.values() if s.kind == "param")
    return BuiltUrl(url, used)


def _query_key(key: str) -> str:
    """A query key as lenient servers read it: any case, spaces around, PHP's `key[]`, `a.b`."""
    return key.strip().lower().split("[", 1)[0].replace(".", "_").replace(" ", "_")


def add_query(url: URL, items: list[tuple[str, str]]) -> URL:
    """Append query items; raise UrlRefused when one sets a key the URL already fixes."""
    fixed = {_query_key(key) for key in url.query.keys()}
    taken = sorted({key for key, _ in items if _query_key(key) in fixed})
    if taken:
        raise UrlRefused(
            f"Input parameter(s) {', '.join(taken)} cannot be sent: the tool's URL fixes them"
        )
    return url.extend_query(items) if items else url
