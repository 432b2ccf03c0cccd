"""A turn that pauses for a person: what `TurnRunner` hands over when the model calls a
tool someone must approve first, and what it is given back to go on.

`services.approvals` implements the gate; the chat turn knows only these shapes, so the two
packages do not import each other's modules in a circle.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from agentsvc.llm.base import Message, ToolCall

if TYPE_CHECKING:
    from agentsvc.services.chat.turn import EventSink, Turn
    from agentsvc.store.tools import Tool

# One call's result as the loop feeds it back: (output, is_error, form shown or None).
Result = tuple[Any, bool, dict[str, Any] | None]


class TurnParked(Exception):
    """The turn stops here without an answer: it waits for a person's decision, and whoever
    takes it up then (any process) stores the answer."""

    not_a_failure = True  # a wait, not a fault: traces do not mark its spans failed


@dataclass(frozen=True, slots=True)
class Produced:
    """What a turn produced before it paused (texts, finished tool calls, token usage)."""

    texts: tuple[str, ...] = ()
    tool_calls: tuple[dict[str, Any], ...] = ()
    usage: dict[str, int | None] | None = None
    block: int = 0  # the next content block's index


@dataclass(frozen=True, slots=True)
class PausePoint:
    """Where a turn stands when one of the model's calls needs a person: the model call's
    number, the context with the model's message and its calls, and what it produced."""

    turn: Turn
    step: int
    context: tuple[Message, ...]
    calls: tuple[ToolCall, ...]
    produced: Produced


@dataclass(frozen=True, slots=True)
class Resume:
    """A paused turn taken up again: the point it paused at and every call's result (the
    approved calls run, the others refused), in call order."""

    step: int
    context: tuple[Message, ...]
    calls: tuple[ToolCall, ...]
    results: tuple[Result, ...]
    produced: Produced = field(default_factory=Produced)


class HeldCalls(Protocol):
    """The calls of one model response that wait for a person (see ApprovalGate.hold)."""

    def holds(self, call: ToolCall) -> bool: ...

    async def run(self, call: ToolCall) -> Result:
        """Wait for the call's decision, then run its tool once (or say why not)."""
        ...

    async def settled(self, calls: list[ToolCall], results: list[Result]) -> list[ToolCall]:
        """Keep the others' results and go on with the turn: the calls as they ran (an
        edited input); TurnParked when the turn is left to be taken up later."""
        ...


class ApprovalGate(Protocol):
    """Tool calls a person approves before they run (services.approvals.gate)."""

    def requires(self, tool: Tool) -> bool: ...

    async def hold(self, point: PausePoint, sink: EventSink) -> HeldCalls | None:
        """Pause the turn for the calls whose tools require approval (None: none do)."""
        ...
