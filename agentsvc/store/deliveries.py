"""The delivery outbox of every kind: claims, leases, the attempt log and restarts.

Each kind of delivery (a form's webhooks, post actions, team chat and e-mail; event
webhooks; channel replies) keeps its rows in its own table, with its own columns,
beside an attempt log of the same shape. The columns the outbox works with are common to
all: `status` (pending | success | failed), `attempts`, `cycle_start`, `next_attempt_at`,
`lease_until`, `completed_at`, `updated_at`. An `OutboxTable` names one kind's two tables
and how its rows read; its methods are the one place the claim, lease and attempt SQL is
written. A row is due when pending, past `next_attempt_at` and not held by a live lease.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import astuple, dataclass
from typing import Any, Generic, TypeVar

from agentsvc.db import Tx

D = TypeVar("D")


@dataclass(frozen=True, slots=True)
class Attempt:
    """One attempt of a delivery, as its log keeps it."""

    delivery_id: str
    attempt: int
    started_at: str
    status_code: int | None
    latency_ms: int
    success: bool
    error: str | None
    response_body: str | None


ATTEMPT_FIELDS = tuple(Attempt.__dataclass_fields__)
_ATT_COLUMNS = ", ".join(ATTEMPT_FIELDS)
_ATT_MARKS = ", ".join("?" for _ in ATTEMPT_FIELDS)

# On PostgreSQL several processes claim at once: a row another claim has locked is skipped,
# not waited for (and so never leased twice). SQLite has one writer: nothing to skip.
_SKIP_LOCKED = {"sqlite": "", "postgresql": " FOR UPDATE SKIP LOCKED"}


def attempt_from_row(row: Any) -> Attempt:
    """An attempt from its row (columns in `ATTEMPT_FIELDS` order)."""
    return Attempt(*row[:5], bool(row[5]), *row[6:8])


@dataclass(frozen=True, slots=True)
class OutboxTable(Generic[D]):
    """One kind's outbox: its deliveries' table, their attempt log, how a row reads."""

    table: str
    attempts_table: str
    columns: str  # the row type's columns, in the order `load` reads them
    load: Callable[[Any], D]
    order: Callable[[D], Any]  # how a claimed batch is sorted

    async def claim_due(self, tx: Tx, now: str, lease_until: str, limit: int) -> list[D]:
        """Lease up to `limit` due deliveries (pending, due, not leased) and return them."""
        rows = await tx.fetchall(
            f"UPDATE {self.table} SET lease_until = ? WHERE id IN ("
            f" SELECT id FROM {self.table} WHERE status = 'pending' AND next_attempt_at <= ?"
            " AND (lease_until IS NULL OR lease_until <= ?) ORDER BY next_attempt_at LIMIT ?"
            f"{_SKIP_LOCKED[tx.dialect]}) RETURNING {self.columns}",
            (lease_until, now, now, limit),
        )
        return sorted((self.load(r) for r in rows), key=self.order)

    async def count_pending(self, tx: Tx) -> int:
        """How many deliveries are waiting to be sent (the outbox depth)."""
        rows = await tx.fetchall(f"SELECT COUNT(*) FROM {self.table} WHERE status = 'pending'")
        return int(rows[0][0])

    async def next_due_at(self, tx: Tx) -> str | None:
        """When the earliest pending delivery becomes claimable (its time or its lease's
        end)."""
        rows = await tx.fetchall(
            "SELECT MIN(CASE WHEN lease_until > next_attempt_at THEN lease_until"
            f" ELSE next_attempt_at END) FROM {self.table} WHERE status = 'pending'"
        )
        return rows[0][0] if rows else None

    async def release_all_leases(self, tx: Tx) -> int:
        """Drop every lease (at start-up, one process: no attempt of a previous one is still
        running)."""
        return await tx.execute(
            f"UPDATE {self.table} SET lease_until = NULL"
            " WHERE status = 'pending' AND lease_until IS NOT NULL"
        )

    async def delivery_exists(self, tx: Tx, delivery_id: str) -> bool:
        """Whether the delivery is still there (its owner may have gone while it ran)."""
        row = await tx.fetchone(f"SELECT 1 FROM {self.table} WHERE id = ?", (delivery_id,))
        return row is not None

    async def record_attempt(self, tx: Tx, attempt: Attempt) -> None:
        """Add an attempt to the log."""
        values = tuple(
            int(v) if n == "success" else v
            for n, v in zip(ATTEMPT_FIELDS, astuple(attempt), strict=True)
        )
        await tx.execute(
            f"INSERT INTO {self.attempts_table} ({_ATT_COLUMNS}) VALUES ({_ATT_MARKS})", values
        )

    async def update_delivery(
        self, tx: Tx, delivery_id: str, fields: dict[str, Any], now: str
    ) -> None:
        """Set some columns of a delivery (and its `updated_at`)."""
        assignments = "".join(f"{col} = ?, " for col in fields)
        await tx.execute(
            f"UPDATE {self.table} SET {assignments}updated_at = ? WHERE id = ?",
            (*fields.values(), now, delivery_id),
        )

    async def attempts_of(self, tx: Tx, delivery_id: str) -> list[Attempt]:
        """Every attempt of a delivery, in order."""
        rows = await tx.fetchall(
            f"SELECT {_ATT_COLUMNS} FROM {self.attempts_table} WHERE delivery_id = ?"
            " ORDER BY attempt",
            (delivery_id,),
        )
        return [attempt_from_row(r) for r in rows]

    async def renew_lease(self, tx: Tx, delivery_id: str, held: str, until: str) -> bool:
        """Extend a lease this claim still holds (`held`, as claimed) to `until`; False when
        it does not: another process took the row over once the lease ran out, or its
        delivery ended or went."""
        changed = await tx.execute(
            f"UPDATE {self.table} SET lease_until = ?"
            " WHERE id = ? AND lease_until = ? AND status = 'pending'",
            (until, delivery_id, held),
        )
        return changed > 0

    async def restart(self, tx: Tx, delivery_id: str, now: str) -> bool:
        """Put a delivery on a fresh schedule, due now, unless an attempt holds it (False)."""
        changed = await tx.execute(
            f"UPDATE {self.table} SET status = 'pending', cycle_start = attempts,"
            " next_attempt_at = ?, completed_at = NULL, updated_at = ?"
            " WHERE id = ? AND (lease_until IS NULL OR lease_until <= ?)",
            (now, now, delivery_id, now),
        )
        return changed > 0
