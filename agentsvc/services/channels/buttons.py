"""Quick replies on channels: the buttons the widget shows for a tool whose
`displayConfig.type` is "buttons" (static/widget.js, `renderToolResult`), derived here the
same way from the turn's `tool_result` event, so a channel's reply can carry them.

The widget takes the result's items (the output when it is a list, else its
`fieldMappings.items` field, else the output alone); an item that is an object shows its
`label` (or `value`) and sends its `value` (or `label`); any other item shows and sends
itself. Here control characters become spaces (a label is one line on every platform),
blank items are dropped, and at most `MAX_BUTTONS` are kept; each platform cuts labels to
its own limit when it builds its message.
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass
from typing import Any

import orjson

MAX_BUTTONS = 10
LABEL_LIMIT = 100  # before a platform's own, shorter limit
TEXT_LIMIT = 10_000  # what a press sends: as long as a message a channel reads
VALUE_PREFIX = "v:"  # a button's platform id carrying the text it sends
KEY_PREFIX = "k:"  # a button's platform id naming its place (its text was too long)


@dataclass(frozen=True, slots=True)
class Button:
    """A quick reply: what the person sees, and the text a press sends."""

    label: str
    text: str


def _js_string(value: Any) -> str:
    """A JSON value as the widget's `str()` shows it (JavaScript's String/JSON.stringify)."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, dict | list):
        return orjson.dumps(value).decode()
    return str(value)


# Joiners shape emoji and some scripts' words: the only format characters kept.
_JOINERS = frozenset("\u200c\u200d")
_BLANKED = frozenset(("Cc", "Cf", "Cs", "Co", "Zl", "Zp"))


def one_line(text: str) -> str:
    """A text with control and format characters (line breaks, bidi overrides, NUL...) as
    spaces, runs of spaces as one, trimmed."""
    kept = "".join(
        " " if unicodedata.category(c) in _BLANKED and c not in _JOINERS else c for c in text
    )
    return " ".join(kept.split())


def cut(text: str, limit: int) -> str:
    """A text of at most `limit` characters, an ellipsis marking a cut."""
    if len(text) <= limit:
        return text
    return text[: limit - 1].rstrip() + "…"


def _lookup(data: Any, field: str) -> Any:
    """The widget's `lookup`: a dotted path into objects, None when it is missing."""
    for part in field.split("."):
        if not isinstance(data, dict) or part not in data:
            return None
        data = data[part]
    return data


def _items(output: Any, display: dict[str, Any]) -> list[Any]:
    if isinstance(output, list):
        return output
    if isinstance(output, dict):
        mappings = display.get("fieldMappings")
        field = mappings.get("items") if isinstance(mappings, dict) else None
        found = _lookup(output, field if isinstance(field, str) and field else "items")
        if isinstance(found, list):
            return found
    return [output]


def _button(item: Any) -> Button | None:
    if isinstance(item, dict):
        label = item.get("label") if item.get("label") is not None else item.get("value")
        text = item.get("value") if item.get("value") is not None else item.get("label")
    else:
        label = text = item
    shown, sent = one_line(_js_string(label)), one_line(_js_string(text))
    if not shown or not sent:
        return None  # nothing to show, or a press that would send nothing
    return Button(cut(shown, LABEL_LIMIT), sent[:TEXT_LIMIT])


def from_tool_result(data: dict[str, Any]) -> tuple[Button, ...]:
    """The quick replies of a `tool_result` event (none unless its tool shows buttons)."""
    display = data.get("displayConfig")
    if data.get("isError") or data.get("form") or not isinstance(display, dict):
        return ()
    if display.get("type") != "buttons":
        return ()
    found: list[Button] = []
    for item in _items(data.get("output"), display):
        button = _button(item)
        if button is not None and all(b.label != button.label for b in found):
            found.append(button)
        if len(found) == MAX_BUTTONS:
            break
    return tuple(found)


def options_line(buttons: tuple[Button, ...]) -> str:
    """The quick replies as one line of text, `• Yes  • No` (where there are no buttons)."""
    return "  ".join(f"• {b.label}" for b in buttons)


def platform_id(button: Button, index: int, limit: int) -> str:
    """The id a platform carries back when the button is pressed (Telegram's
    callback_data, WhatsApp's reply id): the text itself when it fits in `limit` UTF-8
    bytes, else the button's place (read back as the label the person pressed)."""
    carried = VALUE_PREFIX + button.text
    return carried if len(carried.encode()) <= limit else f"{KEY_PREFIX}{index}"


def carried_text(platform_id: str) -> str | None:
    """The text a pressed button's id carries (None: it names a place, or is not ours)."""
    if platform_id.startswith(VALUE_PREFIX) and platform_id[len(VALUE_PREFIX) :].strip():
        return platform_id[len(VALUE_PREFIX) :]
    return None
