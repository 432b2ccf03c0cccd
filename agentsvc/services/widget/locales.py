"""The widget's locale tables: one JSON file per language under `static/widget-locales/`.

English is the reference (`en.json`, also built into `widget.js`); every other table has
exactly its keys. The files are read once and served as they are.
"""

from __future__ import annotations

import functools
import json
import re
from pathlib import Path

LOCALE_DIR = Path(__file__).resolve().parent.parent.parent / "static" / "widget-locales"
# Every language the widget speaks (ISO 639-1), in the order the dashboard lists them.
LOCALES = ("en", "de", "fr", "es", "pt", "it", "nl", "pl", "tr", "ar", "he", "ja", "zh")
RIGHT_TO_LEFT = frozenset({"ar", "he"})
# Strings an owner may set beyond the tables' keys (no built-in text: absent, not shown).
EXTRA_KEYS = ("welcome",)


@functools.cache
def locale_bytes(code: str) -> bytes:
    """The locale file of a language, as served (KeyError for an unknown code)."""
    if code not in LOCALES:
        raise KeyError(code)
    return (LOCALE_DIR / f"{code}.json").read_bytes()


@functools.cache
def string_keys() -> tuple[str, ...]:
    """The keys of the locale tables, in English's order."""
    return tuple(json.loads(locale_bytes("en")))


def snake_case(key: str) -> str:
    """A camelCase string key as a Python name (`openChat` -> `open_chat`)."""
    return re.sub(r"(?<!^)(?=[A-Z])", "_", key).lower()
