"""An agent's guardrails as stored and shown: their shape, their defaults, their limits, and
the check of a change (every pattern compiled by RE2 first).

Kept as the API shows them (camelCase JSON on the agent, and in its versions):
`{redact: {kinds, patterns: [{name, pattern}]}, redactFrom, blockedTopics: [{name, words,
patterns, reply}], mustNotSay: {words, patterns, fallback}, maxVisitorMessageChars}`.
A change names the top-level fields it replaces; the others stay as they were.
"""

from __future__ import annotations

import copy
from typing import Any

from agentsvc.errors import ValidationFailed
from agentsvc.services.guardrails import rules
from agentsvc.services.guardrails.detectors import KINDS
from agentsvc.services.tenant_input.patterns import PatternError, compile_pattern

# Limits (docs/integrators/guardrails.md says them): they bound the work of every message.
MAX_REDACT_PATTERNS = 10
MAX_TOPICS = 20
MAX_TOPIC_PATTERNS = 5
MAX_MUST_NOT_SAY_PATTERNS = 20
MAX_WORDS = 100  # per topic, and in mustNotSay
MAX_WORD_CHARS = 100
MAX_PATTERN_CHARS = 500
MAX_NAME_CHARS = 40
MAX_REPLY_CHARS = 2000
MAX_MESSAGE_CHARS = 100_000  # the longest message /chat takes at all
WHERE = ("model", "storage")

DEFAULT_REPLY = rules.DEFAULT_REPLY
DEFAULT_FALLBACK = rules.DEFAULT_FALLBACK
OFF: dict[str, Any] = {
    "redact": {"kinds": [], "patterns": []},
    "redactFrom": list(WHERE),
    "blockedTopics": [],
    "mustNotSay": {"words": [], "patterns": [], "fallback": DEFAULT_FALLBACK},
    "maxVisitorMessageChars": None,
}


def settings_of(stored: dict[str, Any] | None) -> dict[str, Any]:
    """The guardrails with every default filled in (a fresh copy)."""
    found = copy.deepcopy(OFF)
    for key, value in (stored or {}).items():
        if key in found:
            found[key] = copy.deepcopy(value)
    return found


def guardrails_of(stored: dict[str, Any] | None) -> rules.Guardrails:
    """The agent's stored guardrails, compiled (cached: `.on` says whether any is set)."""
    return rules.compiled(stored)


def _check_pattern(field: str, pattern: str) -> None:
    try:
        compile_pattern(pattern)
    except PatternError as exc:
        raise ValidationFailed(f"{field}: the pattern “{pattern}” {exc.message}") from None


def _words(field: str, words: list[str]) -> list[str]:
    """Words and phrases trimmed, blank ones refused, each once (case aside)."""
    kept: list[str] = []
    seen: set[str] = set()
    for n, word in enumerate(words):
        cleaned = " ".join(word.split())
        if not any(c.isalnum() for c in cleaned):
            raise ValidationFailed(f"{field}[{n}]: a word needs at least one letter or digit")
        if cleaned.casefold() not in seen:
            seen.add(cleaned.casefold())
            kept.append(cleaned)
    return kept


def _checked_redact(redact: dict[str, Any]) -> dict[str, Any]:
    kinds = [k for k in KINDS if k in redact.get("kinds", [])]
    patterns = []
    for n, item in enumerate(redact.get("patterns", [])):
        name = " ".join(item["name"].split())
        _check_pattern(f"guardrails.redact.patterns[{n}].pattern", item["pattern"])
        patterns.append({"name": name, "pattern": item["pattern"]})
    return {"kinds": kinds, "patterns": patterns}


def _checked_topic(n: int, topic: dict[str, Any]) -> dict[str, Any]:
    field = f"guardrails.blockedTopics[{n}]"
    words = _words(f"{field}.words", topic.get("words", []))
    patterns = list(topic.get("patterns", []))
    for i, pattern in enumerate(patterns):
        _check_pattern(f"{field}.patterns[{i}]", pattern)
    if not words and not patterns:
        raise ValidationFailed(f"{field}: give words or patterns that name the topic")
    reply = (topic.get("reply") or "").strip() or DEFAULT_REPLY
    return {"name": topic["name"].strip(), "words": words, "patterns": patterns, "reply": reply}


def _checked_must_not_say(found: dict[str, Any]) -> dict[str, Any]:
    words = _words("guardrails.mustNotSay.words", found.get("words", []))
    patterns = list(found.get("patterns", []))
    for i, pattern in enumerate(patterns):
        _check_pattern(f"guardrails.mustNotSay.patterns[{i}]", pattern)
    fallback = (found.get("fallback") or "").strip() or DEFAULT_FALLBACK
    return {"words": words, "patterns": patterns, "fallback": fallback}


def checked(given: dict[str, Any]) -> dict[str, Any]:
    """The fields given, cleaned and checked (ValidationFailed naming the field, and the
    pattern RE2 refuses); only the fields given."""
    out: dict[str, Any] = {}
    if "redact" in given:
        out["redact"] = _checked_redact(given["redact"])
    if "redactFrom" in given:
        out["redactFrom"] = [w for w in WHERE if w in given["redactFrom"]]
    if "blockedTopics" in given:
        topics = [_checked_topic(n, t) for n, t in enumerate(given["blockedTopics"])]
        names = [t["name"].casefold() for t in topics]
        if len(set(names)) != len(names):
            raise ValidationFailed("guardrails.blockedTopics: each topic needs its own name")
        out["blockedTopics"] = topics
    if "mustNotSay" in given:
        out["mustNotSay"] = _checked_must_not_say(given["mustNotSay"])
    if "maxVisitorMessageChars" in given:
        out["maxVisitorMessageChars"] = given["maxVisitorMessageChars"]
    return out


def merged(stored: dict[str, Any] | None, given: dict[str, Any]) -> dict[str, Any]:
    """The stored guardrails with the given fields replaced, checked as a whole (together
    they must compile within RE2's budget)."""
    result = {**settings_of(stored), **checked(given)}
    try:
        rules.compiled(result)
    except rules.TooComplex as exc:
        raise ValidationFailed(f"guardrails: {exc}") from None
    return result
