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
    # Handoff: bot (the agent answers), waiting (a person was asked for), human, closed.
    status: str = "bot"
    assignee_id: str | None = None
    handoff_at: str | None = None
    first_reply_seconds: float | None = None
    contact_email: str | None = None  # left by a visitor outside business hours
    visitor_seen_at: str | None = None  # the visitor's event stream was last open then
    trigger_id: str | None = None  # the widget trigger the chat started from, if any
    rated_up: int = 0  # its answers rated up, and down (kept by database triggers)
    rated_down: int = 0
    # The channel it came through: "web" (the widget, the API) or a channel's type, and
    # that channel's id (None for web, or once the channel is deleted).
    channel: str = "web"
    channel_id: str | None = None
    # The experiment it took part in, and the agent's version it was given (its variant).
    experiment_id: str | None = None
    variant: int | None = None
    # When a guardrail replaced one of its answers (services.guardrails); None: not flagged,
    # or reviewed since.
    flagged_at: str | None = None
    # Its AI answers' tokens and cost (nanos: billionths of the currency), as counted.
    input_tokens: int = 0
    output_tokens: int = 0
    cost_nanos: int = 0
    assignee_name: str | None = None
    assignee_avatar_id: str | None = None  # the assignee's picture now
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
    author_id: str | None = None  # a member's reply: the member, and their name then
    author_name: str | None = None
    # An AI answer: True when it found nothing to answer with, False when it answered; None
    # for other messages and answers stored before this was recorded.
    unanswered: bool | None = None
    agent_version: int | None = None  # an AI answer: the agent's version that made it
    author_avatar_id: str | None = None  # a member's reply: the member's picture now


_CONV = (
    "id, agent_id, team_id, title, session_id, user_ref, user_email, user_name,"
    " user_verified_by, created_at, updated_at"
)
_HANDOFF = "status, assignee_id, handoff_at, first_reply_seconds, contact_email, visitor_seen_at"
_LATER = (
    "trigger_id, rated_up, rated_down, channel, channel_id, experiment_id, variant,"
    " flagged_at, input_tokens, output_tokens, cost_nanos"
)
# A conversation's columns (as `c.`) with its assignee's name as visitors see it now (the
# member's display name, else the team's name; never an e-mail address), in the order of
# the Conversation record.
SELECT_COLUMNS = (
    ", ".join("c." + c.strip() for c in f"{_CONV}, {_HANDOFF}, {_LATER}".split(","))
    + ", CASE WHEN c.assignee_id IS NULL THEN NULL ELSE COALESCE(NULLIF(TRIM(u.name), ''),"
    " (SELECT t.name FROM teams t WHERE t.id = c.team_id)) END,"
    " (SELECT ca.id FROM avatars ca WHERE ca.user_id = c.assignee_id) AS assignee_avatar_id"
)
ASSIGNEE_JOIN = "LEFT JOIN users u ON u.id = c.assignee_id"
_SELECT = f"SELECT {SELECT_COLUMNS} FROM conversations c {ASSIGNEE_JOIN}"
MESSAGE_COLUMNS = (
    "id, conversation_id, role, content, tool_calls, usage, sources, status, model, rating,"
    " created_at, author_id, author_name, unanswered, agent_version"
)
# A message's columns as read: MESSAGE_COLUMNS (as `m.`) and its member author's avatar now.
MESSAGE_SELECT = (
    ", ".join("m." + c.strip() for c in MESSAGE_COLUMNS.split(","))
    + ", (SELECT av.id FROM avatars av WHERE av.user_id = m.author_id)"
)
STATUSES = ("bot", "waiting", "human", "closed")


def message_from_row(row: Any) -> StoredMessage:
    values = list(row)
    for i in (4, 5, 6):
        values[i] = load_json(values[i])
    if values[13] is not None:
        values[13] = bool(values[13])
    return StoredMessage(*values)


async def insert_conversation(tx: Tx, conv: Conversation) -> None:
    """Insert a conversation (inside a batched write: see services/chat/start.py)."""
    await tx.execute(
        f"INSERT INTO conversations ({_CONV}, trigger_id, channel, channel_id, experiment_id,"
        " variant) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
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
            conv.trigger_id,
            conv.channel,
            conv.channel_id,
            conv.experiment_id,
            conv.variant,
        ),
    )


async def get_for_agent(tx: Tx, agent_id: str, conversation_id: str) -> Conversation | None:
    """Return a conversation of the agent, or None."""
    rows = await tx.fetchall(
        f"{_SELECT} WHERE c.id = ? AND c.agent_id = ?", (conversation_id, agent_id)
    )
    return Conversation(*rows[0]) if rows else None


async def latest_of_channel_user(tx: Tx, channel_id: str, user_ref: str) -> Conversation | None:
    """The newest conversation of a channel's end user, or None."""
    rows = await tx.fetchall(
        f"{_SELECT} WHERE c.channel_id = ? AND c.user_ref = ?"
        " ORDER BY c.created_at DESC, c.id DESC LIMIT 1",
        (channel_id, user_ref),
    )
    return Conversation(*rows[0]) if rows else None


async def get(tx: Tx, team_id: str, conversation_id: str) -> Conversation | None:
    """Return the team's conversation, or None when absent or another team's."""
    rows = await tx.fetchall(
        f"{_SELECT} WHERE c.id = ? AND c.team_id = ?", (conversation_id, team_id)
    )
    return Conversation(*rows[0]) if rows else None


async def get_public(tx: Tx, conversation_id: str) -> Conversation | None:
    """Return a conversation by id alone (the caller checks the session id)."""
    rows = await tx.fetchall(f"{_SELECT} WHERE c.id = ?", (conversation_id,))
    return Conversation(*rows[0]) if rows else None


