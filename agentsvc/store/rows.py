"""Small helpers shared by store modules for JSON columns and row mapping."""

from __future__ import annotations

from typing import Any

import orjson


def dump_json(value: Any) -> str | None:
    """Serialise a value for a JSON column; None stays NULL."""
    return None if value is None else orjson.dumps(value).decode()


def load_json(text: str | None) -> Any:
    """Parse a JSON column; NULL becomes None."""
    return None if text is None else orjson.loads(text)
