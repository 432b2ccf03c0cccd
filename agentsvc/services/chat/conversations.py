"""Conversations: team-scoped listing, reading, deletion, and message feedback."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, timedelta

from agentsvc.db import Database
from agentsvc.errors import NotFound, Unauthorized, ValidationFailed
from agentsvc.ids import now_iso
from agentsvc.services.events import payloads
from agentsvc.services.events.emitter import NOTHING, Emitter
from agentsvc.services.knowledge.retrieval import query_terms
from agentsvc.store import agents as agents_store
from agentsvc.store import conversation_lists
from agentsvc.store import conversations as conv_store
from agentsvc.store.conversation_lists import ConversationFilter
from agentsvc.store.conversations import Conversation, StoredMessage

MAX_SEARCH_WORDS = 16  # words of `q` that must all be in a message; the rest are ignored


@dataclass(frozen=True, slots=True)
class ListFilters:
    """The filters of the conversation list (and its export), as the API received them."""

    status: str | None = None
    q: str | None = None
    rating: str | None = None
    date_from: date | None = None
    date_to: date | None = None
    user_id: str | None = None
    channel: str | None = None
    flagged: bool = False  # only those a guardrail flagged for review


@dataclass(frozen=True, slots=True)
class PageAt:
    """Where a page of a list starts and how long it is: `after` (a (created_at, id) key)
    continues from a row instead of skipping `offset` rows."""

    limit: int
    offset: int = 0
    after: tuple[str, str] | None = None


@dataclass(frozen=True, slots=True)
class Feedback:
    """A rating of one message of a conversation: `up` or `down`."""

    conversation_id: str
    message_id: str
    rating: str


@dataclass(frozen=True, slots=True)
class Page:
    """A page of conversations, the total the filters keep and whether more follow."""

    conversations: list[Conversation]
    total: int
    more: bool
    total_capped: bool = False  # the total stopped counting (filtered lists, see store)


def search_words(q: str) -> tuple[str, ...]:
    """The words of a search, lower-cased letters and digits, common words left out."""
    return tuple(query_terms(q)[:MAX_SEARCH_WORDS])


def day_start(day: date) -> str:
    """The first instant of a UTC day, as stored timestamps are written."""
    return f"{day.isoformat()}T00:00:00.000Z"


def after_day(day: date) -> str:
    """A bound above every stored timestamp of a UTC day (the next day's start; after
    9999-12-31, a text that sorts after any of its times)."""
    if day == date.max:
        return f"{day.isoformat()}U"  # "U" sorts after the "T" of every time of that day
    return day_start(day + timedelta(days=1))


def conversation_filter(filters: ListFilters) -> ConversationFilter | None:
    """The store's filter for the API's; None when nothing can match (a search with no word
    to look for). `from`/`to` are UTC days, both included."""
    if filters.date_from and filters.date_to and filters.date_from > filters.date_to:
        raise ValidationFailed("from: must not be after to")
    words: tuple[str, ...] = ()
    if filters.q is not None:
        words = search_words(filters.q)
        if not words:
            return None
    return ConversationFilter(
        status=filters.status,
        words=words,
        rating=filters.rating,
        created_from=day_start(filters.date_from) if filters.date_from else None,
        created_before=after_day(filters.date_to) if filters.date_to else None,
        user_ref=filters.user_id,
        channel=filters.channel,
        flagged=filters.flagged,
    )


def caller_may_use(conv: Conversation, team_id: str | None, session_id: str | None) -> bool:
    """Whether a caller may write to a conversation: with a key (or signed-in session) of
    its team, or without one, as the anonymous widget session that started it."""
    if team_id is not None:
        return conv.team_id == team_id
    return conv.session_id is not None and conv.session_id == session_id


def assignee_of(conv: Conversation) -> dict[str, str] | None:
    """The conversation's assignee as `{id, name}`, or None."""
    if conv.assignee_id is None:
        return None
    return {"id": conv.assignee_id, "name": conv.assignee_name or ""}


async def check_agent(db: Database, team_id: str, agent_id: str):
    """The team's agent, or NotFound (another team's agent is not found)."""
    agent = await agents_store.get(db.reader, team_id, agent_id)
    if agent is None:
        raise NotFound("Agent not found")
    return agent


async def list_conversations(
    db: Database, team_id: str, agent_id: str, at: PageAt, filters: ListFilters | None = None
) -> Page:
    """A page of an agent's conversations (newest first) that the filters keep, with the
    total; `after` continues from a (created_at, id) key instead of an offset."""
    await check_agent(db, team_id, agent_id)
    limit, offset, after = at.limit, at.offset, at.after
    flt = conversation_filter(filters or ListFilters())
    if flt is None:
        return Page([], 0, False)
    if flt.words:
        found = await conversation_lists.search_page(db.reader, agent_id, limit, offset, after, flt)
        if found.total is not None:
            return Page(found.conversations, found.total, found.more, found.capped)
        total, capped = await conversation_lists.count_filtered(db.reader, agent_id, flt)
        return Page([], total, False, capped)
    page, more = await conversation_lists.list_for_agent(
        db.reader, agent_id, limit, offset, after, flt
    )
    if not flt.counted:
        total, capped = await conversation_lists.count_filtered(db.reader, agent_id, flt)
        return Page(page, total, more, capped)
    if flt.status is not None:
        return Page(page, await conv_store.count_in_status(db.reader, agent_id, flt.status), more)
    return Page(page, await conv_store.count_for_agent(db.reader, agent_id), more)


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
    emitter: Emitter | None,
    feedback: Feedback,
    *,
    team_id: str | None,
    session_id: str | None,
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
            conv = await conv_store.get(tx, team_id, feedback.conversation_id)
        else:
            conv = await conv_store.get_public(tx, feedback.conversation_id)
            if conv is not None and conv.session_id != session_id:
                conv = None
        if conv is None:
            raise NotFound("Conversation not found")
        rated_at = now_iso()
        message_id, rating = feedback.message_id, feedback.rating
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
