"""The conversation event log: new messages and status changes, in commit order.

Live streams (a visitor's conversation, a team's inbox) read forward from an event id, so a
client that reconnects with its Last-Event-ID misses nothing. Ids must never be seen out of
order: SQLite has one writer; on PostgreSQL a transaction-scoped advisory lock on the team
makes the ids of one team follow commit order.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from agentsvc.db import Tx
from agentsvc.store.conversations import MESSAGE_COLUMNS, StoredMessage, message_from_row

# One read returns at most this many events; a reader far behind reads again.
PAGE = 500


@dataclass(frozen=True, slots=True)
class ConversationEvent:
    id: int
    conversation_id: str
    agent_id: str
    kind: str  # "message" or "status"
    status: str | None
    assignee_id: str | None
    assignee_name: str | None
    created_at: str
    message: StoredMessage | None  # for "message" events


_EVENT = (
    "e.id, e.conversation_id, e.agent_id, e.kind, e.status, e.assignee_id, e.assignee_name,"
    " e.created_at"
)
_SELECT = (
    f"SELECT {_EVENT}, "
    + ", ".join("m." + c.strip() for c in MESSAGE_COLUMNS.split(","))
    + " FROM conversation_events e LEFT JOIN messages m ON m.id = e.message_id"
)


def _event(row: Any) -> ConversationEvent:
    head, tail = row[:8], row[8:]
    message = message_from_row(tail) if tail[0] is not None else None
    return ConversationEvent(*head, message=message)


async def _lock_team(tx: Tx, team_id: str) -> None:
    if tx.dialect == "postgresql":
        await tx.fetchval("SELECT pg_advisory_xact_lock(hashtext(?))", ("events:" + team_id,))


async def insert_message_event(tx: Tx, team_id: str, agent_id: str, message: StoredMessage) -> None:
    """Log a new message (the inbox follows the visitors' messages)."""
    await _lock_team(tx, team_id)
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
    """Log a status or assignee change (assignee: (user id, name) or None)."""
    await _lock_team(tx, team_id)
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


async def for_conversation(tx: Tx, conversation_id: str, after: int) -> list[ConversationEvent]:
    """The conversation's events after the id `after`, oldest first (at most PAGE)."""
    rows = await tx.fetchall(
        f"{_SELECT} WHERE e.conversation_id = ? AND e.id > ? ORDER BY e.id LIMIT ?",
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
