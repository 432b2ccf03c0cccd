"""An agent's guardrails compiled for use: redaction, blocked topics, what the agent must
not say and the longest visitor message, each run with RE2 in time linear in the text.

A topic's words and patterns, and all of mustNotSay, are one RE2 program each, so a message
costs one scan per topic and one for the answer; which word or pattern matched is looked up
only after a hit. Compiled guardrails are cached by their settings, so a turn compiles
nothing once an agent's guardrails were used in the process.
"""

from __future__ import annotations

import bisect
import functools
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import orjson
import re2

from agentsvc.services.guardrails import detectors

# RE2 instructions of all an agent's guardrails together (each tenant pattern is also held
# to tenant_input.patterns' own limit): a topic of a hundred ten-letter words makes 3,600.
MAX_PROGRAM_SIZE = 60_000
CACHE_SIZE = 64  # agents whose guardrails a process keeps compiled
DEFAULT_REPLY = "Sorry, I can't help with that here."
DEFAULT_FALLBACK = (
    "Sorry, I can't answer that here. A person from the team will look at this conversation."
)

_OPTIONS = re2.Options()
_OPTIONS.log_errors = False
_OPTIONS.max_mem = 16 << 20  # a topic of 100 long words compiles to 17,000 steps
# A word or phrase stands alone: no letter or digit right before or after it.
_EDGE_BEFORE = r"(?:^|[^\p{L}\p{N}_])"
_EDGE_AFTER = r"(?:$|[^\p{L}\p{N}_])"
# The wrapper's own call (as tenant_input.patterns reads ProgramSize): a bare "is there a
# match" on ASCII bytes, without the offsets the wrapper computes for a Match.
_UNANCHORED = re2._Anchor.UNANCHORED
_NO_SPAN = (-1, -1)


class TooComplex(ValueError):
    """The guardrails together compile past MAX_PROGRAM_SIZE."""


def _words_pattern(words: list[str]) -> str:
    escaped = (r"\s+".join(re2.escape(part) for part in w.split()) for w in words)
    return f"(?i:{_EDGE_BEFORE}(?:{'|'.join(escaped)}){_EDGE_AFTER})"


def _program(parts: list[str]) -> Any:
    return re2.compile("|".join(f"(?:{p})" for p in parts), _OPTIONS)


@dataclass(frozen=True, slots=True)
class Hit:
    """What matched: the rule (a topic's name, or "mustNotSay"), and the word or the
    pattern that did (never the text it matched in)."""

    rule: str
    word: str | None = None
    pattern: str | None = None

    def said(self) -> str:
        """The hit in words, for a note: `the word “refund”`, `the pattern “…”`."""
        if self.word is not None:
            return f"the word “{self.word}”"
        return f"the pattern “{self.pattern}”"


@dataclass(frozen=True, slots=True)
class WordsAndPatterns:
    """A rule's words and patterns: one program for a scan, and the parts to say which."""

    name: str
    program: Any
    words: tuple[str, ...]
    words_program: Any | None
    patterns: tuple[tuple[str, Any], ...]

    @classmethod
    def of(cls, name: str, words: list[str], patterns: list[str]) -> WordsAndPatterns:
        parts = list(patterns) + ([_words_pattern(words)] if words else [])
        return cls(
            name=name,
            program=_program(parts),
            words=tuple(words),
            words_program=re2.compile(_words_pattern(words), _OPTIONS) if words else None,
            patterns=tuple((p, re2.compile(p, _OPTIONS)) for p in patterns),
        )

    def found(self, text: str, pos: int = 0) -> bool:
        """Whether the text (from `pos`) matches at all: the streamed answer's frequent
        check. An ASCII text goes to RE2 as is, without the wrapper's offset bookkeeping
        (a third of the check's cost)."""
        if text.isascii():
            data = text.encode("ascii")
            return self.program._regexp.Match(_UNANCHORED, data, pos, len(data))[0] != _NO_SPAN
        return self.program.search(text, pos) is not None

    def hit(self, text: str, pos: int = 0) -> Hit | None:
        """Which word or pattern matches the text (from `pos`, what is before it read as
        context only), or None."""
        if self.program.search(text, pos) is None:
            return None
        for pattern, compiled in self.patterns:
            if compiled.search(text, pos) is not None:
                return Hit(self.name, pattern=pattern)
        words = self.words_program
        found = words.search(text, pos) if words is not None else None
        if found is None:  # only the program as a whole matched: name its first part
            return Hit(self.name, pattern=self.patterns[0][0]) if self.patterns else None
        said = " ".join(found.group(0).split()).strip(" ,.;:!?()[]{}\"'").casefold()
        word = next((w for w in self.words if " ".join(w.split()).casefold() == said), said)
        return Hit(self.name, word=word)


@dataclass(frozen=True, slots=True)
class Redacted:
    """A text with what was found replaced by placeholders, and how many of each kind."""

    text: str
    counts: Counter[str] = field(default_factory=Counter)


@dataclass(frozen=True, slots=True)
class Topic:
    rule: WordsAndPatterns
    reply: str


