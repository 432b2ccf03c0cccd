"""Include and exclude patterns: globs over a page's path, compiled once and matched in
linear time (RE2), so a tenant's pattern cannot make a sync spin."""

from __future__ import annotations

import re
from typing import Any

from agentsvc.errors import ValidationFailed
from agentsvc.services.tenant_input.patterns import PatternError, compile_pattern

MAX_PATTERN_LENGTH = 300


class Globs:
    """Patterns such as `/docs/**` or `/blog/*.html`: `*` is any text but `/`, `**` any
    text, `?` one character but `/`, `[a-z]` one of a class."""

    def __init__(self, include: list[str], exclude: list[str]):
        self._include = [compile_glob(p, "include") for p in include]
        self._exclude = [compile_glob(p, "exclude") for p in exclude]

    def allows(self, path: str) -> bool:
        """A path is kept when some include pattern (or none is given) and no exclude one
        matches it."""
        included = not self._include or any(p.fullmatch(path) for p in self._include)
        return included and not any(p.fullmatch(path) for p in self._exclude)


def _class(pattern: str, at: int, field: str) -> tuple[str, int]:
    """The character class opening at `at` as a regular expression, and where it ends."""
    end = at + 1
    if end < len(pattern) and pattern[end] in "!^":
        end += 1
    if end < len(pattern) and pattern[end] == "]":
        end += 1
    while end < len(pattern) and pattern[end] != "]":
        end += 1
    if end >= len(pattern):
        raise ValidationFailed(f"{field}: the pattern {pattern} does not compile ([ is not closed)")
    inner = pattern[at + 1 : end]
    negate = inner[:1] in ("!", "^")
    body = inner[1:] if negate else inner
    if not body:
        raise ValidationFailed(f"{field}: the pattern {pattern} does not compile (empty [])")
    escaped = "".join("\\" + c if c in "\\^[]" else c for c in body)
    return ("[^" if negate else "[") + escaped + "]", end + 1


def _translate(pattern: str, field: str) -> str:
    out: list[str] = []
    at = 0
    while at < len(pattern):
        char = pattern[at]
        if pattern.startswith("**", at):
            out.append(".*")
            at += 2
        elif char == "*":
            out.append("[^/]*")
            at += 1
        elif char == "?":
            out.append("[^/]")
            at += 1
        elif char == "[":
            part, at = _class(pattern, at, field)
            out.append(part)
        else:
            out.append(re.escape(char))
            at += 1
    return "".join(out)


def compile_glob(pattern: str, field: str) -> Any:
    """A glob as a compiled RE2 expression; ValidationFailed naming the field when it does
    not compile."""
    if not pattern or len(pattern) > MAX_PATTERN_LENGTH or "\x00" in pattern:
        raise ValidationFailed(
            f"{field}: each pattern must have 1 to {MAX_PATTERN_LENGTH} characters"
        )
    try:
        return compile_pattern(_translate(pattern, field))
    except PatternError as exc:
        raise ValidationFailed(
            f"{field}: the pattern {pattern} does not compile (it {exc.message})"
        ) from exc
