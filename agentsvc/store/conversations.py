"""Conversations and their messages (with feedback ratings)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from agentsvc.db import Tx
from agentsvc.store.rows import dump_json, load_json


@dataclass(frozen=True, slots=True)
class Conversation:
    id: str
    agent_id: str
    team_id: str
    title: str
    session_id: str | None
    user_ref: str | None
    user_email: str | None
    user_name: str | None
    # How the user was vouched for: "userToken", "userHash", "apiKey", or None (unchecked).
    user_verified_by: str | None
    created_at: str
    updated_at: str
    message_count: int = 0


@dataclass(frozen=True, slots=True)
class StoredMessage:
    id: str
    conversation_id: str
    role: str
    content: str
    tool_calls: list[dict[str, Any]] | None
    usage: dict[str, Any] | None
    sources: list[Any] | None
    status: str
    model: str | None
    rating: str | None
    created_at: str


_CONV = (
    "id, agent_id, team_id, title, session_id, user_ref, user_email, user_name,"
    " user_verified_by, created_at, updated_at"
)
_MSG = (
    "id, conversation_id, role, content, tool_calls, usage, sources, status, model, rating,"
    " created_at"
)


def _message(row: Any) -> StoredMessage:
    values = list(row)
    for i in (4, 5, 6):
        values[i] = load_json(values[i])
    return StoredMessage(*values)


async def insert_conversation(tx: Tx, conv: Conversation) -> None:
    """Insert a conversation (inside a batched write: see services/chat/start.py)."""
    await tx.execute(
        f"INSERT INTO conversations ({_CONV}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            conv.id,
            conv.agent_id,
            conv.team_id,
            conv.title,
            conv.session_id,
            conv.user_ref,
            conv.user_email,
            conv.user_name,
            conv.user_verified_by,
            conv.created_at,
            conv.updated_at,
        ),
    )


async def get_for_agent(tx: Tx, agent_id: str, conversation_id: str) -> Conversation | None:
    """Return a conversation of the agent, or None."""
    rows = await tx.fetchall(
        f"SELECT {_CONV} FROM conversations WHERE id = ? AND agent_id = ?",
        (conversation_id, agent_id),
    )
    return Conversation(*rows[0]) if rows else None


async def get(tx: Tx, team_id: str, conversation_id: str) -> Conversation | None:
    """Return the team's conversation, or None when absent or another team's."""
    rows = await tx.fetchall(
        f"SELECT {_CONV} FROM conversations WHERE id = ? AND team_id = ?",
        (conversation_id, team_id),
    )
    return Conversation(*rows[0]) if rows else None


async def get_public(tx: Tx, conversation_id: str) -> Conversation | None:
    """Return a conversation by id alone (the caller checks the session id)."""
    rows = await tx.fetchall(f"SELECT {_CONV} FROM conversations WHERE id = ?", (conversation_id,))
    return Conversation(*rows[0]) if rows else None


async def list_for_agent(
    tx: Tx, agent_id: str, limit: int, offset: int, after: tuple[str, str] | None = None
) -> tuple[list[Conversation], bool]:
    """A page of the agent's conversations, newest first (`created_at`, then `id`), with
    message counts, and whether more follow. With `after` (the (created_at, id) of the last
    one seen), the page starts after it (keyset: any depth costs the same) and `offset` is
    not used."""
    where, args = "c.agent_id = ?", [agent_id]
    if after is not None:
        where += " AND (c.created_at, c.id) < (?, ?)"
        args += after
        offset = 0
    rows = await tx.fetchall(
        f"""
        SELECT {", ".join("c." + c.strip() for c in _CONV.split(","))},
               (SELECT COUNT(*) FROM messages m WHERE m.conversation_id = c.id)
        FROM conversations c
        WHERE {where}
        ORDER BY c.created_at DESC, c.id DESC
        LIMIT ? OFFSET ?
        """,
        (*args, limit + 1, offset),
    )
    return [Conversation(*r) for r in rows[:limit]], len(rows) > limit


async def count_for_agent(tx: Tx, agent_id: str) -> int:
    """The agent's conversations (a counter kept by triggers, not a count of rows)."""
    total = await tx.fetchval(
        "SELECT conversations FROM conversation_totals WHERE agent_id = ?", (agent_id,)
    )
    return int(total or 0)


async def touch(tx: Tx, conversation_id: str, now: str) -> None:
    """Mark a conversation as updated."""
    await tx.execute("UPDATE conversations SET updated_at = ? WHERE id = ?", (now, conversation_id))


async def delete(tx: Tx, team_id: str, conversation_id: str) -> bool:
    """Delete a conversation and its messages; False when absent or another team's."""
    changed = await tx.execute(
        "DELETE FROM conversations WHERE id = ? AND team_id = ?", (conversation_id, team_id)
    )
    return changed > 0


async def insert_message(tx: Tx, msg: StoredMessage) -> None:
    """Insert a message."""
    await tx.execute(
        f"INSERT INTO messages ({_MSG}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            msg.id,
            msg.conversation_id,
            msg.role,
            msg.content,
            dump_json(msg.tool_calls),
            dump_json(msg.usage),
            dump_json(msg.sources),
            msg.status,
            msg.model,
            msg.rating,
            msg.created_at,
        ),
    )


async def list_messages(tx: Tx, conversation_id: str) -> list[StoredMessage]:
    """The conversation's messages in the order they were written."""
    rows = await tx.fetchall(
        f"SELECT {_MSG} FROM messages WHERE conversation_id = ? ORDER BY rowid",
        (conversation_id,),
    )
    return [_message(r) for r in rows]


async def rate_message(
    tx: Tx, conversation_id: str, message_id: str, rating: str, now: str
) -> bool:
    """Set (or replace) a message's rating; False when it is not in that conversation."""
    changed = await tx.execute(
        "UPDATE messages SET rating = ?, rated_at = ? WHERE id = ? AND conversation_id = ?",
        (rating, now, message_id, conversation_id),
    )
    return changed > 0
