"""The files a message came with (an e-mail's attachments): one row per file, kept on disk
under `<data_dir>/files/mail/<folder>/<file>`; rows go with their message and conversation."""

from __future__ import annotations

from dataclasses import astuple, dataclass

from agentsvc.db import Tx

_COLUMNS = (
    "id, conversation_id, message_id, folder, file, name, content_type, size, position, created_at"
)


@dataclass(frozen=True, slots=True)
class KeptFile:
    """A file on disk a message brings, before its message is recorded."""

    folder: str
    file: str
    name: str
    content_type: str
    size: int


@dataclass(frozen=True, slots=True)
class Attachment:
    id: str
    conversation_id: str
    message_id: str
    folder: str  # the message's folder under files/mail/
    file: str  # its name in that folder
    name: str  # the name shown (safe: no separator, no control character)
    content_type: str
    size: int
    position: int  # its place among its message's files
    created_at: str


async def insert_many(tx: Tx, rows: list[Attachment]) -> None:
    """Record a message's files."""
    marks = ", ".join("?" for _ in range(10))
    await tx.executemany(
        f"INSERT INTO message_attachments ({_COLUMNS}) VALUES ({marks})",
        [astuple(r) for r in rows],
    )


async def of_conversation(tx: Tx, conversation_id: str) -> list[Attachment]:
    """A conversation's files, in the order they came."""
    rows = await tx.fetchall(
        f"SELECT {_COLUMNS} FROM message_attachments WHERE conversation_id = ?"
        " ORDER BY created_at, message_id, position",
        (conversation_id,),
    )
    return [Attachment(*r) for r in rows]


async def get(tx: Tx, team_id: str, conversation_id: str, attachment_id: str) -> Attachment | None:
    """One of the team's conversation's files, or None."""
    columns = ", ".join(f"a.{c.strip()}" for c in _COLUMNS.split(","))
    row = await tx.fetchone(
        f"SELECT {columns} FROM message_attachments a"
        " JOIN conversations c ON c.id = a.conversation_id"
        " WHERE a.id = ? AND a.conversation_id = ? AND c.team_id = ?",
        (attachment_id, conversation_id, team_id),
    )
    return Attachment(*row) if row is not None else None


async def existing_folders(tx: Tx, folders: list[str]) -> set[str]:
    """Which of these folders some message's files are in."""
    if not folders:
        return set()
    marks = ", ".join("?" for _ in folders)
    rows = await tx.fetchall(
        f"SELECT DISTINCT folder FROM message_attachments WHERE folder IN ({marks})", folders
    )
    return {r[0] for r in rows}


async def folders_of_conversations(tx: Tx, conversation_ids: list[str]) -> list[str]:
    """The folders the files of these conversations' messages are in."""
    found: set[str] = set()
    for at in range(0, len(conversation_ids), 500):
        part = conversation_ids[at : at + 500]
        marks = ", ".join("?" for _ in part)
        rows = await tx.fetchall(
            f"SELECT DISTINCT folder FROM message_attachments WHERE conversation_id IN ({marks})",
            part,
        )
        found.update(r[0] for r in rows)
    return sorted(found)