async def count_in_status(tx: Tx, agent_id: str, status: str) -> int:
    """The agent's conversations in one handoff status."""
    return int(
        await tx.fetchval(
            "SELECT COUNT(*) FROM conversations WHERE agent_id = ? AND status = ?"
            + ("" if status == "bot" else " AND status <> 'bot'"),
            (agent_id, status),
        )
    )


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
        f"INSERT INTO messages ({MESSAGE_COLUMNS})"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
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
            msg.author_id,
            msg.author_name,
            None if msg.unanswered is None else int(msg.unanswered),
            msg.agent_version,
        ),
    )


async def list_messages(tx: Tx, conversation_id: str) -> list[StoredMessage]:
    """The conversation's messages in the order they were written."""
    rows = await tx.fetchall(
        f"SELECT {MESSAGE_SELECT} FROM messages m WHERE m.conversation_id = ? ORDER BY m.rowid",
        (conversation_id,),
    )
    return [message_from_row(r) for r in rows]


async def newest_messages(tx: Tx, conversation_id: str, limit: int) -> list[StoredMessage]:
    """The conversation's newest `limit` messages, in the order they were written."""
    rows = await tx.fetchall(
        f"SELECT {MESSAGE_SELECT} FROM messages m WHERE m.conversation_id = ?"
        " ORDER BY m.rowid DESC LIMIT ?",
        (conversation_id, limit),
    )
    return [message_from_row(r) for r in reversed(rows)]


async def latest_messages_of_channel_user(
    tx: Tx, channel_id: str, user_ref: str, limit: int
) -> list[StoredMessage]:
    """The newest `limit` messages of a channel end user's newest conversation, as
    `newest_messages`."""
    rows = await tx.fetchall(
        f"SELECT {MESSAGE_SELECT} FROM messages m WHERE m.conversation_id = ("
        "SELECT id FROM conversations WHERE channel_id = ? AND user_ref = ?"
        " ORDER BY created_at DESC, id DESC LIMIT 1) ORDER BY m.rowid DESC LIMIT ?",
        (channel_id, user_ref, limit),
    )
    return [message_from_row(r) for r in reversed(rows)]


async def rate_message(
    tx: Tx, conversation_id: str, message_id: str, rating: str, now: str
) -> bool:
    """Set (or replace) a message's rating; False when it is not in that conversation."""
    changed = await tx.execute(
        "UPDATE messages SET rating = ?, rated_at = ? WHERE id = ? AND conversation_id = ?",
        (rating, now, message_id, conversation_id),
    )
    return changed > 0


_HANDOFF_FIELDS = frozenset(
    {"status", "assignee_id", "handoff_at", "first_reply_seconds", "contact_email"}
)


async def update_handoff(tx: Tx, conversation_id: str, fields: dict[str, Any], now: str) -> None:
    """Set some handoff columns (status, assignee_id, handoff_at...) and updated_at."""
    assert set(fields) <= _HANDOFF_FIELDS, fields
    assignments = "".join(f"{col} = ?, " for col in fields)
    await tx.execute(
        f"UPDATE conversations SET {assignments}updated_at = ? WHERE id = ?",  # noqa: S608
        (*fields.values(), now, conversation_id),
    )


async def set_visitor_seen(tx: Tx, conversation_id: str, seen_at: str | None) -> None:
    """When the visitor's event stream was last open (None: it closed)."""
    await tx.execute(
        "UPDATE conversations SET visitor_seen_at = ? WHERE id = ?", (seen_at, conversation_id)
    )


async def get_message(tx: Tx, conversation_id: str, message_id: str) -> StoredMessage | None:
    """One message of the conversation, or None."""
    rows = await tx.fetchall(
        f"SELECT {MESSAGE_SELECT} FROM messages m WHERE m.id = ? AND m.conversation_id = ?",
        (message_id, conversation_id),
    )
    return message_from_row(rows[0]) if rows else None


async def handoff_figures(tx: Tx, agent_id: str) -> tuple[int, int, float | None]:
    """The agent's conversations, those handed to a person, and the median time (seconds)
    from the handoff to the first member's reply (None before any reply)."""
    total = await count_for_agent(tx, agent_id)
    handoffs, replied = await tx.fetchone(
        "SELECT COUNT(handoff_at), COUNT(first_reply_seconds) FROM conversations"
        " WHERE agent_id = ? AND handoff_at IS NOT NULL",
        (agent_id,),
    )
    median = None
    if replied:
        # The middle one or two of the sorted times, read by the index-free sort of the
        # handed-off conversations only.
        rows = await tx.fetchall(
            "SELECT first_reply_seconds FROM conversations"
            " WHERE agent_id = ? AND first_reply_seconds IS NOT NULL"
            " ORDER BY first_reply_seconds LIMIT ? OFFSET ?",
            (agent_id, 2 - replied % 2, (replied - 1) // 2),
        )
        median = sum(float(r[0]) for r in rows) / len(rows)
    return total, int(handoffs or 0), median


async def set_visitor_page(
    tx: Tx, conversation_id: str, page_url: str | None, referrer: str | None, language: str | None
) -> None:
    """The page a conversation started on, where the visitor came from, their language."""
    await tx.execute(
        "UPDATE conversations SET page_url = ?, referrer = ?, visitor_language = ? WHERE id = ?",
        (page_url, referrer, language, conversation_id),
    )


async def set_user_attributes(tx: Tx, conversation_id: str, attributes: dict[str, Any]) -> None:
    """The attributes the site gave `identify`, the latest ones."""
    await tx.execute(
        "UPDATE conversations SET user_attributes = ? WHERE id = ?",
        (dump_json(attributes), conversation_id),
    )
