"""Validation messages for people: a pydantic error becomes `field: what is expected`.

The expectation is read from the model's JSON Schema, the same one the OpenAPI document
publishes, so a message states the field's type and bounds as documented ("temperature:
must be a number from 0 to 100") whichever check failed. No message carries pydantic's
wording, error types, class names or regular expressions.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

import orjson
from pydantic import BaseModel, TypeAdapter, ValidationError

from agentsvc.text_patterns import MODEL_ID_MARKER, PATTERN_PHRASES

MAX_ERRORS = 5
_MAX_SCANNED = 50

_EMAIL_PHRASE = "an e-mail address{length}"
_PATTERN_FALLBACK = "a string{length} in the accepted format"

# Locations name union members and validators too ("priority.function-before[...]",
# "user.ChatUser", "value.str"); users see field names only.
_TAGS = {"str", "int", "float", "bool", "dict", "list", "none", "literal", "tagged-union"}
_TAG_PREFIX = re.compile(
    r"^(?:constrained-|(?:function-(?:before|after|wrap|plain)|tagged-union|lax-or-strict"
    r"|json-or-python|nullable|union|default|model|is-instance|chain|literal|list|dict|set"
    r"|tuple|frozenset)\[)"
)

# When the schema cannot say (no model given, or a location it does not describe).
_BY_TYPE = {
    "float_type": "must be a number",
    "float_parsing": "must be a number",
    "int_type": "must be a whole number",
    "int_parsing": "must be a whole number",
    "int_from_float": "must be a whole number",
    "finite_number": "must be a finite number",
    "string_type": "must be a string",
    "bool_type": "must be true or false",
    "bool_parsing": "must be true or false",
    "dict_type": "must be an object",
    "model_type": "must be an object",
    "model_attributes_type": "must be an object",
    "list_type": "must be a list",
    "none_required": "must be null",
    "string_pattern_mismatch": "must be a string in the accepted format",
    "union_tag_invalid": "must be one of the documented kinds",
}


def describe_validation_error(
    exc: ValidationError, prefix: str = "", model: type[BaseModel] | None = None
) -> str:
    """Turn a pydantic error into one message naming each field and what it expects."""
    schema = _schema(model) if model is not None else None
    found: dict[str, str] = {}
    for item in exc.errors(include_url=False):
        field, text = _describe_item(item, schema)
        name = f"{prefix}{field}" if field else (prefix.rstrip(".") or "body")
        found.setdefault(name, text)  # union members repeat one failure: the first says it
        if len(found) >= _MAX_SCANNED:  # a list of 100,000 bad items: the first few say it
            break
    # A union's other members fail at the field itself ("user" is not null) when the value
    # had the right shape and failed inside ("user.email"): the inner failure is the one.
    names = [n for n in found if not any(o.startswith(n + ".") for o in found)]
    parts = [f"{name}: {found[name]}" for name in names[:MAX_ERRORS]]
    return "; ".join(parts) or "Invalid request"


def _describe_item(item: Any, schema: dict[str, Any] | None) -> tuple[str, str]:
    kind = item["type"]
    loc = tuple(item["loc"])
    ctx = item.get("ctx") or {}
    if kind == "null_forbidden":  # RequestModel refuses an explicit null (models.py)
        loc = (*loc, ctx.get("field", ""))
    if loc and loc[-1] == "[key]":  # a key of a map outside its documented names
        path, _ = _walk(schema, loc[:-1])
        return ".".join(str(p) for p in path), "is not a known field"
    path, node = _walk(schema, loc)
    field = ".".join(str(p) for p in path)
    if kind == "missing":
        return field, "is required"
    if kind == "extra_forbidden":
        return field, "is not a known field"
    expected = expectation(node, schema) if node is not None else None
    if kind == "null_forbidden":
        return field, f"may not be null, must be {expected}" if expected else "may not be null"
    if kind in ("value_error", "assertion_error"):
        # Our own validators' words: pydantic prefixes them with "Value error, ".
        return field, _own_words(item["msg"])
    if expected:
        return field, f"must be {expected}"
    return field, _by_type(kind, ctx)


def _own_words(msg: str) -> str:
    for lead in ("Value error, ", "Assertion failed, "):
        if msg.startswith(lead):
            return msg[len(lead) :]
    return msg


def _by_type(kind: str, ctx: dict[str, Any]) -> str:
    if kind in _BY_TYPE:
        return _BY_TYPE[kind]
    if kind in ("literal_error", "enum"):
        return f"must be one of {ctx.get('expected', 'the documented values')}"
    bounds = {
        "less_than_equal": ("at most", "le"),
        "less_than": ("less than", "lt"),
        "greater_than_equal": ("at least", "ge"),
        "greater_than": ("greater than", "gt"),
    }
    if kind in bounds:
        words, key = bounds[kind]
        return f"must be {words} {_number(ctx.get(key))}"
    if kind == "string_too_long":
        return f"must be at most {ctx.get('max_length')} characters"
    if kind == "string_too_short":
        return f"must be at least {ctx.get('min_length')} characters"
    if kind == "too_long":
        return f"must have at most {ctx.get('max_length')} items"
    if kind == "too_short":
        return f"must have at least {ctx.get('min_length')} items"
    return "is not a valid value"


@lru_cache(maxsize=256)
def _schema(model: type[BaseModel]) -> dict[str, Any]:
    # Built on a model's first validation error only, then kept: the happy path pays nothing.
    return TypeAdapter(model).json_schema(mode="validation")


def _deref(node: dict[str, Any], root: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in node:
        target = root.get("$defs", {}).get(node["$ref"].rsplit("/", 1)[-1], {})
        rest = {k: v for k, v in node.items() if k != "$ref"}
        node = {**target, **rest}
    return node


def _branches(node: dict[str, Any], root: dict[str, Any]) -> list[dict[str, Any]]:
    """The alternatives a value may take, each with the container's own keywords merged."""
    node = _deref(node, root)
    options = node.get("anyOf") or node.get("oneOf")
    if not options or not all("type" in o or "$ref" in o or "enum" in o for o in options):
        return [node]
    shared = {k: v for k, v in node.items() if k not in ("anyOf", "oneOf")}
    merged = []
    for option in options:
        option = _deref(option, root)
        if option.get("type") == "null":
            merged.append(option)
        else:
            merged.append({**shared, **option})
    return merged