@dataclass(frozen=True, slots=True)
class Guardrails:
    """An agent's guardrails, compiled."""

    kinds: tuple[str, ...]
    patterns: tuple[tuple[str, Any], ...]  # (placeholder, compiled) of custom redaction
    redact_from: frozenset[str]
    topics: tuple[Topic, ...]
    must_not_say: WordsAndPatterns | None
    fallback: str
    max_chars: int | None

    @property
    def redacts(self) -> bool:
        return bool(self.kinds or self.patterns)

    @property
    def on(self) -> bool:
        """Whether any guardrail is set (an agent without them pays nothing a message)."""
        return bool(self.redacts or self.topics or self.must_not_say or self.max_chars)

    def redact(self, text: str) -> Redacted:
        """The text with every e-mail address, phone, card, IBAN or custom pattern asked
        for replaced by its placeholder (`[email]`, `[card]`, `[order number]`...)."""
        if not self.redacts or not text:
            return Redacted(text)
        spans: list[tuple[int, int, str, str]] = []  # start, end, kind, placeholder
        for placeholder, compiled in self.patterns:
            spans += [(*m.span(), "pattern", placeholder) for m in compiled.finditer(text)]
        for kind in self.kinds:
            placeholder = detectors.PLACEHOLDERS[kind]
            spans += [(s, e, kind, placeholder) for s, e in detectors.find(kind, text)]
        if not spans:
            return Redacted(text)
        kept: list[tuple[int, int, str, str]] = []  # disjoint, by start
        for span in spans:  # in priority order: custom patterns, then detectors.PRIORITY
            i = bisect.bisect(kept, span)
            clear_before = i == 0 or kept[i - 1][1] <= span[0]
            if span[1] > span[0] and clear_before and (i == len(kept) or span[1] <= kept[i][0]):
                kept.insert(i, span)
        out, at = [], 0
        for start, end, _, placeholder in kept:
            out += [text[at:start], placeholder]
            at = end
        out.append(text[at:])
        return Redacted("".join(out), Counter(k[2] for k in kept))

    def blocked(self, text: str) -> tuple[Topic, Hit] | None:
        """The first blocked topic the text is about, and what matched, or None."""
        for topic in self.topics:
            found = topic.rule.hit(text)
            if found is not None:
                return topic, found
        return None

    def forbidden(self, text: str, pos: int = 0) -> Hit | None:
        """What the answer must not say that it says (from `pos`), or None."""
        rule = self.must_not_say
        return rule.hit(text, pos) if rule is not None and rule.found(text, pos) else None

    def too_long(self, text: str) -> bool:
        return self.max_chars is not None and len(text) > self.max_chars


_NONE = Guardrails((), (), frozenset(), (), None, DEFAULT_FALLBACK, None)


def _compile(settings: dict[str, Any]) -> Guardrails:
    """Compile stored guardrails (a field left out is off, as settings.OFF has it)."""
    redact = settings.get("redact") or {}
    must = settings.get("mustNotSay") or {}
    topics = tuple(
        Topic(
            WordsAndPatterns.of(t["name"], t.get("words", []), t.get("patterns", [])),
            t.get("reply") or DEFAULT_REPLY,
        )
        for t in settings.get("blockedTopics") or ()
    )
    words, patterns = must.get("words") or [], must.get("patterns") or []
    found = Guardrails(
        kinds=tuple(k for k in detectors.PRIORITY if k in redact.get("kinds", ())),
        patterns=tuple(
            (f"[{p['name']}]", re2.compile(p["pattern"], _OPTIONS))
            for p in redact.get("patterns", ())
        ),
        redact_from=frozenset(settings.get("redactFrom", ("model", "storage"))),
        topics=topics,
        must_not_say=(
            WordsAndPatterns.of("mustNotSay", words, patterns) if words or patterns else None
        ),
        fallback=must.get("fallback") or DEFAULT_FALLBACK,
        max_chars=settings.get("maxVisitorMessageChars"),
    )
    size = sum(t.rule.program._regexp.ProgramSize() for t in topics)
    if found.must_not_say is not None:
        size += found.must_not_say.program._regexp.ProgramSize()
    size += sum(c._regexp.ProgramSize() for _, c in found.patterns)
    if size > MAX_PROGRAM_SIZE:
        raise TooComplex(
            f"together the words and patterns are too many to check quickly (their"
            f" compiled form is {size:,} steps, over {MAX_PROGRAM_SIZE:,}): use fewer"
        )
    return found


@functools.lru_cache(maxsize=CACHE_SIZE)
def _cached(key: bytes) -> Guardrails:
    return _compile(orjson.loads(key))


def compiled(settings: dict[str, Any] | None) -> Guardrails:
    """Guardrails as stored (a field left out is off), compiled and cached by their JSON:
    a turn pays a few microseconds to find them. TooComplex past the budget."""
    if not settings:
        return _NONE
    return _cached(orjson.dumps(settings, option=orjson.OPT_SORT_KEYS))
