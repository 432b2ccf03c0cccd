"""The mail outbox: messages kept because no SMTP server took them (bodies sealed)."""

from __future__ import annotations

from dataclasses import dataclass

from agentsvc.db import Tx


@dataclass(frozen=True, slots=True)
class OutboxMessage:
    id: str
    to_address: str
    subject: str
    body: str  # stored sealed (see agentsvc.mail); "" for a body removed at an upgrade
    reason: str
    created_at: str


_COLUMNS = "id, to_address, subject, sealed_body, reason, created_at"


async def insert(tx: Tx, message: OutboxMessage) -> None:
    """Insert a message whose body is already sealed."""
    await tx.execute(
        f"INSERT INTO mail_outbox ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?)",
        (
            message.id,
            message.to_address,
            message.subject,
            message.body,
            message.reason,
            message.created_at,
        ),
    )


async def list_recent(
    tx: Tx, to_address: str | None = None, limit: int = 100
) -> list[OutboxMessage]:
    """Return the newest messages first (bodies sealed), optionally those to one address."""
    if to_address is None:
        rows = await tx.fetchall(
            f"SELECT {_COLUMNS} FROM mail_outbox ORDER BY created_at DESC, rowid DESC LIMIT ?",
            (limit,),
        )
    else:
        rows = await tx.fetchall(
            f"SELECT {_COLUMNS} FROM mail_outbox WHERE to_address = ? COLLATE NOCASE"
            " ORDER BY created_at DESC, rowid DESC LIMIT ?",
            (to_address, limit),
        )
    return [OutboxMessage(*r) for r in rows]
