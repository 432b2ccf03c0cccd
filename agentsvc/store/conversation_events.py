"""The conversation event log: new messages, status changes and members' private notes, in
commit order.

Live streams (a visitor's conversation, a team's inbox) read forward from an event id, so a
client that reconnects with its Last-Event-ID misses nothing. Ids must never be seen out of
order: SQLite has one writer; on PostgreSQL a transaction-scoped advisory lock on the team
makes the ids of one team follow commit order.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from agentsvc.db import Tx
from agentsvc.store import notes as notes_store
from agentsvc.store.conversations import (
    MESSAGE_COLUMNS,
    MESSAGE_SELECT,
    StoredMessage,
    message_from_row,
)
from agentsvc.store.notes import Note

# One read returns at most this many events; a reader far behind reads again.
PAGE = 500


@dataclass(frozen=True, slots=True)
class ConversationEvent:
    id: int
    conversation_id: str
    agent_id: str
    kind: str  # "message", "status" or "note" (members only)
    status: str | None
    assignee_id: str | None
    assignee_name: str | None
    created_at: str
    message: StoredMessage | None  # for "message" events
    note: Note | None = None  # for "note" events
    assignee_avatar_id: str | None = None  # the assignee's picture now


_HEAD = 8
_MESSAGE_WIDTH = len(MESSAGE_COLUMNS.split(",")) + 1  # the message's columns and its avatar


_EVENT = (
    "e.id, e.conversation_id, e.agent_id, e.kind, e.status, e.assignee_id, e.assignee_name,"
    " e.created_at"
)
_SELECT = (
    f"SELECT {_EVENT}, {MESSAGE_SELECT}, {notes_store.SELECT_COLUMNS},"
    " (SELECT ea.id FROM avatars ea WHERE ea.user_id = e.assignee_id)"
    " FROM conversation_events e LEFT JOIN messages m ON m.id = e.message_id"
    " LEFT JOIN conversation_notes n ON n.id = e.note_id"
)


def _event(row: Any) -> ConversationEvent:
    row = tuple(row)
    head = row[:_HEAD]
    m_row = row[_HEAD : _HEAD + _MESSAGE_WIDTH]
    n_row = row[_HEAD + _MESSAGE_WIDTH : -1]
    message = message_from_row(m_row) if m_row[0] is not None else None
    note = notes_store.note_from_row(n_row) if n_row[0] is not None else None
    return ConversationEvent(*head, message=message, note=note, assignee_avatar_id=row[-1])


async def lock_team(tx: Tx, team_id: str) -> None:
    """Take the team's event lock (PostgreSQL; SQLite has one writer), until the end of the
    transaction. A unit that writes a conversation takes it first, before any row: every
    such unit of a team then locks its rows (the conversation, the agent's daily counters)
    behind it, so two processes' batches never wait on each other's rows in opposite orders
    (a deadlock, which PostgreSQL takes a second to find)."""
    if tx.dialect == "postgresql":
        await tx.fetchval("SELECT pg_advisory_xact_lock(hashtext(?))", ("events:" + team_id,))


async def insert_message_event(tx: Tx, team_id: str, agent_id: str, message: StoredMessage) -> None:
    """Log a new message (the inbox follows the visitors' messages); the caller holds
    `lock_team`."""
    await tx.execute(
        "INSERT INTO conversation_events (conversation_id, team_id, agent_id, kind, message_id,"
        " inbox, created_at) VALUES (?, ?, ?, 'message', ?, ?, ?)",
        (
            message.conversation_id,
            team_id,
            agent_id,
            message.id,
            1 if message.role == "user" else 0,
            message.created_at,
        ),
    )


async def insert_status_event(
    tx: Tx,
    team_id: str,
    agent_id: str,
    conversation_id: str,
    status: str,
    assignee: tuple[str, str] | None,
    now: str,
) -> None:
    """Log a status or assignee change (assignee: (user id, name) or None); the caller
    holds `lock_team`."""
    await tx.execute(
        "INSERT INTO conversation_events (conversation_id, team_id, agent_id, kind, status,"
        " assignee_id, assignee_name, inbox, created_at) VALUES (?, ?, ?, 'status', ?, ?, ?, 1, ?)",
        (
            conversation_id,
            team_id,
            agent_id,
            status,
            assignee[0] if assignee else None,
            assignee[1] if assignee else None,
            now,
        ),
    )


async def insert_note_event(tx: Tx, team_id: str, agent_id: str, note: Note) -> None:
    """Log a member's private note (never in the inbox's nor the visitor's events)."""
    await lock_team(tx, team_id)
    await tx.execute(
        "INSERT INTO conversation_events (conversation_id, team_id, agent_id, kind, note_id,"
        " inbox, created_at) VALUES (?, ?, ?, 'note', ?, 0, ?)",
        (note.conversation_id, team_id, agent_id, note.id, note.created_at),
    )


async def for_conversation(
    tx: Tx, conversation_id: str, after: int, *, members: bool = True
) -> list[ConversationEvent]:
    """The conversation's events after the id `after`, oldest first (at most PAGE); without
    `members`, as the visitor may see them: no private note ever."""
    visitors_only = "" if members else " AND e.kind <> 'note'"
    rows = await tx.fetchall(
        f"{_SELECT} WHERE e.conversation_id = ? AND e.id > ?{visitors_only} ORDER BY e.id LIMIT ?",
        (conversation_id, after, PAGE),
    )
    return [_event(r) for r in rows]


async def for_inbox(tx: Tx, team_id: str, after: int) -> list[ConversationEvent]:
    """The team's inbox events (status changes, visitors' messages) after `after`."""
    rows = await tx.fetchall(
        f"{_SELECT} WHERE e.team_id = ? AND e.inbox = 1 AND e.id > ? ORDER BY e.id LIMIT ?",
        (team_id, after, PAGE),
    )
    return [_event(r) for r in rows]


async def last_of_conversation(tx: Tx, conversation_id: str) -> int:
    """The conversation's newest event id (0 when it has none)."""
    found = await tx.fetchval(
        "SELECT MAX(id) FROM conversation_events WHERE conversation_id = ?", (conversation_id,)
    )
    return int(found or 0)


async def last_of_inbox(tx: Tx, team_id: str) -> int:
    """The team's newest inbox event id (0 when it has none)."""
    found = await tx.fetchval(
        "SELECT MAX(id) FROM conversation_events WHERE team_id = ? AND inbox = 1", (team_id,)
    )
    return int(found or 0)
