"""What a chat turn calls of the guardrails (services/chat/start.py and turn.py): the
visitor's message screened before it is stored, the answer guarded as it streams, and
what a hit leaves behind written with its message."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, Protocol

from agentsvc.db import Tx
from agentsvc.services.guardrails.answers import AnswerGuard, Settled
from agentsvc.services.guardrails.records import Trace, write_in
from agentsvc.services.guardrails.screening import Screening, for_answer, screen

__all__ = [
    "AnswerGuard",
    "Screening",
    "Settled",
    "Trace",
    "close",
    "for_answer",
    "screen",
    "then_trace",
]

Write = Callable[[Tx], Awaitable[None]]


class _Conversing(Protocol):
    conversation: Any


def then_trace(first: Write | None, turn: _Conversing, settled: Settled, at: str) -> Write | None:
    """The answer's `after` write: `first` (if any), then what the guardrails found in
    the answer (if anything)."""
    if not settled.trace:
        return first

    async def both(tx: Tx) -> None:
        if first is not None:
            await first(tx)
        await write_in(tx, turn.conversation, settled.trace, at)

    return both


async def close(stream: AsyncIterator[Any]) -> None:
    """Close a model's stream early (its connection is released at once)."""
    aclose = getattr(stream, "aclose", None)
    if aclose is not None:
        await aclose()
