"""JSON Schemas written by tenants (a tool's inputSchema): refused on save when unsafe, and
validated with bounded work, linear-time patterns and no fetching of anything.

jsonschema, left to itself, fetches a remote `$ref` with urllib (no timeout, no address
check, on the event loop), runs patterns with Python's backtracking `re`, compares
`uniqueItems` pairwise and recurses as deep as the data goes. Here:
- a `$ref`, `$dynamicRef`, `$recursiveRef` or `$id` that is not local (`#...`) is refused
  on save, and validators get an empty registry, so a stored schema fetches nothing either;
- `pattern`, `patternProperties` (and `additionalProperties`/`unevaluatedProperties`,
  which consult it) run with RE2;
- a schema deeper than MAX_SCHEMA_DEPTH or larger than MAX_SCHEMA_BYTES is refused on
  save, an input deeper than MAX_INPUT_DEPTH is refused before validation, and one
  validation takes at most MAX_VALIDATION_STEPS steps; so does checking a schema against
  the metaschema on save (the same work budget: past it the schema is refused as too
  complex), and an MCP listing's schemas share a budget of a few of those;
- every subschema is validated by TenantValidator, whatever draft its `$schema` names.
Both are CPU-bound: they run in a worker thread, before any write transaction.
"""

from __future__ import annotations

import contextvars
import logging
import time
from collections.abc import Iterator
from typing import Any

import attrs
import orjson
import referencing
import referencing.exceptions
from jsonschema import Draft202012Validator, FormatChecker
from jsonschema.exceptions import SchemaError, ValidationError
from jsonschema.validators import extend

from agentsvc.errors import ValidationFailed
from agentsvc.services.tenant_input import patterns as tenant_patterns
from agentsvc.services.tenant_input.patterns import PatternError

log = logging.getLogger(__name__)

MAX_SCHEMA_DEPTH = 32  # levels of JSON objects and arrays in one schema
MAX_SCHEMA_BYTES = 64 * 1024  # of the schema as compact JSON
MAX_INPUT_DEPTH = 64  # levels of JSON objects and arrays in one validated input
# Keyword checks of one validation, or of one schema against the metaschema (about 0.3-0.5 s
# at worst, in a thread); a pattern check counts 1 + its text's length / 16.
MAX_VALIDATION_STEPS = 20_000
MAX_ERRORS = 5
MAX_MESSAGE_CHARS = 300
_REFERENCE_KEYWORDS = ("$ref", "$dynamicRef", "$recursiveRef", "$id")
# No retrieve function: a reference outside the schema itself is unresolvable, never fetched.
_NO_REMOTE: referencing.Registry = referencing.Registry()


class TooComplex(Exception):
    """The validation ran out of steps."""


class _Steps:
    """The steps one check may still take, and those taken since it last let others run."""

    __slots__ = ("left", "since_pause")

    def __init__(self, left: int):
        self.left = left
        self.since_pause = 0


_steps_left: contextvars.ContextVar[_Steps | None] = contextvars.ContextVar(
    "tenant_schema_steps", default=None
)
# A check runs in a worker thread, but holds the GIL while it computes: each time the event
# loop wakes (a request, a database answer) it would wait up to the interpreter's switch
# interval (5 ms) for it, many times per request. So a check pauses briefly every
# PAUSE_EVERY_STEPS steps (about 0.5 ms of work): the loop waits that long at most, and a
# check takes about a third longer.
PAUSE_EVERY_STEPS = 32
PAUSE_SECONDS = 0.0002


def _spend(steps: int) -> None:
    budget = _steps_left.get()
    if budget is None:
        return
    budget.left -= steps
    if budget.left < 0:
        raise TooComplex
    budget.since_pause += steps
    if budget.since_pause >= PAUSE_EVERY_STEPS:
        budget.since_pause = 0
        time.sleep(PAUSE_SECONDS)


def json_depth(value: Any, limit: int) -> int:
    """Nesting depth of a JSON value (a scalar is 0), counted no further than limit + 1."""
    deepest = 0
    stack = [(value, 1)] if isinstance(value, dict | list) else []
    while stack:
        node, level = stack.pop()
        if level > deepest:
            deepest = level
            if deepest > limit:
                return deepest
        children = node.values() if isinstance(node, dict) else node
        stack.extend((child, level + 1) for child in children if isinstance(child, dict | list))
    return deepest


# ── keywords that would use Python's re, or take quadratic time ─────────────────────────


