"""Guardrails' fields: on an agent (PATCH /agents/:id `guardrails`, shown on GET) and in
the "try it" route (POST /agents/:id/guardrails/try, in api/agents.py)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BeforeValidator, Field
from pydantic.json_schema import SkipJsonSchema

from agentsvc.api.models import NON_BLANK, RequestModel, ResponseModel, integral
from agentsvc.services.guardrails import settings as limits
from agentsvc.services.guardrails.detectors import KINDS
from agentsvc.text_patterns import PLACEHOLDER_NAME_PATTERN

Kind = Literal[KINDS]  # type: ignore[valid-type]
Where = Literal[limits.WHERE]  # type: ignore[valid-type]
Pattern = Annotated[
    str,
    Field(
        min_length=1,
        max_length=limits.MAX_PATTERN_CHARS,
        description="an RE2 regular expression (no backreferences or lookaround)",
    ),
]
Word = Annotated[str, Field(min_length=1, max_length=limits.MAX_WORD_CHARS)]
Words = Annotated[
    list[Word],
    Field(
        max_length=limits.MAX_WORDS,
        description="words or phrases, matched whole, in any case",
    ),
]
Reply = Annotated[str, Field(min_length=1, max_length=limits.MAX_REPLY_CHARS, pattern=NON_BLANK)]
Name = Annotated[str, Field(min_length=1, max_length=limits.MAX_NAME_CHARS, pattern=NON_BLANK)]
# A placeholder's name: shown in the text as [name].
PlaceholderName = Annotated[
    str,
    Field(min_length=1, max_length=limits.MAX_NAME_CHARS, pattern=PLACEHOLDER_NAME_PATTERN),
]
MaxChars = Annotated[int, Field(ge=1, le=limits.MAX_MESSAGE_CHARS), BeforeValidator(integral)]


class RedactPatternIn(RequestModel):
    name: PlaceholderName = Field(description="shown in place of what matched, as [name]")
    pattern: Pattern


class RedactIn(RequestModel):
    kinds: Annotated[list[Kind], Field(max_length=len(KINDS))] = Field(
        default_factory=list, description="built-in kinds: email, phone, card, iban"
    )
    patterns: Annotated[list[RedactPatternIn], Field(max_length=limits.MAX_REDACT_PATTERNS)] = (
        Field(default_factory=list, description="your own patterns, each replaced by [name]")
    )


class BlockedTopicIn(RequestModel):
    name: Name
    words: Words = Field(default_factory=list)
    patterns: Annotated[list[Pattern], Field(max_length=limits.MAX_TOPIC_PATTERNS)] = Field(
        default_factory=list
    )
    reply: Reply | SkipJsonSchema[None] = Field(
        None, description="what the visitor gets instead of an answer (the model is not asked)"
    )


class MustNotSayIn(RequestModel):
    words: Words = Field(default_factory=list)
    patterns: Annotated[list[Pattern], Field(max_length=limits.MAX_MUST_NOT_SAY_PATTERNS)] = Field(
        default_factory=list
    )
    fallback: Reply | SkipJsonSchema[None] = Field(
        None, description="what the visitor gets instead of an answer that says one"
    )


class GuardrailsIn(RequestModel):
    nullable = frozenset({"maxVisitorMessageChars"})

    redact: RedactIn | SkipJsonSchema[None] = None
    redact_from: Annotated[list[Where], Field(max_length=2)] | SkipJsonSchema[None] = Field(
        None,
        description="model: the model reads placeholders; storage: stored messages, exports"
        " and webhooks carry them (both by default)",
    )
    blocked_topics: (
        Annotated[list[BlockedTopicIn], Field(max_length=limits.MAX_TOPICS)]
        | (SkipJsonSchema[None])
    ) = None
    must_not_say: MustNotSayIn | SkipJsonSchema[None] = None
    max_visitor_message_chars: MaxChars | None = Field(
        None, description="a longer visitor message is refused (400); null: no limit"
    )

    def as_stored(self) -> dict[str, Any]:
        """The fields sent, as the guardrails store them (camelCase)."""
        return self.model_dump(by_alias=True, exclude_unset=True)


class RedactPatternOut(ResponseModel):
    name: str
    pattern: str


class RedactOut(ResponseModel):
    kinds: list[str]
    patterns: list[RedactPatternOut]


class BlockedTopicOut(ResponseModel):
    name: str
    words: list[str]
    patterns: list[str]
    reply: str


class MustNotSayOut(ResponseModel):
    words: list[str]
    patterns: list[str]
    fallback: str


class GuardrailsOut(ResponseModel):
    redact: RedactOut
    redact_from: list[str]
    blocked_topics: list[BlockedTopicOut]
    must_not_say: MustNotSayOut
    max_visitor_message_chars: int | None


GUARDRAILS_DESCRIPTION = (
    "redaction of personal data, blocked topics, what the agent must not say, the longest"
    " visitor message; the fields given replace the stored ones (a version's part)"
)


class TryBody(RequestModel):
    text: Annotated[str, Field(min_length=1, max_length=limits.MAX_MESSAGE_CHARS)] = Field(
        description="checked as a visitor's message and as an answer"
    )
    guardrails: GuardrailsIn | SkipJsonSchema[None] = Field(
        None, description="unsaved changes to try (they replace the agent's fields)"
    )


class HitOut(ResponseModel):
    rule: str = Field(description="the blocked topic's name, or mustNotSay")
    word: str | None
    pattern: str | None


class BlockedOut(HitOut):
    reply: str


class ForbiddenOut(HitOut):
    fallback: str


class TryOut(ResponseModel):
    too_long: bool
    max_visitor_message_chars: int | None
    blocked: BlockedOut | None = Field(description="as a visitor's message: the topic it is on")
    redacted: str = Field(description="the text with placeholders")
    redactions: dict[str, int] = Field(description="how many of each kind were replaced")
    model_sees: str
    stored: str
    must_not_say: ForbiddenOut | None = Field(description="as an answer: what it must not say")
