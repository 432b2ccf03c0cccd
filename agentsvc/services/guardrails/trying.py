"""The "try it" box: what an agent's guardrails would do with a text, as a visitor's
message and as an answer, without a model and without storing anything."""

from __future__ import annotations

import functools
from typing import Any

from agentsvc import cpu
from agentsvc.services.guardrails import settings
from agentsvc.services.guardrails.rules import Guardrails, Hit
from agentsvc.services.guardrails.screening import INLINE_CHARS
from agentsvc.store.agents import Agent


def _hit_json(hit: Hit, **more: str) -> dict[str, Any]:
    return {"rule": hit.rule, "word": hit.word, "pattern": hit.pattern, **more}


def outcome(rules: Guardrails, text: str) -> dict[str, Any]:
    """What the guardrails do with `text` as a visitor's message and as an answer."""
    blocked = rules.blocked(text)
    redacted = rules.redact(text)
    forbidden = rules.forbidden(text)
    where = rules.redact_from
    return {
        "tooLong": rules.too_long(text),
        "maxVisitorMessageChars": rules.max_chars,
        "blocked": blocked and _hit_json(blocked[1], reply=blocked[0].reply),
        "redacted": redacted.text,
        "redactions": dict(sorted(redacted.counts.items())),
        "modelSees": redacted.text if "model" in where else text,
        "stored": redacted.text if "storage" in where else text,
        "mustNotSay": forbidden and _hit_json(forbidden, fallback=rules.fallback),
    }


async def try_on(agent: Agent, text: str, given: dict[str, Any] | None) -> dict[str, Any]:
    """The outcome with the agent's guardrails (its draft's when it has one), the `given`
    fields replacing theirs (checked: ValidationFailed naming a refused pattern)."""
    stored = agent.draft["snapshot"].get("guardrails") if agent.draft else agent.guardrails
    found = settings.merged(stored, given) if given else settings.settings_of(stored)
    rules = settings.guardrails_of(found)
    work = functools.partial(outcome, rules, text)
    return await cpu.run(work) if len(text) > INLINE_CHARS else work()
