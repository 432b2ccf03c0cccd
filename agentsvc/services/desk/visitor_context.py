"""What the widget tells of the visitor with a chat request: the page, where they came from,
their language (`context`), and the attributes a site gave `AgentWidget.identify`.

Both are as the browser declared them: shown to the team as declared, never used to link
one visitor's data to another's. Addresses other than http(s) are dropped (a `javascript:`
address must never become a link in the dashboard); attributes are small and flat.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from agentsvc.errors import ValidationFailed

MAX_TEXT = 2_000
MAX_ATTRIBUTES = 30
MAX_KEY = 40
MAX_VALUE = 500


@dataclass(frozen=True, slots=True)
class VisitorContext:
    """What a chat request tells of the visitor (None: not told)."""

    page_url: str | None = None
    referrer: str | None = None
    language: str | None = None
    attributes: dict[str, str | int | float | bool] | None = None

    @property
    def has_page(self) -> bool:
        return any(v is not None for v in (self.page_url, self.referrer, self.language))


def web_address(value: str | None) -> str | None:
    """An http(s) address as given, or None (any other scheme, or no host, is dropped)."""
    if not value:
        return None
    text = value.strip()
    try:
        parts = urlsplit(text)
    except ValueError:
        return None
    if parts.scheme.lower() not in ("http", "https") or not parts.netloc:
        return None
    if any(ord(c) < 32 or c.isspace() for c in text):
        return None
    return text


def checked_attributes(attributes: dict[str, Any] | None) -> dict[str, str | int | float | bool]:
    """The attributes, or ValidationFailed naming what is wrong: at most 30 keys of 1 to 40
    characters, each value a string of at most 500 characters, a number or true/false."""
    if attributes is None:
        return {}
    if len(attributes) > MAX_ATTRIBUTES:
        raise ValidationFailed(
            f"user.attributes: at most {MAX_ATTRIBUTES} attributes ({len(attributes)} given)"
        )
    for key, value in attributes.items():
        if not 1 <= len(key) <= MAX_KEY:
            raise ValidationFailed(f"user.attributes: each name must be 1 to {MAX_KEY} characters")
        if isinstance(value, bool | int | float):
            continue
        if isinstance(value, str):
            if len(value) > MAX_VALUE:
                raise ValidationFailed(
                    f"user.attributes.{key}: at most {MAX_VALUE} characters ({len(value)} given)"
                )
            continue
        raise ValidationFailed(
            f"user.attributes.{key}: must be text, a number or true/false (not a list or an object)"
        )
    return dict(attributes)


def visitor_context(
    page_url: str | None,
    referrer: str | None,
    language: str | None,
    attributes: dict[str, Any] | None,
) -> VisitorContext:
    """The visitor's context as stored: addresses that are not http(s) dropped, attributes
    checked (ValidationFailed with a clear message)."""
    checked = checked_attributes(attributes) if attributes is not None else None
    lang = language.strip() if language and language.strip() else None
    return VisitorContext(web_address(page_url), web_address(referrer), lang, checked)
