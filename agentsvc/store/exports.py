"""Messages read for an export: several conversations' at once, or one long one in parts.

Only the columns an export writes are read, as `ExportMessage` tuples (built in C, no JSON
decoded but the sources): a message costs an export about a microsecond here.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from agentsvc.db import Tx
from agentsvc.store.rows import load_json


class ExportMessage(NamedTuple):
    id: str
    conversation_id: str
    role: str
    content: str
    sources: Any  # JSON text (`sources_of` decodes it) or None
    status: str
    rating: str | None
    created_at: str
    author_id: str | None
    author_name: str | None
    unanswered: int | None
    agent_version: int | None


_COLUMNS = (
    "id, conversation_id, role, content, sources, status, rating, created_at, author_id,"
    " author_name, unanswered, agent_version"
)


def sources_of(message: ExportMessage) -> list[Any] | None:
    """The message's sources, decoded."""
    return load_json(message.sources)


async def messages_of(tx: Tx, conversation_ids: list[str]) -> list[ExportMessage]:
    """The messages of these conversations, by conversation, each in the order written."""
    if not conversation_ids:
        return []
    marks = ", ".join("?" for _ in conversation_ids)
    rows = await tx.fetchall(
        f"SELECT {_COLUMNS} FROM messages WHERE conversation_id IN ({marks})"
        " ORDER BY conversation_id, created_at, rowid",
        conversation_ids,
    )
    make = ExportMessage._make
    return [make(r) for r in rows]


async def messages_part(
    tx: Tx, conversation_id: str, after: tuple[str, int] | None, limit: int
) -> tuple[list[ExportMessage], tuple[str, int] | None]:
    """Up to `limit` messages of one conversation in the order written, after the key
    (created_at, rowid) of the last one read; and the key of this part's last message."""
    where, args = "conversation_id = ?", [conversation_id]
    if after is not None:
        where += " AND (created_at, rowid) > (?, ?)"
        args += after
    rows = await tx.fetchall(
        f"SELECT rowid, {_COLUMNS} FROM messages WHERE {where} ORDER BY created_at, rowid LIMIT ?",
        (*args, limit),
    )
    if not rows:
        return [], None
    part = [ExportMessage._make(tuple(r)[1:]) for r in rows]
    return part, (part[-1].created_at, int(rows[-1][0]))
