"""The one reference of trigger matching: page globs and custom-event `eventData` operators.

The widget implements the same rules in JavaScript; both run the shared vectors in
tests/vectors/trigger_rules.json, so server and widget cannot disagree. Keep every rule
here simple enough to port line by line.

Page globs (matched against a path such as `location.pathname`):
- a pattern starts with `/` and is split into segments at `/`;
- a literal segment matches the same text exactly (case-sensitive);
- `*` matches exactly one non-empty segment;
- `**` matches any number of segments, zero included (`/blog/**` matches `/blog`);
- a trailing `/` is ignored on both sides (except the root `/`), and anything from the
  first `?` or `#` of the path on is ignored.

eventData conditions (an object of field -> condition; every field must hold):
- a field name may be a dotted path into nested objects (`user.plan`);
- a condition is either a literal (matched with `$eq`) or an operator object: a non-empty
  object whose keys all start with `$`; every operator in it must hold;
- equality is JSON equality: same type (a boolean is never a number), numbers compared as
  doubles, arrays element by element, objects key by key;
- `$eq`/`$ne`: equal / not equal (an absent field is "not equal");
- `$gt $gte $lt $lte`: the field and the operand are both numbers and compare so;
- `$in`/`$nin`: the field equals / equals none of the operand array's items (absent: `$nin`);
- `$exists`: the field is present (even with null) when true, absent when false.
"""

from __future__ import annotations

import math
from typing import Any

OPERATORS = ("$eq", "$ne", "$gt", "$gte", "$lt", "$lte", "$in", "$nin", "$exists")
MAX_PATTERN_LENGTH = 2000
_FORBIDDEN_PATTERN_CHARS = set(" \t\r\n?#")
_MISSING = object()


def _segments(path: str) -> list[str]:
    if len(path) > 1 and path.endswith("/"):
        path = path[:-1]
    return path[1:].split("/") if path != "/" else []


def glob_error(pattern: Any) -> str | None:
    """Explain why a page pattern is not a valid glob, or None when it is."""
    if not isinstance(pattern, str) or not pattern:
        return "must be a non-empty string"
    if len(pattern) > MAX_PATTERN_LENGTH:
        return f"must be at most {MAX_PATTERN_LENGTH} characters"
    if not pattern.startswith("/"):
        return "must start with /"
    if any(ch in _FORBIDDEN_PATTERN_CHARS for ch in pattern):
        return "may not contain whitespace, ? or #"
    for segment in _segments(pattern):
        if segment == "":
            return "may not contain an empty segment (//)"
        if "*" in segment and segment not in ("*", "**"):
            return f"segment {segment!r}: * and ** must be whole segments"
    return None


def glob_matches(pattern: str, path: str) -> bool:
    """Return whether a path matches a page glob (the pattern is assumed valid)."""
    for mark in ("?", "#"):
        path = path.split(mark, 1)[0]
    if not path.startswith("/"):
        return False
    return _match(_segments(pattern), _segments(path))


def _match(pattern: list[str], path: list[str]) -> bool:
    # Classic backtracking over segments; `**` tries every split, zero segments first.
    if not pattern:
        return not path
    head, rest = pattern[0], pattern[1:]
    if head == "**":
        return any(_match(rest, path[i:]) for i in range(len(path) + 1))
    if not path:
        return False
    if head == "*":
        return path[0] != "" and _match(rest, path[1:])
    return head == path[0] and _match(rest, path[1:])


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _is_operator_object(condition: Any) -> bool:
    return (
        isinstance(condition, dict)
        and bool(condition)
        and all(k.startswith("$") for k in condition)
    )


def event_data_error(conditions: Any) -> str | None:
    """Explain why eventData conditions are invalid (prefixed with the field), or None."""
    if not isinstance(conditions, dict):
        return "must be an object"
    for field, condition in conditions.items():
        if not field or any(part == "" for part in field.split(".")):
            return f"{field!r}: field names must be non-empty (dotted paths allowed)"
        if field.startswith("$"):
            return f"{field}: an operator cannot stand for a field name"
        if isinstance(condition, dict) and any(k.startswith("$") for k in condition):
            if not _is_operator_object(condition):
                return f"{field}: cannot mix operators and plain keys"
            for op, operand in condition.items():
                problem = _operand_error(op, operand)
                if problem:
                    return f"{field}.{op}: {problem}"
    return None


def _operand_error(op: str, operand: Any) -> str | None:
    if op not in OPERATORS:
        return f"unknown operator; allowed: {' '.join(OPERATORS)}"
    if op in ("$gt", "$gte", "$lt", "$lte") and not _is_number(operand):
        return "must be a number"
    if op in ("$in", "$nin") and not isinstance(operand, list):
        return "must be an array"
    if op == "$exists" and not isinstance(operand, bool):
        return "must be true or false"
    return None


def _lookup(data: Any, field: str) -> Any:
    value = data
    for part in field.split("."):
        if not isinstance(value, dict) or part not in value:
            return _MISSING
        value = value[part]
    return value


def json_equal(a: Any, b: Any) -> bool:
    """JSON equality: same type, numbers as doubles, arrays and objects element-wise."""
    if _is_number(a) and _is_number(b):
        return float(a) == float(b)
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(json_equal(a[k], b[k]) for k in a)
    if a is None or b is None:
        return a is None and b is None
    return type(a) is type(b) and a == b


def _compare(op: str, value: Any, operand: float) -> bool:
    if not _is_number(value):
        return False
    x, y = float(value), float(operand)
    if math.isnan(x):
        return False
    if op == "$gt":
        return x > y
    if op == "$gte":
        return x >= y
    if op == "$lt":
        return x < y
    return x <= y


def _holds(op: str, operand: Any, value: Any) -> bool:
    present = value is not _MISSING
    if op == "$eq":
        return present and json_equal(value, operand)
    if op == "$ne":
        return not (present and json_equal(value, operand))
    if op in ("$gt", "$gte", "$lt", "$lte"):
        return present and _compare(op, value, operand)
    if op == "$in":
        return present and any(json_equal(value, item) for item in operand)
    if op == "$nin":
        return not (present and any(json_equal(value, item) for item in operand))
    if op == "$exists":
        return present == bool(operand)
    raise ValueError(f"unknown operator {op}")


def event_data_matches(conditions: dict[str, Any], data: Any) -> bool:
    """Return whether event data satisfies eventData conditions (assumed valid)."""
    if not isinstance(data, dict):
        data = {}
    for field, condition in conditions.items():
        value = _lookup(data, field)
        if _is_operator_object(condition):
            if not all(_holds(op, operand, value) for op, operand in condition.items()):
                return False
        elif not _holds("$eq", condition, value):
            return False
    return True


def custom_event_matches(conditions: dict[str, Any], event: str, data: Any) -> bool:
    """Return whether a custom event (name and data) fires a `custom_event` trigger."""
    if conditions.get("event") != event:
        return False
    return event_data_matches(conditions.get("eventData") or {}, data)
