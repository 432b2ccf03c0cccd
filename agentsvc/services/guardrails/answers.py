"""The agent's answer through its guardrails while it streams, and before it is stored.

With `mustNotSay` set, the stream holds back the answer's last HOLD_CHARS characters: each
piece is shown once the text so far, checked, has grown HOLD_CHARS past it. So a phrase up
to that long is never shown even in part, and nothing forbidden is ever shown whole (the
check runs before anything is released, and once more on the whole text of each model
call before its tail is). At a hit the model's stream is closed, nothing more is shown, no
tool runs, the visitor is sent `answer_replaced` with the fallback, and the fallback is
what is stored, with a note and the conversation flagged for review. Without `mustNotSay`,
the answer streams as it comes.

Before the answer is stored it is redacted when the agent redacts from storage (its text
and its tool calls' inputs and outputs), counted and noted as the visitor's message is.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any

import orjson

from agentsvc import cpu
from agentsvc.services.guardrails import records
from agentsvc.services.guardrails.rules import Guardrails, Hit
from agentsvc.services.guardrails.screening import INLINE_CHARS, Screening

HOLD_CHARS = 100  # held back from the visitor until more text has been checked
# Each check reads the text from this far before what was shown: a match that long across
# what was shown is found while streaming; a longer one at the end of the model call.
SCAN_BACK_CHARS = 1_000
SCAN_EVERY_CHARS = 32  # a check at most every so many new characters (8 tokens or so)
MAX_TOOL_DEPTH = 64  # nesting of tool inputs and outputs redacted (deeper kept as is)


@dataclass(frozen=True, slots=True)
class Settled:
    """The answer as stored, and what the guardrails leave with it."""

    content: str
    tool_calls: list[dict[str, Any]]
    trace: records.Trace


class AnswerGuard:
    """One turn's answer through the agent's guardrails (a no-op without them)."""

    def __init__(self, screening: Screening | None):
        self._rules: Guardrails | None = screening.guardrails if screening else None
        must = self._rules.must_not_say if self._rules else None
        self._holding = must is not None
        self._text = ""  # the current model call's text
        self._shown = 0  # how much of it the visitor was sent
        self._checked = 0  # how much of it was checked
        self.hit: Hit | None = None
        self.replaced = False  # the stored answer is the fallback

    @property
    def fallback(self) -> str:
        return self._rules.fallback if self._rules else ""

    def feed(self, piece: str) -> str:
        """Take a piece of the streamed answer; return what the visitor may be sent now
        ("" while held back, and after a hit)."""
        if not self._holding:
            return piece
        if self.hit is not None:
            return ""
        self._text += piece
        size = len(self._text)
        if size - self._checked < SCAN_EVERY_CHARS:
            return ""
        if self._check(max(0, self._shown - SCAN_BACK_CHARS)):
            return ""
        return self._release(size - HOLD_CHARS)

    def flush(self) -> str:
        """The model call ended: check its whole text; return the rest to send."""
        if not self._holding or self.hit is not None:
            return ""
        if self._check(0):
            return ""
        rest = self._release(len(self._text))
        self._text, self._shown, self._checked = "", 0, 0
        return rest

    def _check(self, start: int) -> bool:
        assert self._rules is not None
        self.hit = self._rules.forbidden(self._text, start)
        self._checked = len(self._text)
        return self.hit is not None

    def _release(self, upto: int) -> str:
        if upto <= self._shown:
            return ""
        out = self._text[self._shown : upto]
        self._shown = upto
        return out

    async def settle(self, content: str, tool_calls: list[dict[str, Any]]) -> Settled:
        """The answer as it is stored: the fallback after a hit (the whole answer checked
        once more), redacted for storage, with its trace; a long one in a worker thread."""
        if self._rules is None:
            return Settled(content, tool_calls, records.Trace())
        size = len(content) + (len(orjson.dumps(tool_calls)) if tool_calls else 0)
        if size > INLINE_CHARS:
            return await cpu.run(self.settled, content, tool_calls)
        return self.settled(content, tool_calls)

    def settled(self, content: str, tool_calls: list[dict[str, Any]]) -> Settled:
        """`settle`'s work, where it runs."""
        rules = self._rules
        if rules is None:
            return Settled(content, tool_calls, records.Trace())
        if self.hit is None and rules.must_not_say is not None and content:
            self.hit = rules.forbidden(content)
        hits: Counter[str] = Counter()
        notes: list[str] = []
        if self.hit is not None:
            self.replaced = True
            content = rules.fallback
            hits["mustNotSay"] += 1
            notes.append(
                f"The agent's answer said {self.hit.said()}, which it must not say: the"
                " visitor got the fallback answer instead, and the conversation is flagged"
                " for review."
            )
        if "storage" in rules.redact_from and rules.redacts:
            redacted = rules.redact(content)
            content = redacted.text
            counts = Counter(redacted.counts)
            tool_calls = [_redacted(rules, call, counts, 0) for call in tool_calls]
            if counts:
                hits.update(counts)
                notes.append(
                    f"{records.redacted_words(counts)} in the agent's answer: hidden from storage."
                )
        trace = records.Trace(hits, records.one_note(notes), self.replaced)
        return Settled(content, tool_calls, trace)


def _redacted(rules: Guardrails, value: Any, counts: Counter[str], depth: int) -> Any:
    """A tool call's JSON with every string redacted (and counted)."""
    if isinstance(value, str):
        found = rules.redact(value)
        counts.update(found.counts)
        return found.text
    if depth >= MAX_TOOL_DEPTH:
        return value
    if isinstance(value, dict):
        return {k: _redacted(rules, v, counts, depth + 1) for k, v in value.items()}
    if isinstance(value, list):
        return [_redacted(rules, v, counts, depth + 1) for v in value]
    return value
