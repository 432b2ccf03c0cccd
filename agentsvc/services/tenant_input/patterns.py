"""Regular expressions written by tenants: run with RE2, in time linear in the text.

Python's `re` backtracks, so a pattern like `^(a+)+$` takes exponential time on a few
dozen characters. Every tenant pattern (a form field's `pattern` rule, an inputSchema's
`pattern` and `patternProperties`) goes through this module instead: RE2 has no
backreferences or lookaround, and refuses patterns it cannot run in linear time.
"""

from __future__ import annotations

import functools
from typing import Any

import re2

MAX_PATTERN_CHARS = 1000
# RE2 instructions of the compiled pattern. The match time is linear in the text, but its
# factor grows with the program: under 2,000 instructions a 10,000-character text takes
# about 10 ms at worst (`^.{0,200}$` is 1,802; `(.?){1000}a{1000}`, 12,004, takes 1.7 s).
MAX_PROGRAM_SIZE = 2000
CACHE_SIZE = 512

_OPTIONS = re2.Options()
_OPTIONS.log_errors = False  # a refused pattern is the tenant's error, not a log line


class PatternError(ValueError):
    """A pattern the service will not run; `message` says why, for the tenant."""

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message


@functools.lru_cache(maxsize=CACHE_SIZE)
def _compile(pattern: str) -> Any:
    """The compiled pattern, or the PatternError explaining why not (failures are cached too)."""
    if len(pattern) > MAX_PATTERN_CHARS:
        return PatternError(f"must be at most {MAX_PATTERN_CHARS} characters")
    try:
        compiled = re2.compile(pattern, _OPTIONS)
    except re2.error as exc:
        reason = exc.args[0] if exc.args else "invalid"
        reason = reason.decode(errors="replace") if isinstance(reason, bytes) else str(reason)
        return PatternError(
            f"is not a pattern the service can run ({reason}); patterns use RE2 syntax: "
            "no backreferences or lookaround"
        )
    if compiled._regexp.ProgramSize() > MAX_PROGRAM_SIZE:
        return PatternError(
            "is too complex (its compiled form is over "
            f"{MAX_PROGRAM_SIZE} steps); use smaller repetition counts"
        )
    return compiled


def compile_pattern(pattern: Any) -> Any:
    """Compile a tenant pattern with RE2, or raise PatternError."""
    if not isinstance(pattern, str):
        raise PatternError("must be a string")
    compiled = _compile(pattern)
    if isinstance(compiled, PatternError):
        raise compiled
    return compiled


def pattern_problem(pattern: Any) -> str | None:
    """Why a tenant pattern is refused, or None when the service can run it."""
    try:
        compile_pattern(pattern)
    except PatternError as exc:
        return exc.message
    return None


def search(pattern: str, text: str) -> bool:
    """Whether the pattern matches somewhere in the text (JSON Schema `pattern`)."""
    return compile_pattern(pattern).search(text) is not None


def fullmatch(pattern: str, text: str) -> bool:
    """Whether the pattern matches the whole text (a form field's `pattern` rule)."""
    return compile_pattern(pattern).fullmatch(text) is not None
