"""Appending to a conversation: a message or a status change, written once for every writer.

A visitor's message (services/chat/start.py), the agent's answer (services/chat/turn.py)
and a member's reply or a handoff change (services/handoff/flow.py) all go through
`ConversationLog`: the row, its conversation event (what the live streams read), the
webhook event, in one batched write (savepoints shared with the other streams' small
writes); after the commit the delivery worker is woken and the change is announced to
every process's live listeners.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from agentsvc.db import Database, Tx
from agentsvc.services import changes
from agentsvc.services.events import payloads
from agentsvc.services.events.emitter import NOTHING, Emission, Emitter
from agentsvc.store import conversation_events as events_store
from agentsvc.store import conversations as conv_store
from agentsvc.store.conversations import Conversation, StoredMessage

# A part of the same transaction: what changes with the message (it may emit events too).
Step = Callable[[Tx, Emission], Awaitable[None]]
# A part of the same transaction that emits nothing.
Write = Callable[[Tx], Awaitable[None]]


# Characters from which a message is written in a transaction of its own (see _commit).
LARGE_MESSAGE = 32_000


@dataclass(frozen=True, slots=True)
class StatusChange:
    """A conversation moving to `status` (with its assignee as (id, name)), at `at`."""

    status: str
    assignee: tuple[str, str] | None
    at: str
    # The conversation's columns that change with it; None when another part of the same
    # transaction writes them (a member's reply: after their message).
    fields: dict[str, Any] | None = None
    # The webhook event; by default the status's own (payloads.STATUS_EVENTS).
    event_type: str | None = None


class ConversationLog:
    """Writes messages and status changes to conversations (one instance for the app)."""

    def __init__(self, db: Database, emitter: Emitter | None = None):
        self.db = db
        self._emitter = emitter

    async def _emission(self, team_id: str) -> Emission:
        # A team without webhooks gets NOTHING from a dictionary lookup: no event is built.
        return await self._emitter.for_team(team_id) if self._emitter is not None else NOTHING

    async def append_message(
        self,
        conv: Conversation,
        message: StoredMessage,
        *,
        before: Step | None = None,
        update: Write | None = None,
        after: Write | None = None,
    ) -> None:
        """Append `message` to `conv`: `before` (what the message comes with: the
        conversation created, reopened, taken; an answer's usage counted), the message and
        its event, `update` (the conversation's own row), the `message.created` webhook
        event, then `after` (what else the turn records), in one batched write; then wake
        the worker and announce."""
        emission = await self._emission(conv.team_id)

        async def write(tx: Tx) -> None:
            await events_store.lock_team(tx, conv.team_id)  # first: see lock_team
            if before is not None:
                await before(tx, emission)
            await conv_store.insert_message(tx, message)
            await events_store.insert_message_event(tx, conv.team_id, conv.agent_id, message)
            if update is not None:
                await update(tx)
            await emission.emit(
                tx,
                "message.created",
                lambda: payloads.message_created(conv.agent_id, message),
                conversation_id=conv.id,
            )
            if after is not None:
                await after(tx)

        await self._commit(conv, write, emission, alone=len(message.content) > LARGE_MESSAGE)

    async def change_status(self, conv: Conversation, change: StatusChange) -> None:
        """Write a status change alone (its columns, its event, its webhook event), then
        wake the worker and announce it."""
        emission = await self._emission(conv.team_id)

        async def write(tx: Tx) -> None:
            await events_store.lock_team(tx, conv.team_id)  # first: see lock_team
            await self.write_status(tx, emission, conv, change)

        await self._commit(conv, write, emission)

    async def write_status(
        self, tx: Tx, emission: Emission, conv: Conversation, change: StatusChange
    ) -> None:
        """Inside a write that took `lock_team` first: the status change's columns (when
        given), its conversation event and its webhook event."""
        status, assignee = change.status, change.assignee
        if change.fields is not None:
            await conv_store.update_handoff(tx, conv.id, change.fields, change.at)
        await events_store.insert_status_event(
            tx, conv.team_id, conv.agent_id, conv.id, status, assignee, change.at
        )
        await emission.emit(
            tx,
            change.event_type or payloads.STATUS_EVENTS[status],
            lambda: payloads.status_changed(conv, status, assignee),
            conversation_id=conv.id,
        )

    async def _commit(
        self, conv: Conversation, write: Write, emission: Emission, *, alone: bool = False
    ) -> None:
        # Batched with the other streams' writes: a turn's is on the path to its first delta.
        # A large message alone, on the writer's thread: indexing its words is work a batch
        # would do on the event loop's thread (a 1.5 MB message stalled it tens of ms).
        if alone:
            async with self.db.write() as tx:
                await write(tx)
        else:
            await self.db.write_batched(write)
        emission.sent()
        await self.db.announce(changes.conversation(conv.team_id, conv.id))