def _matches(pattern: str, text: str) -> bool:
    _spend(1 + len(text) // 16)
    return tenant_patterns.search(pattern, text)


def _pattern(validator, pattern, instance, schema) -> Iterator[ValidationError]:
    if not validator.is_type(instance, "string"):
        return
    try:
        matched = _matches(pattern, instance)
    except PatternError as exc:
        yield ValidationError(f"the schema's pattern {pattern!r} {exc.message}")
        return
    if not matched:
        yield ValidationError(f"{_short(instance)} does not match {pattern!r}")


def _matching_patterns(schema: dict, key: str) -> list[str]:
    """The patternProperties patterns matching a property name (unusable ones match none)."""
    found = []
    for pattern in schema.get("patternProperties", {}):
        try:
            if _matches(pattern, key):
                found.append(pattern)
        except PatternError:
            continue
    return found


def _pattern_properties(validator, patterns, instance, schema) -> Iterator[ValidationError]:
    if not validator.is_type(instance, "object"):
        return
    for pattern, subschema in patterns.items():
        for key, value in instance.items():
            try:
                matched = _matches(pattern, key)
            except PatternError as exc:
                yield ValidationError(f"the schema's pattern {pattern!r} {exc.message}")
                break
            if matched:
                yield from validator.descend(value, subschema, path=key, schema_path=pattern)


def _extras(names: list) -> str:
    shown = ", ".join(_short(name) for name in sorted(names, key=str)[:10])
    more = f" and {len(names) - 10} more" if len(names) > 10 else ""
    return f"{shown}{more} {'was' if len(names) == 1 else 'were'}"


def _additional_properties(validator, allowed, instance, schema) -> Iterator[ValidationError]:
    if not validator.is_type(instance, "object"):
        return
    properties = schema.get("properties", {})
    extras = [
        key for key in instance if key not in properties and not _matching_patterns(schema, key)
    ]
    if validator.is_type(allowed, "object"):
        for extra in extras:
            yield from validator.descend(instance[extra], allowed, path=extra)
    elif not allowed and extras:
        yield ValidationError(
            f"Additional properties are not allowed ({_extras(extras)} unexpected)"
        )


def _evaluated_keys(validator, instance: dict, schema: Any) -> set[str]:
    """Keys evaluated by a schema, for unevaluatedProperties (jsonschema's, with RE2)."""
    _spend(1)
    if not isinstance(schema, dict):
        return set()
    keys: set[str] = set()
    for keyword in ("$ref", "$dynamicRef"):
        reference = schema.get(keyword)
        if reference is not None:
            resolved = validator._resolver.lookup(reference)
            inner = validator.evolve(schema=resolved.contents, _resolver=resolved.resolver)
            keys |= _evaluated_keys(inner, instance, resolved.contents)
    properties = schema.get("properties")
    if isinstance(properties, dict):
        keys |= properties.keys() & instance.keys()
    for keyword in ("additionalProperties", "unevaluatedProperties"):
        subschema = schema.get(keyword)
        if subschema is not None:
            keys |= {
                key
                for key, value in instance.items()
                if next(validator.descend(value, subschema), None) is None
            }
    if "patternProperties" in schema:
        keys |= {key for key in instance if _matching_patterns(schema, key)}
    for key, subschema in (schema.get("dependentSchemas") or {}).items():
        if key in instance:
            keys |= _evaluated_keys(validator, instance, subschema)
    for keyword in ("allOf", "oneOf", "anyOf"):
        for subschema in schema.get(keyword, []):
            if next(validator.descend(instance, subschema), None) is None:
                keys |= _evaluated_keys(validator, instance, subschema)
    if "if" in schema:
        if validator.evolve(schema=schema["if"]).is_valid(instance):
            keys |= _evaluated_keys(validator, instance, schema["if"])
            keys |= _evaluated_keys(validator, instance, schema.get("then"))
        else:
            keys |= _evaluated_keys(validator, instance, schema.get("else"))
    return keys


def _unevaluated_properties(validator, unevaluated, instance, schema):
    if not validator.is_type(instance, "object"):
        return
    evaluated = _evaluated_keys(validator, instance, schema)
    invalid = [
        key
        for key in instance
        if key not in evaluated
        and next(validator.descend(instance[key], unevaluated, path=key), None) is not None
    ]
    if invalid and unevaluated is False:
        yield ValidationError(
            f"Unevaluated properties are not allowed ({_extras(invalid)} unexpected)"
        )
    elif invalid:
        yield ValidationError(
            f"Unevaluated properties are not valid under the given schema ({_extras(invalid)} "
            "unevaluated and invalid)"
        )


def _canonical(value: Any) -> Any:
    """A hashable form of a JSON value under JSON Schema equality (1 == 1.0, true != 1)."""
    if isinstance(value, bool):
        return ("bool", value)
    if isinstance(value, list):
        return ("list", tuple(_canonical(item) for item in value))
    if isinstance(value, dict):
        return ("object", frozenset((key, _canonical(item)) for key, item in value.items()))
    return ("scalar", value)


def _unique_items(validator, unique, instance, schema) -> Iterator[ValidationError]:
    if not unique or not validator.is_type(instance, "array"):
        return
    _spend(1 + len(instance))
    # One pass with a set, where jsonschema compares unsortable items pairwise (n²).
    seen = set()
    for item in instance:
        key = _canonical(item)
        if key in seen:
            yield ValidationError(f"{_short(instance)} has non-unique elements")
            return
        seen.add(key)


def _counted(keyword):
    def run(validator, value, instance, schema):
        _spend(1)
        return keyword(validator, value, instance, schema)

    return run


_OVERRIDES = {
    "pattern": _pattern,
    "patternProperties": _pattern_properties,
    "additionalProperties": _additional_properties,
    "unevaluatedProperties": _unevaluated_properties,
    "uniqueItems": _unique_items,
}
TenantValidator = extend(
    Draft202012Validator,
    validators={
        name: _counted(keyword)
        for name, keyword in {**Draft202012Validator.VALIDATORS, **_OVERRIDES}.items()
    },
)
_EVOLVED_FIELDS = [(f.name, f.alias) for f in attrs.fields(TenantValidator) if f.init]


def _evolve(self, **changes):
    """jsonschema's `evolve`, but always a TenantValidator.

    jsonschema picks the class of a subschema by its `$schema`: a subschema naming any
    draft (every part of the metaschema does) would be validated by jsonschema's own
    class, with Python's backtracking `re` and no step counting.
    """
    changes.setdefault("schema", self.schema)
    for name, init_name in _EVOLVED_FIELDS:
        if init_name not in changes:
            changes[init_name] = getattr(self, name)
    return TenantValidator(**changes)


TenantValidator.evolve = _evolve
# The metaschema's `format: regex` (on `pattern` and `patternProperties`) checked with RE2.
_SAVE_FORMATS = FormatChecker(formats=())
_SAVE_FORMATS.checks("regex", raises=PatternError)(tenant_patterns.compile_pattern)


# ── on save ──────────────────────────────────────────────────────────────────────────────


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _fail(field: str, path: list, message: str) -> ValidationFailed:
    where = ".".join(str(p) for p in [field, *path])
    return ValidationFailed(f"{where}: {message}")


PAUSE_EVERY_NODES = 256  # objects and arrays walked between pauses (see _spend)


def _check_shape(field: str, schema: Any) -> None:
    """Refuse a schema nested deeper than MAX_SCHEMA_DEPTH, larger than MAX_SCHEMA_BYTES, or
    with a reference or `$id` that names something outside the schema itself.

    One walk, pausing now and then like a validation. Every object of the document is
    looked at (even inside `const` or `enum`): a property may be named like a keyword, so
    where a keyword starts cannot be told by name alone.
    """
    outside: tuple[Any, str] | None = None  # (where, keyword) of the first outside reference
    stack: list[tuple[Any, int, Any]] = [(schema, 1, None)]  # node, level, path (linked)
    walked = 0
    while stack:
        node, level, path = stack.pop()
        if level > MAX_SCHEMA_DEPTH:
            raise ValidationFailed(f"{field}: must not nest deeper than {MAX_SCHEMA_DEPTH} levels")
        walked += 1
        if walked % PAUSE_EVERY_NODES == 0:
            time.sleep(PAUSE_SECONDS)
        items = node.items() if isinstance(node, dict) else enumerate(node)
        for key, value in items:
            if (
                outside is None
                and key in _REFERENCE_KEYWORDS
                and isinstance(value, str)
                and not value.startswith("#")
            ):
                outside = (path, key)
            if isinstance(value, dict | list):
                stack.append((value, level + 1, (path, key)))
    if len(orjson.dumps(schema)) > MAX_SCHEMA_BYTES:
        raise ValidationFailed(f"{field}: must be at most {MAX_SCHEMA_BYTES // 1024} KB of JSON")
    if outside is not None:
        raise _fail(
            field,
            [*_unlinked(outside[0]), outside[1]],
            "must be a local reference starting with # (schemas are never fetched "
            "from a URL or file)",
        )


def _unlinked(path: Any) -> list:
    keys: list = []
    while path is not None:
        path, key = path
        keys.append(key)
    return keys[::-1]


class WorkBudget:
    """Steps of checking that several schemas share (the tools of one MCP listing)."""

    def __init__(self, steps: int):
        self.left = steps


TOO_COMPLEX = "is too large or complex to check; use fewer subschemas (properties, anyOf, items...)"


def check_schema(schema: Any, field: str = "inputSchema", shared: WorkBudget | None = None) -> None:
    """Refuse a schema that is invalid, too deep or large, not local, or with a bad pattern.

    Checking it against the metaschema takes at most the steps of one input validation
    (MAX_VALIDATION_STEPS; fewer when `shared` has fewer left, and those used are taken
    from it): past them the schema is refused as too complex. CPU-bound: call it off the
    event loop, and never inside a write transaction.
    """
    if not isinstance(schema, dict):
        raise ValidationFailed(f"{field}: must be a JSON Schema object")
    _check_shape(field, schema)
    allowed = MAX_VALIDATION_STEPS if shared is None else min(MAX_VALIDATION_STEPS, shared.left)
    steps = _Steps(allowed)
    token = _steps_left.set(steps)
    try:
        checker = TenantValidator(
            TenantValidator.META_SCHEMA, format_checker=_SAVE_FORMATS, registry=_NO_REMOTE
        )
        error = next(checker.iter_errors(schema), None)
    except TooComplex:
        raise ValidationFailed(f"{field}: {TOO_COMPLEX}") from None
    finally:
        _steps_left.reset(token)
        if shared is not None:
            shared.left -= allowed - max(steps.left, 0)
    if error is not None:
        exc = SchemaError.create_from(error)
        path = list(exc.absolute_path)
        if exc.validator == "format" and exc.validator_value == "regex":
            problem = tenant_patterns.pattern_problem(exc.instance) or "is not a valid pattern"
            raise _fail(field, path, f"{exc.instance!r} {problem}") from exc
        raise _fail(field, path, _schema_problem(exc, path)) from exc


_JSON_TYPE_WORDS = {
    "array": "a list",
    "object": "an object",
    "string": "a string",
    "integer": "a whole number",
    "number": "a number",
    "boolean": "true or false",
    "null": "null",
}


def _schema_problem(exc: SchemaError, path: list) -> str:
    """What the metaschema expects at the failing place, in words (not jsonschema's)."""
    rule, value = exc.validator, exc.validator_value
    if path and path[-1] == "type" and rule in ("anyOf", "oneOf", "enum"):
        names = ", ".join(sorted(_JSON_TYPE_WORDS))
        return f"must be a JSON Schema type ({names}) or a list of them"
    if rule == "type":
        wanted = [value] if isinstance(value, str) else list(value)
        return "must be " + " or ".join(_JSON_TYPE_WORDS.get(t, t) for t in wanted)
    if rule == "minimum":
        return f"must be at least {value}"
    if rule == "maximum":
        return f"must be at most {value}"
    if rule == "minItems":
        return f"must hold at least {value} item{'s' if value != 1 else ''}"
    if rule == "uniqueItems":
        return "must not repeat an item"
    if rule == "enum":
        return "must be one of " + ", ".join(orjson.dumps(v).decode() for v in value)
    if rule in ("anyOf", "oneOf"):
        return "is not a value JSON Schema accepts here"
    return exc.message


# ── at run time ──────────────────────────────────────────────────────────────────────────


def validation_errors(schema: dict, instance: Any) -> list[str]:
    """Messages naming each place where the instance does not match (a few at most).

    The work is bounded; a problem of the schema itself becomes a message, never an
    exception. This may take a while on a big input: call it off the event loop.
    """
    if json_depth(instance, MAX_INPUT_DEPTH) > MAX_INPUT_DEPTH:
        return [f"the input must not nest deeper than {MAX_INPUT_DEPTH} levels"]
    token = _steps_left.set(_Steps(MAX_VALIDATION_STEPS))
    try:
        validator = TenantValidator(schema, registry=_NO_REMOTE)
        errors = sorted(
            validator.iter_errors(instance), key=lambda e: [str(p) for p in e.absolute_path]
        )
    except TooComplex:
        return ["the input is too large or complex to check against the tool's inputSchema"]
    except RecursionError:
        return ["the input nests too deeply for the tool's inputSchema"]
    except referencing.exceptions.Unresolvable as exc:
        return [f"the tool's inputSchema has a reference that cannot be resolved ({exc})"[:300]]
    except SchemaError as exc:  # stored schemas are checked on save; defensive only
        return [f"the tool's inputSchema is invalid: {exc.message}"[:MAX_MESSAGE_CHARS]]
    except Exception:  # a schema jsonschema cannot apply must not end the chat turn
        log.exception("validating a tool input failed")
        return ["the tool's inputSchema could not be applied to the input"]
    finally:
        _steps_left.reset(token)
    messages = []
    for err in errors[:MAX_ERRORS]:
        where = ".".join(str(p) for p in err.absolute_path)
        where = where if len(where) <= 100 else where[:97] + "..."  # a key can be long too
        message = f"{where}: {err.message}" if where else err.message
        messages.append(message if len(message) <= MAX_MESSAGE_CHARS else message[:297] + "...")
    return messages
