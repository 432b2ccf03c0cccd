"""Events for webhooks, their delivery outbox rows (one per event and webhook) and the
delivery log.

The rows are claimed, leased, attempted and restarted through `OUTBOX`, their table in the
outbox every kind shares (store/deliveries.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from agentsvc.db import Tx
from agentsvc.store.deliveries import OutboxTable


@dataclass(frozen=True, slots=True)
class EventDelivery:
    id: str
    webhook_id: str
    event_id: str
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
class LoggedDelivery:
    """A delivery as its log shows it: with its event's type (and body, when asked for)."""

    delivery: EventDelivery
    event_type: str
    payload: str | None = None


@dataclass(frozen=True, slots=True)
class Sendable:
    """What an attempt needs: the event's body and the webhook's address and secret."""

    event_id: str
    event_type: str
    payload: str
    webhook_id: str
    url: str
    sealed_secret: str


_FIELDS = tuple(EventDelivery.__dataclass_fields__)
_COLUMNS = ", ".join(_FIELDS)
_D_COLUMNS = ", ".join("d." + f for f in _FIELDS)


def _delivery(row: Any) -> EventDelivery:
    return EventDelivery(*row[: len(_FIELDS)])


OUTBOX: OutboxTable[EventDelivery] = OutboxTable(
    table="webhook_deliveries",
    attempts_table="webhook_delivery_attempts",
    columns=_COLUMNS,
    load=_delivery,
    order=lambda d: (d.next_attempt_at or "", d.id),
)


async def insert_event(
    tx: Tx,
    *,
    event_id: str,
    team_id: str,
    event_type: str,
    payload: str,
    conversation_id: str | None,
    submission_id: str | None,
    now: str,
) -> None:
    await tx.execute(
        "INSERT INTO webhook_events"
        " (id, team_id, type, payload, conversation_id, submission_id, created_at)"
        " VALUES (?, ?, ?, ?, ?, ?, ?)",
        (event_id, team_id, event_type, payload, conversation_id, submission_id, now),
    )


async def insert_deliveries(
    tx: Tx, *, event_id: str, team_id: str, targets: list[tuple[str, str]], now: str
) -> None:
    """One pending delivery per (delivery id, webhook id), due now. A webhook deleted in the
    meantime gets none (the row is selected from `webhooks`, so no foreign key can fail)."""
    await tx.executemany(
        "INSERT INTO webhook_deliveries (id, webhook_id, event_id, status, attempts,"
        " cycle_start, next_attempt_at, created_at, updated_at)"
        " SELECT ?, id, ?, 'pending', 0, 0, ?, ?, ? FROM webhooks WHERE id = ? AND team_id = ?",
        [
            (delivery_id, event_id, now, now, now, webhook_id, team_id)
            for delivery_id, webhook_id in targets
        ],
    )


async def sendables(tx: Tx, delivery_ids: list[str]) -> dict[str, Sendable]:
    """Delivery id -> what its attempt sends (deliveries gone meanwhile are absent)."""
    if not delivery_ids:
        return {}
    marks = ", ".join("?" for _ in delivery_ids)
    rows = await tx.fetchall(
        "SELECT d.id, e.id, e.type, e.payload, w.id, w.url, w.sealed_secret"
        " FROM webhook_deliveries d JOIN webhook_events e ON e.id = d.event_id"
        f" JOIN webhooks w ON w.id = d.webhook_id WHERE d.id IN ({marks})",
        delivery_ids,
    )
    return {r[0]: Sendable(*r[1:]) for r in rows}


async def list_page(
    tx: Tx,
    webhook_id: str,
    *,
    status: str | None,
    limit: int,
    after: tuple[str, str] | None,
) -> tuple[list[LoggedDelivery], bool]:
    """A page of a webhook's deliveries, newest first, and whether more follow."""
    where = ["d.webhook_id = ?"]
    args: list[Any] = [webhook_id]
    if status is not None:
        where.append("d.status = ?")
        args.append(status)
    if after is not None:
        where.append("(d.created_at, d.id) < (?, ?)")
        args += after
    rows = await tx.fetchall(
        f"SELECT {_D_COLUMNS}, e.type FROM webhook_deliveries d"
        f" JOIN webhook_events e ON e.id = d.event_id WHERE {' AND '.join(where)}"
        " ORDER BY d.created_at DESC, d.id DESC LIMIT ?",
        (*args, limit + 1),
    )
    found = [LoggedDelivery(_delivery(r), r[len(_FIELDS)]) for r in rows[:limit]]
    return found, len(rows) > limit


async def get(tx: Tx, webhook_id: str, delivery_id: str) -> LoggedDelivery | None:
    """One delivery of a webhook, with its event's type and body."""
    row = await tx.fetchone(
        f"SELECT {_D_COLUMNS}, e.type, e.payload FROM webhook_deliveries d"
        " JOIN webhook_events e ON e.id = d.event_id WHERE d.id = ? AND d.webhook_id = ?",
        (delivery_id, webhook_id),
    )
    if row is None:
        return None
    return LoggedDelivery(_delivery(row), row[len(_FIELDS)], row[len(_FIELDS) + 1])


async def prune(tx: Tx, before: str, limit: int) -> int:
    """Delete up to `limit` deliveries finished before `before`, and events left with no
    delivery that are older than that; return how many deliveries went."""
    gone = await tx.execute(
        "DELETE FROM webhook_deliveries WHERE id IN (SELECT id FROM webhook_deliveries"
        " WHERE completed_at IS NOT NULL AND completed_at < ? LIMIT ?)",
        (before, limit),
    )
    await tx.execute(
        "DELETE FROM webhook_events WHERE id IN (SELECT e.id FROM webhook_events e"
        " WHERE e.created_at < ? AND NOT EXISTS"
        " (SELECT 1 FROM webhook_deliveries d WHERE d.event_id = e.id) LIMIT ?)",
        (before, limit),
    )
    return gone
