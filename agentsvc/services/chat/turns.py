"""One chat turn, whatever the door: `/chat`'s stream, an agent's MCP `ask`, and the
channels to come all go through `ChatTurns`, so curated answers, event webhooks, the
analytics and the handoff rules cannot differ from one door to the next.

A door gives the turn its inputs explicitly: a `ChatInput` (the agent, the conversation,
who is writing, the messages) and an `EventSink` (where the stream goes: an SSE response,
a collector for an MCP answer, a channel's sender). Whether the door can carry a person's
reply decides whether the model is offered handing the conversation to the team.
"""

from __future__ import annotations

from agentsvc.services.chat.start import ChatInput, prepare_turn
from agentsvc.services.chat.turn import (
    EventSink,
    HeldTurn,
    RequestHuman,
    Turn,
    TurnDeps,
    TurnRunner,
)


class ChatTurns:
    """Starts and plays chat turns for every door (one instance for the app)."""

    def __init__(self, deps: TurnDeps, request_human: RequestHuman | None = None):
        self.deps = deps
        # Asks for a person (the handoff service's); None: no turn offers it.
        self._request_human = request_human

    async def start(self, chat: ChatInput) -> Turn | HeldTurn:
        """Check and load everything and store the visitor's message (DomainError before
        anything is stored when the turn cannot be taken); a held turn when a person has
        the conversation."""
        return await prepare_turn(self.deps, chat)

    def runner(self, turn: Turn, sink: EventSink, *, people_can_answer: bool) -> TurnRunner:
        """The runner of a started turn; `run()` streams it to the sink and stores it."""
        offer = people_can_answer and turn.offer_handoff
        return TurnRunner(self.deps, turn, sink, self._request_human if offer else None)

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
