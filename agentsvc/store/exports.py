"""Messages read for an export: several conversations' at once, or one long one in parts."""

from __future__ import annotations

from agentsvc.db import Tx
from agentsvc.store.conversations import MESSAGE_COLUMNS, StoredMessage, message_from_row

_COLUMNS = "created_at AS position_at, rowid, " + MESSAGE_COLUMNS


async def messages_of(tx: Tx, conversation_ids: list[str]) -> list[StoredMessage]:
    """The messages of these conversations, by conversation, each in the order written."""
    if not conversation_ids:
        return []
    marks = ", ".join("?" for _ in conversation_ids)
    rows = await tx.fetchall(
        f"SELECT {MESSAGE_COLUMNS} FROM messages WHERE conversation_id IN ({marks})"
        " ORDER BY conversation_id, created_at, rowid",
        conversation_ids,
    )
    return [message_from_row(r) for r in rows]


async def messages_part(
    tx: Tx, conversation_id: str, after: tuple[str, int] | None, limit: int
) -> tuple[list[StoredMessage], tuple[str, int] | None]:
    """Up to `limit` messages of one conversation in the order written, after the key
    (created_at, rowid) of the last one read; and the key of this part's last message."""
    where, args = "conversation_id = ?", [conversation_id]
    if after is not None:
        where += " AND (created_at, rowid) > (?, ?)"
        args += after
    rows = await tx.fetchall(
        f"SELECT {_COLUMNS} FROM messages WHERE {where} ORDER BY created_at, rowid LIMIT ?",
        (*args, limit),
    )
    if not rows:
        return [], None
    last = rows[-1]
    return [message_from_row(tuple(r)[2:]) for r in rows], (last[0], int(last[1]))
