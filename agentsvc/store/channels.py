"""Channels (an agent on another platform), the platform messages they received, and their
replies' outbox rows (claimed, leased and attempted through `OUTBOX`, their table in the
outbox every kind shares: store/deliveries.py)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from agentsvc.db import Tx
from agentsvc.store.deliveries import OutboxTable
from agentsvc.store.rows import dump_json, load_json


@dataclass(frozen=True, slots=True)
class Channel:
    id: str
    team_id: str
    agent_id: str
    type: str
    name: str
    enabled: bool
    config: dict[str, Any]  # the settings that are not credentials
    sealed_secrets: str  # the credentials as a JSON object, sealed with the secret box
    created_by: str | None
    created_at: str
    updated_at: str


_FIELDS = tuple(Channel.__dataclass_fields__)
_COLUMNS = ", ".join(_FIELDS)


def _channel(row: Any) -> Channel:
    values = dict(zip(_FIELDS, row, strict=True))
    values["enabled"] = bool(values["enabled"])
    values["config"] = load_json(values["config"]) or {}
    return Channel(**values)


async def insert(tx: Tx, channel: Channel) -> None:
    """Insert a channel."""
    values = [getattr(channel, f) for f in _FIELDS]
    values[_FIELDS.index("enabled")] = int(channel.enabled)
    values[_FIELDS.index("config")] = dump_json(channel.config)
    marks = ", ".join("?" for _ in _FIELDS)
    await tx.execute(f"INSERT INTO channels ({_COLUMNS}) VALUES ({marks})", values)


async def get(tx: Tx, team_id: str, channel_id: str) -> Channel | None:
    """The team's channel, or None (also when it belongs to another team)."""
    row = await tx.fetchone(
        f"SELECT {_COLUMNS} FROM channels WHERE id = ? AND team_id = ?", (channel_id, team_id)
    )
    return _channel(row) if row else None


async def get_any(tx: Tx, channel_id: str) -> Channel | None:
    """A channel whatever its team (an inbound message names only the channel)."""
    row = await tx.fetchone(f"SELECT {_COLUMNS} FROM channels WHERE id = ?", (channel_id,))
    return _channel(row) if row else None


async def list_for_agent(tx: Tx, agent_id: str) -> list[Channel]:
    """An agent's channels, oldest first."""
    rows = await tx.fetchall(
        f"SELECT {_COLUMNS} FROM channels WHERE agent_id = ? ORDER BY created_at, id",
        (agent_id,),
    )
    return [_channel(r) for r in rows]


async def enabled_of_type(tx: Tx, kind: str) -> list[Channel]:
    """Every team's enabled channels of a type (the e-mail channels whose mailboxes are
    read), oldest first."""
    rows = await tx.fetchall(
        f"SELECT {_COLUMNS} FROM channels WHERE type = ? AND enabled = 1 ORDER BY created_at, id",
        (kind,),
    )
    return [_channel(r) for r in rows]


async def count_for_agent(tx: Tx, agent_id: str) -> int:
    return int(await tx.fetchval("SELECT COUNT(*) FROM channels WHERE agent_id = ?", (agent_id,)))


async def update(tx: Tx, channel: Channel) -> None:
    """Store a channel's name, state, settings and credentials."""
    await tx.execute(
        "UPDATE channels SET name = ?, enabled = ?, config = ?, sealed_secrets = ?,"
        " updated_at = ? WHERE id = ? AND team_id = ?",
        (
            channel.name,
            int(channel.enabled),
            dump_json(channel.config),
            channel.sealed_secrets,
            channel.updated_at,
            channel.id,
            channel.team_id,
        ),
    )


async def delete(tx: Tx, team_id: str, channel_id: str) -> bool:
    """Delete a channel with its received messages and pending replies (its conversations
    stay, with no channel id)."""
    changed = await tx.execute(
        "DELETE FROM channels WHERE id = ? AND team_id = ?", (channel_id, team_id)
    )
    return changed > 0


@dataclass(frozen=True, slots=True)
class Waiting:
    """A received message whose turn has not started."""

    channel_id: str
    external_id: str
    user_id: str
    text: str
    address: str | None


async def receive(tx: Tx, channel_id: str, waiting: Waiting, now: str) -> bool:
    """Record a platform message as received, waiting for its turn; False when it already
    was (a retry)."""
    changed = await tx.execute(
        "INSERT INTO channel_inbound"
        " (channel_id, external_id, received_at, user_id, text, address)"
        " VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (channel_id, external_id) DO NOTHING",
        (channel_id, waiting.external_id, now, waiting.user_id, waiting.text, waiting.address),
    )
    return changed > 0