def _is_tag(part: str, root: dict[str, Any]) -> bool:
    return part in _TAGS or bool(_TAG_PREFIX.match(part)) or part in root.get("$defs", {})


def _walk(root: dict[str, Any] | None, loc: tuple) -> tuple[list[Any], dict[str, Any] | None]:
    """The location as the client spelled it (union tags dropped) and its schema node."""
    path: list[Any] = []
    node = root
    for part in loc:
        if isinstance(part, str) and (part == "__root__" or not part):
            continue
        if node is None or root is None:
            if isinstance(part, int) or not _is_tag(part, root or {}):
                path.append(part)
            continue
        branches = [b for b in _branches(node, root) if b.get("type") != "null"]
        if isinstance(part, int):
            path.append(part)
            items = [b["items"] for b in branches if isinstance(b.get("items"), dict)]
            node = items[0] if items else None
            continue
        child = None
        for branch in branches:
            if part in branch.get("properties", {}):
                child = branch["properties"][part]
                break
        if child is None and _is_tag(part, root):
            continue
        if child is None:
            extra = [b.get("additionalProperties") for b in branches if b.get("type") == "object"]
            child = next((e for e in extra if isinstance(e, dict)), None)
        path.append(part)
        node = child
    return path, node


def expectation(node: dict[str, Any], root: dict[str, Any] | None = None) -> str:
    """What a value of this schema node must be, in words ("a number from 0 to 100")."""
    root = root or {}
    branches = _branches(node, root)
    phrases = [_phrase(b, root) for b in branches if b.get("type") != "null"]
    phrases = list(dict.fromkeys(p for p in phrases if p))
    text = " or ".join(phrases) if phrases else "a valid value"
    if len(branches) > 1 and any(b.get("type") == "null" for b in branches):
        text += ", or null"
    return text


