"""A visitor's message through the agent's guardrails, before anything is stored: too long
(refused, in words), about a blocked topic (the set reply, no model call), and redacted for
the model and for storage as the agent asks.

Short messages are screened on the event loop (the common case costs tens of
microseconds); long ones, and the history the model rereads each turn, in a worker thread:
RE2 is linear in the text, but a tenant's pattern costs up to about 1 ms per 1,000
characters, and it lets other requests run meanwhile (RE2 releases the GIL).
"""

from __future__ import annotations

import functools
from collections import Counter
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, replace

from agentsvc import cpu
from agentsvc.db import Database
from agentsvc.errors import ValidationFailed
from agentsvc.llm.base import Message, ModelRequest, StreamEvent, TextDelta
from agentsvc.services.guardrails import records
from agentsvc.services.guardrails.rules import Guardrails, Hit, Topic
from agentsvc.services.guardrails.settings import guardrails_of
from agentsvc.store.agents import Agent
from agentsvc.store.conversations import Conversation

INLINE_CHARS = 4_000  # longer texts are screened in a worker thread
_PLACES = (("model", "the model"), ("storage", "storage"))


@dataclass(frozen=True, slots=True)
class Screening:
    """A visitor's message as the guardrails leave it."""

    guardrails: Guardrails
    stored: str  # as stored (placeholders when redacting from storage)
    for_model: str  # as the model reads it
    blocked: tuple[Topic, Hit] | None
    trace: records.Trace

    def keep(self, text: str) -> str:
        """Another of the visitor's texts as stored (a new conversation's title)."""
        if "storage" not in self.guardrails.redact_from:
            return text
        return self.guardrails.redact(text).text

    async def history_for_model(self, history: list[Message]) -> list[Message]:
        """The model's messages with the visitor's redacted (the newest one as screened);
        the answers stored are redacted already when storage is."""
        rules = self.guardrails
        if "model" not in rules.redact_from or not rules.redacts:
            return history
        earlier = history[:-1]
        work = functools.partial(_redacted_all, rules, earlier)
        if sum(len(m.content) for m in earlier) > INLINE_CHARS:
            earlier = await cpu.run(work)
        else:
            earlier = work()
        return [*earlier, replace(history[-1], content=self.for_model)]

    def canned(self) -> CannedReply | None:
        """The blocked topic's reply as the turn's 'model', or None when not blocked."""
        return CannedReply(self.blocked[0].reply) if self.blocked else None


def _redacted_all(rules: Guardrails, history: list[Message]) -> list[Message]:
    return [replace(m, content=rules.redact(m.content).text) for m in history]


class CannedReply:
    """Streams a blocked topic's reply in place of the model, which is not called."""

    def __init__(self, text: str):
        self.text = text

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        yield TextDelta(self.text)


def too_long_words(length: int, limit: int) -> str:
    return (
        f"Your message is too long: {length:,} characters, and this chat takes at most"
        f" {limit:,}. Please shorten it and send it again."
    )


def _screen(rules: Guardrails, text: str, topics: bool) -> Screening:
    blocked = rules.blocked(text) if topics else None
    redacted = rules.redact(text)
    where = rules.redact_from
    hits = Counter(redacted.counts)
    notes: list[str] = []
    if redacted.counts:
        places = [name for key, name in _PLACES if key in where]
        hidden = f"hidden from {' and '.join(places)}" if places else "found, kept as written"
        notes.append(
            f"{records.redacted_words(redacted.counts)} in the visitor's message: {hidden}."
        )
    if blocked is not None:
        topic, hit = blocked
        hits["blocked"] += 1
        notes.append(
            f"The visitor's message is about the blocked topic “{topic.rule.name}”"
            f" ({hit.said()}): the agent gave the topic's reply without asking the model."
        )
    return Screening(
        guardrails=rules,
        stored=redacted.text if "storage" in where else text,
        for_model=redacted.text if "model" in where else text,
        blocked=blocked,
        trace=records.Trace(hits, records.one_note(notes)),
    )


def for_answer(agent: Agent) -> Screening | None:
    """The agent's guardrails for an answer taken up again after a person decided its
    tool calls (services.approvals): the visitor's message was screened when it came."""
    rules = guardrails_of(agent.guardrails)
    if not rules.on:
        return None
    return Screening(rules, stored="", for_model="", blocked=None, trace=records.Trace())


async def screen(
    db: Database, agent: Agent, conv: Conversation | None, text: str
) -> Screening | None:
    """The visitor's message through the agent's guardrails (None: it has none).
    ValidationFailed, in words for the visitor, when the message is too long: the refusal
    is counted and noted in the conversation first. A blocked topic is not looked for
    while a person has the conversation (the model would not answer anyway)."""
    rules = guardrails_of(agent.guardrails)
    if not rules.on:
        return None
    if rules.too_long(text):
        assert rules.max_chars is not None
        note = (
            f"A visitor's message of {len(text):,} characters was refused: this agent takes"
            f" at most {rules.max_chars:,}."
        )
        await records.refused(db, agent.id, agent.team_id, conv, note)
        raise ValidationFailed(too_long_words(len(text), rules.max_chars))
    topics = conv is None or conv.status not in ("waiting", "human")
    work: Callable[[], Screening] = functools.partial(_screen, rules, text, topics)
    return await cpu.run(work) if len(text) > INLINE_CHARS else work()