async def start_turn(tx: Tx, channel_id: str, external_id: str, now: str) -> bool:
    """Take a received message for its turn (its text is emptied: the conversation keeps
    it); False when another turn took it."""
    changed = await tx.execute(
        "UPDATE channel_inbound SET started_at = ?, user_id = NULL, text = NULL, address = NULL"
        " WHERE channel_id = ? AND external_id = ? AND started_at IS NULL",
        (now, channel_id, external_id),
    )
    return changed > 0


async def waiting(tx: Tx, received_before: str, limit: int) -> list[Waiting]:
    """Received messages whose turn never started, oldest first."""
    rows = await tx.fetchall(
        "SELECT channel_id, external_id, user_id, text, address FROM channel_inbound"
        " WHERE started_at IS NULL AND received_at <= ? ORDER BY received_at LIMIT ?",
        (received_before, limit),
    )
    return [Waiting(*r) for r in rows]


async def waiting_ids(tx: Tx, kind: str) -> list[tuple[str, str]]:
    """(channel id, message id) of the received messages of a type's channels whose turn
    has not started (a disabled channel's wait for it to be enabled)."""
    rows = await tx.fetchall(
        "SELECT i.channel_id, i.external_id FROM channel_inbound i"
        " JOIN channels c ON c.id = i.channel_id WHERE i.started_at IS NULL AND c.type = ?",
        (kind,),
    )
    return [(r[0], r[1]) for r in rows]


@dataclass(frozen=True, slots=True)
class ChannelStatus:
    """When a channel last received a message and last delivered a reply, and its last
    failed send (when, and what went wrong)."""

    last_inbound_at: str | None = None
    last_outbound_at: str | None = None
    last_error_at: str | None = None
    last_error: str | None = None


_LAST_FAILED = (
    "SELECT {column} FROM channel_delivery_attempts a"
    " JOIN channel_deliveries d ON d.id = a.delivery_id"
    " WHERE d.channel_id = c.id AND a.success = 0"
    " ORDER BY a.started_at DESC, a.id DESC LIMIT 1"
)
_FAILED_AT = _LAST_FAILED.format(column="a.started_at")
_FAILED_WHY = _LAST_FAILED.format(column="COALESCE(a.error, 'the send failed')")
_STATUS = (
    "SELECT c.id,"
    " (SELECT MAX(i.received_at) FROM channel_inbound i WHERE i.channel_id = c.id),"
    " (SELECT MAX(d.completed_at) FROM channel_deliveries d"
    "  WHERE d.channel_id = c.id AND d.status = 'success'),"
    f" ({_FAILED_AT}), ({_FAILED_WHY})"
    " FROM channels c WHERE c.id IN ({marks})"
)


async def statuses(tx: Tx, channel_ids: list[str]) -> dict[str, ChannelStatus]:
    """Channel id -> its status, in one query (channels gone meanwhile are absent)."""
    if not channel_ids:
        return {}
    unique = list(dict.fromkeys(channel_ids))
    marks = ", ".join("?" for _ in unique)
    rows = await tx.fetchall(_STATUS.replace("{marks}", marks), unique)
    return {r[0]: ChannelStatus(*r[1:5]) for r in rows}


async def thread_conversation(
    tx: Tx, channel_id: str, thread: str, user_ref: str | None = None
) -> str | None:
    """The id of a channel's conversation of a thread (Slack: `channel:thread_ts`; e-mail:
    its first message's id; kept as the conversation's session id), of that user when
    given, or None."""
    if user_ref is not None:
        return await tx.fetchval(
            "SELECT id FROM conversations WHERE channel_id = ? AND session_id = ?"
            " AND user_ref = ? ORDER BY created_at DESC, id DESC LIMIT 1",
            (channel_id, thread, user_ref),
        )
    return await tx.fetchval(
        "SELECT id FROM conversations WHERE channel_id = ? AND session_id = ?"
        " ORDER BY created_at DESC, id DESC LIMIT 1",
        (channel_id, thread),
    )


async def conversation_owner(tx: Tx, conversation_id: str) -> tuple[str, str] | None:
    """The team and agent of a conversation, or None when it went."""
    row = await tx.fetchone(
        "SELECT team_id, agent_id FROM conversations WHERE id = ?", (conversation_id,)
    )
    return (row[0], row[1]) if row else None