def _phrase(node: dict[str, Any], root: dict[str, Any]) -> str:
    node = _deref(node, root)
    if "const" in node:
        return _json(node["const"])
    if "enum" in node:
        values = [_json(v) for v in node["enum"]]
        if len(values) == 1:
            return values[0]
        if len(values) == 2:
            return f"{values[0]} or {values[1]}"
        return "one of " + ", ".join(values)
    kind = node.get("type")
    if isinstance(kind, list):
        return " or ".join(_phrase({**node, "type": k}, root) for k in kind if k != "null")
    if kind in ("number", "integer"):
        noun = "a whole number" if kind == "integer" else "a number"
        return noun + _range(node)
    if kind == "string":
        return _string(node)
    if kind == "boolean":
        return "true or false"
    if kind == "array":
        return _array(node, root)
    if kind == "object" or "properties" in node:
        return _object(node, root)
    if "anyOf" in node or "oneOf" in node:
        return expectation(node, root)
    return ""


def _string(node: dict[str, Any]) -> str:
    if node.get(MODEL_ID_MARKER):
        return "a model id (builtin or PROVIDER/MODEL)"
    pattern = node.get("pattern")
    template = "a string{length}" if pattern is None else pattern_phrase(pattern)
    if template is None:
        template = _PATTERN_FALLBACK
    skip_min = template is _EMAIL_PHRASE  # "an e-mail address of 3 to 254" says nothing
    return template.format(length=_length(node, "characters", skip_min=skip_min))


def pattern_phrase(pattern: str) -> str | None:
    """The words for a documented string pattern (a template with `{length}`), if known."""
    if "@" in pattern:  # every e-mail pattern we declare is some `local@domain`
        return _EMAIL_PHRASE
    return PATTERN_PHRASES.get(pattern)


def _array(node: dict[str, Any], root: dict[str, Any]) -> str:
    items = node.get("items")
    noun = "items"
    if isinstance(items, dict):
        item = _deref(items, root)
        noun = {
            "string": "strings",
            "number": "numbers",
            "integer": "whole numbers",
            "boolean": "booleans",
            "object": "objects",
            "array": "lists",
        }.get(item.get("type"), "items")
        if noun == "objects" and item.get("properties"):
            noun = f"objects ({', '.join(item['properties'])})"
    count = _count(node.get("minItems"), node.get("maxItems"))
    return f"a list of {count + ' ' if count else ''}{noun}"


def _object(node: dict[str, Any], root: dict[str, Any]) -> str:
    props = node.get("properties")
    if props:
        return f"an object with the fields {', '.join(props)}"
    extra = node.get("additionalProperties")
    if isinstance(extra, dict) and extra.get("type") in ("string", "number", "boolean"):
        return f"an object of {extra['type']}s"
    return "an object"


def _range(node: dict[str, Any]) -> str:
    low, high = node.get("minimum"), node.get("maximum")
    if low is not None and high is not None:
        return f" from {_number(low)} to {_number(high)}"
    if low is not None:
        return f" of at least {_number(low)}"
    if high is not None:
        return f" of at most {_number(high)}"
    if node.get("exclusiveMinimum") is not None:
        return f" greater than {_number(node['exclusiveMinimum'])}"
    if node.get("exclusiveMaximum") is not None:
        return f" less than {_number(node['exclusiveMaximum'])}"
    return ""


def _length(node: dict[str, Any], unit: str, skip_min: bool = False) -> str:
    low = None if skip_min else node.get("minLength")
    high = node.get("maxLength")
    count = _count(low, high)
    if count.endswith(" 1") and unit.endswith("s"):
        unit = unit[:-1]  # "at least 1 character"
    return f" of {count} {unit}" if count else ""


def _count(low: int | None, high: int | None) -> str:
    if low and high is not None:
        return f"{low} to {high}"
    if high is not None:
        return f"at most {high}"
    if low:
        return f"at least {low}"
    return ""


def _number(value: Any) -> str:
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return str(value)


def _json(value: Any) -> str:
    return orjson.dumps(value).decode()
