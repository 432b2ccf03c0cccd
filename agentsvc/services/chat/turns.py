"""One chat turn, whatever the door: `/chat`'s stream, an agent's MCP `ask`, and the
channels to come all go through `ChatTurns`, so curated answers, event webhooks, the
analytics and the handoff rules cannot differ from one door to the next.

A door gives the turn its inputs explicitly: a `ChatInput` (the agent, the conversation,
who is writing, the messages) and an `EventSink` (where the stream goes: an SSE response,
a collector for an MCP answer, a channel's sender). Whether the door can carry a person's
reply decides whether the model is offered handing the conversation to the team.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from agentsvc.db import Database
from agentsvc.llm.base import Providers
from agentsvc.services.agents.registry import AgentCache
from agentsvc.services.answers.matching import CuratedAnswers
from agentsvc.services.chat.start import ChatInput, prepare_turn
from agentsvc.services.chat.turn import EventSink, HeldTurn, ToolRunnerLike, Turn, TurnRunner
from agentsvc.services.events.emitter import Emitter
from agentsvc.services.handoff import flow as handoff_flow
from agentsvc.services.handoff.notify import Notifier
from agentsvc.services.knowledge.vectors import Semantic
from agentsvc.store.conversations import Conversation


@dataclass(frozen=True, slots=True)
class TurnDeps:
    """What every turn runs on (built once for the app in runtime.py)."""

    db: Database
    agents: AgentCache
    providers: Providers
    tool_runner: ToolRunnerLike
    emitter: Emitter
    curated: CuratedAnswers
    notifier: Notifier
    semantic: Semantic | None
    keepalive_seconds: float


class ChatTurns:
    """Starts and plays chat turns for every door (one instance for the app)."""

    def __init__(self, deps: TurnDeps):
        self.deps = deps

    async def start(self, chat: ChatInput) -> Turn | HeldTurn:
        """Check and load everything and store the visitor's message (DomainError before
        anything is stored when the turn cannot be taken); a held turn when a person has
        the conversation."""
        deps = self.deps
        return await prepare_turn(
            deps.db, deps.agents, deps.providers, chat, deps.semantic, deps.emitter, deps.curated
        )

    def runner(self, turn: Turn, sink: EventSink, *, people_can_answer: bool) -> TurnRunner:
        """The runner of a started turn; `run()` streams it to the sink and stores it."""
        deps = self.deps
        request_human = self._request_human if people_can_answer and turn.offer_handoff else None
        return TurnRunner(
            deps.db,
            turn,
            sink,
            deps.tool_runner,
            deps.keepalive_seconds,
            request_human,
            deps.emitter,
        )

    async def play(
        self, started: Turn | HeldTurn, sink: EventSink, *, people_can_answer: bool
    ) -> None:
        """Stream a started turn to the sink and store the answer; a held turn sends
        `message_start`, `handoff` and `message_stop` (the message waits for a person)."""
        if isinstance(started, HeldTurn):
            await held_events(started, sink)
            return
        await self.runner(started, sink, people_can_answer=people_can_answer).run()

    async def run(
        self, chat: ChatInput, sink: EventSink, *, people_can_answer: bool
    ) -> Turn | HeldTurn:
        """`start` then `play`: the whole turn, for doors that need nothing in between."""
        started = await self.start(chat)
        await self.play(started, sink, people_can_answer=people_can_answer)
        return started

    async def _request_human(self, conv: Conversation) -> dict[str, Any]:
        deps = self.deps
        state = await handoff_flow.request_human(
            deps.db, deps.agents, deps.notifier, conv, by_visitor=False, emitter=deps.emitter
        )
        data = state.json()
        data.pop("conversationId")
        return {"conversationId": conv.id, **data}


async def held_events(turn: HeldTurn, sink: EventSink) -> None:
    """The events of a turn a person holds: no model reply follows."""
    conv_id = turn.conversation.id
    await sink.event(
        "message_start", {"type": "message_start", "conversationId": conv_id, "messageId": None}
    )
    await sink.event(
        "handoff",
        {
            "type": "handoff",
            "conversationId": conv_id,
            "status": turn.status,
            "assignee": turn.assignee,
        },
    )
    await sink.event("message_stop", {"type": "message_stop", "sources": []})