async def user_wrote_at(tx: Tx, conversation_id: str) -> str | None:
    """When the conversation's user last wrote (WhatsApp's window opens then), or None."""
    return await tx.fetchval(
        "SELECT MAX(created_at) FROM messages WHERE conversation_id = ? AND role = 'user'",
        (conversation_id,),
    )


# ── the replies' outbox ──────────────────────────────────────────────────────────────────


@dataclass(frozen=True, slots=True)
class ChannelDelivery:
    id: str
    channel_id: str
    conversation_id: str
    payload: str  # the JSON body sent
    status: str  # pending | success | failed
    attempts: int
    cycle_start: int
    next_attempt_at: str | None
    lease_until: str | None
    last_status_code: int | None
    last_error: str | None
    created_at: str
    updated_at: str
    completed_at: str | None


@dataclass(frozen=True, slots=True)
class ReplyTarget:
    """Where a reply goes: its channel's type, settings and sealed credentials."""

    channel_id: str
    type: str
    config: dict[str, Any]
    sealed_secrets: str


_D_FIELDS = tuple(ChannelDelivery.__dataclass_fields__)
_D_COLUMNS = ", ".join(_D_FIELDS)


def _delivery(row: Any) -> ChannelDelivery:
    return ChannelDelivery(*row[: len(_D_FIELDS)])


OUTBOX: OutboxTable[ChannelDelivery] = OutboxTable(
    table="channel_deliveries",
    attempts_table="channel_delivery_attempts",
    columns=_D_COLUMNS,
    load=_delivery,
    order=lambda d: (d.next_attempt_at or "", d.id),
)


async def insert_delivery(
    tx: Tx, delivery_id: str, channel_id: str, conversation_id: str, payload: str, now: str
) -> None:
    """A pending reply, due now."""
    await tx.execute(
        "INSERT INTO channel_deliveries (id, channel_id, conversation_id, payload, status,"
        " attempts, cycle_start, next_attempt_at, created_at, updated_at)"
        " VALUES (?, ?, ?, ?, 'pending', 0, 0, ?, ?, ?)",
        (delivery_id, channel_id, conversation_id, payload, now, now, now),
    )


async def set_delivery_payload(tx: Tx, delivery_id: str, payload: str) -> None:
    """Store a reply's body again (a Telegram reply in several messages counts those sent)."""
    await tx.execute(
        "UPDATE channel_deliveries SET payload = ? WHERE id = ?", (payload, delivery_id)
    )


async def reply_targets(tx: Tx, channel_ids: list[str]) -> dict[str, ReplyTarget]:
    """Channel id -> where its replies go (channels gone meanwhile are absent)."""
    if not channel_ids:
        return {}
    unique = list(dict.fromkeys(channel_ids))
    marks = ", ".join("?" for _ in unique)
    rows = await tx.fetchall(
        f"SELECT id, type, config, sealed_secrets FROM channels WHERE id IN ({marks})", unique
    )
    return {r[0]: ReplyTarget(r[0], r[1], load_json(r[2]) or {}, r[3]) for r in rows}


async def deliveries_of(tx: Tx, channel_id: str, limit: int = 100) -> list[ChannelDelivery]:
    """A channel's newest replies, newest first."""
    rows = await tx.fetchall(
        f"SELECT {_D_COLUMNS} FROM channel_deliveries WHERE channel_id = ?"
        " ORDER BY created_at DESC, id DESC LIMIT ?",
        (channel_id, limit),
    )
    return [_delivery(r) for r in rows]


async def prune(tx: Tx, before: str, limit: int) -> int:
    """Delete up to `limit` replies finished before `before`, and up to `limit` received
    messages whose turn started before then (a platform's retry never comes that late);
    return how many rows went."""
    replies = await tx.execute(
        "DELETE FROM channel_deliveries WHERE id IN (SELECT id FROM channel_deliveries"
        " WHERE completed_at IS NOT NULL AND completed_at < ? LIMIT ?)",
        (before, limit),
    )
    received = await tx.execute(
        "DELETE FROM channel_inbound WHERE (channel_id, external_id) IN"
        " (SELECT channel_id, external_id FROM channel_inbound"
        " WHERE started_at IS NOT NULL AND started_at < ? LIMIT ?)",
        (before, limit),
    )
    return replies + received
