"""Exporting an agent's conversations: one row per message, the list's filters, in batches.

Conversations are read a page at a time (the list's keyset pages, newest first), and their
messages a group of conversations at a time, each group holding at most `batch_rows`
messages; a conversation longer than that is read on its own, part by part. So an export
holds about one batch in memory whatever its size.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from agentsvc.db import Database
from agentsvc.services.agents.identity import profile_verified
from agentsvc.services.chat.conversations import ListFilters, check_agent, conversation_filter
from agentsvc.services.usage.prices import from_nanos
from agentsvc.store import conversation_lists
from agentsvc.store import exports as store
from agentsvc.store.agents import Agent
from agentsvc.store.conversation_lists import ConversationFilter
from agentsvc.store.conversations import Conversation
from agentsvc.store.exports import ExportMessage, sources_of

COLUMNS = (
    "conversationId",
    "title",
    "userId",
    "userEmail",
    "userName",
    "userVerified",
    "status",
    "triggerId",
    "channel",
    "channelId",
    "conversationCreatedAt",
    "conversationInputTokens",
    "conversationOutputTokens",
    "conversationCost",
    "currency",
    "messageId",
    "role",
    "author",
    "authorName",
    "content",
    "rating",
    "unanswered",
    "agentVersion",
    "sources",
    "messageStatus",
    "messageCreatedAt",
)


# Values the service makes (ids, timestamps, fixed words): written to CSV as they are.
PLAIN = frozenset(
    {
        "conversationId",
        "status",
        "triggerId",
        "channel",
        "channelId",
        "conversationCreatedAt",
        "currency",
        "messageId",
        "role",
        "author",
        "rating",
        "messageStatus",
        "messageCreatedAt",
    }
)


def _author(msg: ExportMessage) -> str:
    if msg.role == "user":
        return "visitor"
    return "ai" if msg.author_id is None else "human"


def conversation_fields(conv: Conversation, currency: str) -> dict[str, Any]:
    """The conversation's part of each of its rows (its usage totals included)."""
    has_user = conv.user_ref is not None or conv.user_email is not None or conv.user_name
    return {
        "conversationId": conv.id,
        "title": conv.title,
        "userId": conv.user_ref,
        "userEmail": conv.user_email,
        "userName": conv.user_name,
        "userVerified": profile_verified(conv.user_verified_by) if has_user else None,
        "status": conv.status,
        "triggerId": conv.trigger_id,
        "channel": conv.channel,
        "channelId": conv.channel_id,
        "conversationCreatedAt": conv.created_at,
        "conversationInputTokens": conv.input_tokens,
        "conversationOutputTokens": conv.output_tokens,
        "conversationCost": from_nanos(conv.cost_nanos),
        "currency": currency,
    }


def message_row(conversation: dict[str, Any], msg: ExportMessage) -> dict[str, Any]:
    """One exported row: the conversation's fields, then the message's."""
    return {
        **conversation,
        "messageId": msg.id,
        "role": msg.role,
        "author": _author(msg),
        "authorName": msg.author_name,
        "content": msg.content,
        "rating": msg.rating,
        "unanswered": None if msg.unanswered is None else bool(msg.unanswered),
        "agentVersion": msg.agent_version,
        "sources": sources_of(msg) if msg.sources is not None else None,
        "messageStatus": msg.status,
        "messageCreatedAt": msg.created_at,
    }


class ConversationExport:
    """The rows of one export, produced batch by batch (`batches`)."""

    columns = COLUMNS
    plain = PLAIN

    def __init__(
        self,
        db: Database,
        agent: Agent,
        flt: ConversationFilter | None,
        batch_rows: int,
        currency: str,
    ):
        self._db = db
        self.agent = agent
        self._filter = flt
        self._batch = batch_rows
        self._currency = currency  # of the conversations' costs

    @property
    def filename(self) -> str:
        """The download's name, without its extension."""
        return f"conversations-{self.agent.slug}"

    async def batches(self, flat: bool = False) -> AsyncIterator[list[dict[str, Any]]]:
        """Rows in batches: conversations newest first, each one's messages in order
        (the same rows for every format: `flat` changes nothing)."""
        if self._filter is None:  # a search with no word to look for matches nothing
            return
        after: tuple[str, str] | None = None
        while True:
            page, more = await conversation_lists.list_for_agent(
                self._db.reader, self.agent.id, self._batch, 0, after, self._filter
            )
            group: list[Conversation] = []
            size = 0
            for conv in page:
                if conv.message_count > self._batch:
                    if group:
                        yield await self._rows(group)
                        group, size = [], 0
                    async for rows in self._long(conv):
                        yield rows
                    continue
                if group and size + conv.message_count > self._batch:
                    yield await self._rows(group)
                    group, size = [], 0
                group.append(conv)
                size += conv.message_count
            if group:
                yield await self._rows(group)
            if not more or not page:
                return
            after = (page[-1].created_at, page[-1].id)

    async def _rows(self, group: list[Conversation]) -> list[dict[str, Any]]:
        by_conversation: dict[str, list[ExportMessage]] = {c.id: [] for c in group}
        for msg in await store.messages_of(self._db.reader, list(by_conversation)):
            by_conversation[msg.conversation_id].append(msg)
        rows = []
        for conv in group:
            fields = conversation_fields(conv, self._currency)
            rows += [message_row(fields, msg) for msg in by_conversation[conv.id]]
        return rows

    async def _long(self, conv: Conversation) -> AsyncIterator[list[dict[str, Any]]]:
        after: tuple[str, int] | None = None
        fields = conversation_fields(conv, self._currency)
        while True:
            part, after = await store.messages_part(self._db.reader, conv.id, after, self._batch)
            if part:
                yield [message_row(fields, msg) for msg in part]
            if len(part) < self._batch:
                return


async def conversation_export(
    db: Database,
    team_id: str,
    agent_id: str,
    filters: ListFilters,
    batch_rows: int,
    currency: str,
) -> ConversationExport:
    """Check the agent and the filters (before anything is sent) and return the export."""
    agent = await check_agent(db, team_id, agent_id)
    return ConversationExport(db, agent, conversation_filter(filters), batch_rows, currency)
