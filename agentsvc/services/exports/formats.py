"""Rows as CSV or JSON Lines.

CSV follows RFC 4180 (every row ends with CRLF; a field with a quote, comma or line break
is quoted, its quotes doubled), and no cell can be run as a formula: C0 control characters
other than tab, line feed and carriage return are dropped (LibreOffice skips a leading NUL
and runs what follows), and a cell whose first character after any whitespace is `=`, `+`,
`-`, `@` or one of their full-width forms, or that starts with a tab or a carriage return,
gets a `'` in front, so a spreadsheet shows it as text (spreadsheets trim leading spaces
when asked to). JSON Lines is one JSON object per line, the values as they are (numbers,
booleans, null, lists, objects; control characters escaped by JSON itself): it is read by
programs, not run by spreadsheets.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Iterable, Sequence
from operator import itemgetter
from typing import Any

import orjson

# The signs that start a formula, ASCII and full-width (U+FF1D, U+FF0B, U+FF0D, U+FF20).
FORMULA_SIGNS = frozenset("=+-@\uff1d\uff0b\uff0d\uff20")
# A first tab or carriage return is defused too (some importers drop it, then run the rest).
_DEFUSED_FIRST = frozenset("\t\r")
# The first characters worth a closer look: a sign, or whitespace before one (str.isspace's
# characters all lie below U+3001).
_LOOK_CLOSER = FORMULA_SIGNS | {chr(c) for c in range(0x3001) if chr(c).isspace()}
# C0 control characters but tab, line feed and carriage return: dropped from every cell.
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f]")
# The same as bytes: in UTF-8 they are single bytes that no other character's encoding holds.
_CONTROL_BYTES = bytes(c for c in range(0x20) if c not in b"\t\n\r")
_SPECIAL = re.compile(r'[",\r\n]')
MEDIA_TYPES = {"csv": "text/csv; charset=utf-8", "jsonl": "application/x-ndjson"}


def defuse(text: str) -> str:
    """Text that a spreadsheet shows and never runs: C0 control characters but tab, line
    feed and carriage return dropped, and a `'` in front of a formula (see the module)."""
    if _CONTROL.search(text) is not None:
        text = _CONTROL.sub("", text)
    return _defused(text)


def _defused(text: str) -> str:
    """The text with a `'` in front when a spreadsheet could take it for a formula (the
    text holds no control character)."""
    if text and text[0] in _LOOK_CLOSER:
        if text[0] in _DEFUSED_FIRST or text.lstrip()[:1] in FORMULA_SIGNS:
            return "'" + text
    return text


def csv_cell(value: Any) -> str:
    """A value as a CSV cell's text: null empty, booleans true/false, lists and objects as
    JSON, and text defused (see `defuse`)."""
    if value is None:
        return ""
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, str):
        return defuse(value)
    if isinstance(value, (int, float)):
        return str(value)
    return csv_cell(orjson.dumps(value).decode())


def csv_field(value: Any) -> str:
    """A value as one CSV field: `csv_cell`'s text, quoted (RFC 4180) when it holds a quote,
    a comma or a line break."""
    text = csv_cell(value)
    if _SPECIAL.search(text):
        return '"' + text.replace('"', '""') + '"'
    return text


def _field_without_controls(value: Any) -> str:
    """`csv_field` for a value known to hold no control character (nothing to drop)."""
    if value.__class__ is str:
        text = _defused(value)
    else:  # a number, a boolean, JSON: never read as a formula (see csv_cell)
        text = csv_cell(value)
    if _SPECIAL.search(text):
        return '"' + text.replace('"', '""') + '"'
    return text


class CsvEncoder:
    """Encodes rows (dicts) as CSV lines under a header of the given columns.

    `plain` names columns whose values the service makes itself (ids, timestamps, fixed
    words: never a quote, comma, line break, control character or formula sign) or null:
    they go as they are. Every other field goes through `csv_field`. Written by hand rather
    than with the csv module: at ~2 µs a row instead of ~7, the bulk of a CSV export's own
    time. Control characters are rare, so a batch is first encoded without looking for
    them, and encoded again, dropping them, only when its bytes hold one (one C-speed pass
    over the bytes instead of a pattern search of every cell).
    """

    def __init__(self, columns: Sequence[str], plain: Collection[str] = ()):
        self.columns = tuple(columns)
        self._checked = [i for i, c in enumerate(self.columns) if c not in plain]
        self._get = itemgetter(*self.columns) if len(self.columns) > 1 else None

    def header(self) -> bytes:
        return (",".join(csv_field(c) for c in self.columns) + "\r\n").encode()

    def rows(self, rows: Iterable[dict[str, Any]]) -> bytes:
        batch = rows if isinstance(rows, list) else list(rows)
        data = self._encode(batch, _field_without_controls)
        if len(data.translate(None, _CONTROL_BYTES)) != len(data):
            data = self._encode(batch, csv_field)
        return data

    def _encode(self, rows: list[dict[str, Any]], field: Callable[[Any], str]) -> bytes:
        columns, checked, get = self.columns, self._checked, self._get
        lines = []
        for row in rows:
            try:
                cells = list(get(row)) if get else [row[columns[0]]]
            except KeyError:  # a row without some column (a form field left out)
                cells = [row.get(c) for c in columns]
            for i in checked:
                value = cells[i]
                if value is not None:
                    cells[i] = field(value)
            lines.append(",".join([cell or "" for cell in cells]))
        lines.append("")
        return "\r\n".join(lines).encode()


def jsonl_rows(rows: Iterable[dict[str, Any]]) -> bytes:
    """Rows as JSON Lines."""
    return b"".join(orjson.dumps(row) + b"\n" for row in rows)
