"""Members' private notes on a conversation: stored apart from its messages, so nothing that
reads messages (the visitor's views, the model's context, exports, webhooks) meets them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from agentsvc.db import Tx


@dataclass(frozen=True, slots=True)
class Note:
    id: str
    conversation_id: str
    team_id: str
    author_id: str | None
    author_name: str  # the member's name as shown then
    content: str
    created_at: str
    author_avatar_id: str | None = None  # the author's picture now (None without one)


COLUMNS = "id, conversation_id, team_id, author_id, author_name, content, created_at"
# A note's columns (as `n.`) and its author's avatar now.
SELECT_COLUMNS = (
    ", ".join("n." + c.strip() for c in COLUMNS.split(","))
    + ", (SELECT av.id FROM avatars av WHERE av.user_id = n.author_id)"
)


def note_from_row(row: Any) -> Note:
    return Note(*row)


async def insert(tx: Tx, note: Note) -> None:
    """Insert a note."""
    await tx.execute(
        f"INSERT INTO conversation_notes ({COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?)",
        (
            note.id,
            note.conversation_id,
            note.team_id,
            note.author_id,
            note.author_name,
            note.content,
            note.created_at,
        ),
    )


async def list_for_conversation(tx: Tx, conversation_id: str) -> list[Note]:
    """The conversation's notes, oldest first."""
    rows = await tx.fetchall(
        f"SELECT {SELECT_COLUMNS} FROM conversation_notes n WHERE n.conversation_id = ?"
        " ORDER BY n.created_at, n.id",
        (conversation_id,),
    )
    return [note_from_row(r) for r in rows]


async def get(tx: Tx, note_id: str) -> Note | None:
    rows = await tx.fetchall(
        f"SELECT {SELECT_COLUMNS} FROM conversation_notes n WHERE n.id = ?", (note_id,)
    )
    return note_from_row(rows[0]) if rows else None
