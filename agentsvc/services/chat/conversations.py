"""Conversations: team-scoped listing, reading, deletion, and message feedback."""

from __future__ import annotations

from agentsvc.db import Database
from agentsvc.errors import NotFound, Unauthorized
from agentsvc.ids import now_iso
from agentsvc.services.events import payloads
from agentsvc.services.events.emitter import NOTHING, Emitter
from agentsvc.store import agents as agents_store
from agentsvc.store import conversations as conv_store
from agentsvc.store.conversations import Conversation, StoredMessage


def caller_may_use(conv: Conversation, team_id: str | None, session_id: str | None) -> bool:
    """Whether a caller may write to a conversation: with a key (or signed-in session) of
    its team, or without one, as the anonymous widget session that started it."""
    if team_id is not None:
        return conv.team_id == team_id
    return conv.session_id is not None and conv.session_id == session_id


async def list_conversations(
    db: Database,
    team_id: str,
    agent_id: str,
    limit: int,
    offset: int,
    after: tuple[str, str] | None = None,
    status: str | None = None,
) -> tuple[list[Conversation], int, bool]:
    """A page of an agent's conversations (newest first), the total, and whether more
    follow; `after` continues from a (created_at, id) key instead of an offset; `status`
    keeps one handoff status."""
    if await agents_store.get(db.reader, team_id, agent_id) is None:
        raise NotFound("Agent not found")
    page, more = await conv_store.list_for_agent(db.reader, agent_id, limit, offset, after, status)
    if status is not None:
        return page, await conv_store.count_in_status(db.reader, agent_id, status), more
    return page, await conv_store.count_for_agent(db.reader, agent_id), more


async def get_conversation(
    db: Database, team_id: str, conversation_id: str
) -> tuple[Conversation, list[StoredMessage]]:
    """The team's conversation with its messages in order, or NotFound."""
    conv = await conv_store.get(db.reader, team_id, conversation_id)
    if conv is None:
        raise NotFound("Conversation not found")
    return conv, await conv_store.list_messages(db.reader, conv.id)


async def delete_conversation(db: Database, team_id: str, conversation_id: str) -> None:
    """Delete the team's conversation and its messages, or raise NotFound."""
    async with db.write() as tx:
        if not await conv_store.delete(tx, team_id, conversation_id):
            raise NotFound("Conversation not found")


async def rate_message(
    db: Database,
    *,
    team_id: str | None,
    session_id: str | None,
    conversation_id: str,
    message_id: str,
    rating: str,
    emitter: Emitter | None = None,
) -> None:
    """Rate a message `up` or `down`, replacing an earlier rating.

    A team member (API key or session) may rate any of the team's conversations; without
    one, the widget's anonymous session id must be the one that started the conversation.
    """
    if team_id is None and not session_id:
        raise Unauthorized("An API key or the X-Session-Id header is required")
    emission = NOTHING
    async with db.write() as tx:
        if team_id is not None:
            conv = await conv_store.get(tx, team_id, conversation_id)
        else:
            conv = await conv_store.get_public(tx, conversation_id)
            if conv is not None and conv.session_id != session_id:
                conv = None
        if conv is None:
            raise NotFound("Conversation not found")
        rated_at = now_iso()
        if not await conv_store.rate_message(tx, conv.id, message_id, rating, rated_at):
            raise NotFound("Message not found in this conversation")
        if emitter is not None:
            emission = await emitter.for_team(conv.team_id)
            await emission.emit(
                tx,
                "feedback.created",
                lambda: payloads.feedback_created(conv, message_id, rating, rated_at),
                conversation_id=conv.id,
            )
    emission.sent()
