"""The delivery outbox worker: every due delivery of every kind attempted, recorded and
retried on a schedule.

The database is the source of truth. Each kind of delivery (a form's targets in
services/forms/outbox.py, event webhooks in services/events/outbox.py, channel replies in
services/channels/outbox.py) keeps its rows in
its own table of the shared outbox (store/deliveries.py) and plugs in as a `DeliveryKind`:
what a claimed row needs loaded, how it is sent, what else its attempt changes. The worker
claims due rows of every kind in one transaction. An attempt first holds a lease on its
row, then sends, then records the attempt and the row's next state in one transaction. The
APScheduler job only wakes `deliver_due` at the earliest time a row becomes due; at
start-up every lease is dropped (no attempt of a previous process can still be running) and
the wake-up is scheduled again.

With several processes on one PostgreSQL database, a claim skips rows another process has
locked, so each attempt is made by one process; leases are never dropped at start-up
(another process may be sending), a killed process's leases run out after `lease_seconds`
and any process takes the rows over, since each also polls every `poll_seconds`. A claimed
row that waited for a free slot past half its lease is renewed before its attempt, or left
to the process that took it over meanwhile.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Generic, Protocol, TypeVar

from agentsvc import telemetry
from agentsvc.config import WebhookSettings
from agentsvc.db import Database, Tx
from agentsvc.ids import iso, parse_iso
from agentsvc.jobs import Jobs
from agentsvc.services.delivery.outcome import Outcome, next_state
from agentsvc.store.deliveries import Attempt, OutboxTable

# The name this worker has always logged under (operators' log filters know it).
log = logging.getLogger("agentsvc.services.forms.delivery")

CLAIM_BATCH = 100
CONCURRENCY = 32
JOB_ID = "form-deliveries"

Item = TypeVar("Item")


class DeliveryKind(Protocol[Item]):
    """One kind of delivery plugged into the outbox. An item is a claimed row with what
    its attempt needs; `row(item)` is the row (its `id`, `attempts`, `cycle_start`)."""

    outbox: OutboxTable[Any]
    noun: str  # how log lines name one of its deliveries
    timeout_seconds: float  # the longest one send may take

    async def load(self, rows: list[Any]) -> list[Item]:
        """The items of claimed rows (rows whose owner went meanwhile may be left out)."""
        ...

    def row(self, item: Item) -> Any: ...

    def label(self, item: Item) -> str:
        """The `kind` label of its attempts on /metrics."""
        ...

    async def send(self, item: Item) -> Outcome:
        """Make one attempt; failures are outcomes, not exceptions."""
        ...

    def columns(self, outcome: Outcome) -> dict[str, Any]:
        """Columns of its own the row takes after an attempt (besides the outbox's)."""
        ...

    async def recorded(
        self, tx: Tx, item: Item, fields: dict[str, Any], outcome: Outcome, now: str
    ) -> Any:
        """In the attempt's transaction, after the row moved on: what else changes; its
        result is the attempt's `recorded`."""
        ...


@dataclass(frozen=True, slots=True)
class Attempted:
    """An attempt made and recorded: its outcome and what its kind's `recorded` returned."""

    outcome: Outcome
    recorded: Any = None


class Deliverer:
    """Runs delivery attempts and has itself woken (through `Jobs`) when rows come due."""

    def __init__(
        self,
        db: Database,
        settings: WebhookSettings,
        *,
        jobs: Jobs | None,
        on_attempt: Callable[[str, str], None] | None = None,
    ):
        self.db = db
        self.settings = settings
        self.kinds: list[DeliveryKind[Any]] = []
        # Told (kind label, outcome) after each recorded attempt: "success", "retry" or
        # "failed".
        self.on_attempt = on_attempt
        self.jobs = jobs
        self._running = False
        self._again = False
        self._closed = False
        self._tasks: set[asyncio.Task] = set()
        self._sem = asyncio.Semaphore(CONCURRENCY)

    def serve(self, kind: DeliveryKind[Item]) -> Queue[Item]:
        """Drain this kind's rows too (claimed in the order kinds are served); the queue
        returned makes attempts of it directly."""
        self.kinds.append(kind)
        return Queue(self, kind)

    @property
    def lease_seconds(self) -> float:
        """How long an attempt may hold its row: its timeout and a generous margin."""
        if self.settings.lease_seconds:
            return self.settings.lease_seconds
        longest = max((k.timeout_seconds for k in self.kinds), default=0.0)
        return max(self.settings.timeout_seconds, longest) + 60

    def lease_until(self, now: datetime, attempts: int = 1) -> str:
        """The end of a lease taken now for `attempts` attempts in a row."""
        return iso(now + timedelta(seconds=self.lease_seconds * attempts))

    # ── waking ────────────────────────────────────────────────────────────────────────
    def wake(self, at: datetime) -> None:
        """Make sure the worker runs no later than `at`."""
        if self._closed or self.jobs is None:
            return
        if self._running and at <= datetime.now(UTC):
            # A run is under way: it claims again before it ends (rows written in floods
            # would each schedule a job that only finds the run going).
            self._again = True
            return
        # Overlapping runs are folded by deliver_due itself.
        self.jobs.wake(JOB_ID, at, self._job)

    async def _job(self) -> None:
        task = asyncio.current_task()
        if task is not None:
            self._tasks.add(task)
        try:
            await self.deliver_due()
        except asyncio.CancelledError:
            if not self._closed:
                raise
            # Cut off by close() at shutdown: the leased rows are retried after the restart
            # (not an error for the scheduler to log).
        except Exception:
            log.exception("delivery run failed; retrying in a minute")
            self.wake(datetime.now(UTC) + timedelta(seconds=60))
        finally:
            if task is not None:
                self._tasks.discard(task)

    async def schedule_next(self) -> None:
        """Wake the worker when the earliest pending row becomes due."""
        times = [await kind.outbox.next_due_at(self.db.reader) for kind in self.kinds]
        due = min((t for t in times if t is not None), default=None)
        if due is not None:
            self.wake(parse_iso(due))

    async def pending_count(self) -> int:
        """Deliveries not yet delivered or given up (the outbox depth on /metrics)."""
        pending = 0
        for kind in self.kinds:
            pending += await kind.outbox.count_pending(self.db.reader)
        return pending

    async def start(self) -> None:
        """At start-up: drop stale leases (one process only) and reschedule every pending
        delivery."""
        if not self.db.shared:
            released = 0
            async with self.db.write() as tx:
                for kind in self.kinds:
                    released += await kind.outbox.release_all_leases(tx)
            if released:
                log.info("%d interrupted deliveries will be retried", released)
        await self.schedule_next()

    async def poll(self) -> None:
        """Deliver what came due anywhere (several processes: see the module docstring)."""
        try:
            await self.deliver_due()
        except Exception:
            log.exception("delivery poll failed")

    async def close(self, grace: float = 5.0) -> None:
        """Stop waking; give running attempts a moment, then cancel them (leases stay)."""
        self._closed = True
        if self.jobs is not None:
            self.jobs.cancel(JOB_ID)
        tasks = set(self._tasks)
        if tasks:
            _, pending = await asyncio.wait(tasks, timeout=grace)
            for task in pending:
                task.cancel()
            if pending:
                await asyncio.wait(pending)

    # ── the worker ────────────────────────────────────────────────────────────────────
    async def deliver_due(self) -> int:
        """Claim and attempt every due delivery; return how many rows were claimed."""
        if self._running:
            self._again = True
            return 0
        self._running = True
        total = 0
        try:
            while not self._closed:
                self._again = False
                lease, claimed = await self._claim()
                if not any(claimed):
                    if self._again:
                        continue
                    break
                kinds = zip(self.kinds, claimed, strict=True)
                loaded = [await kind.load(rows) if rows else [] for kind, rows in kinds]
                await asyncio.gather(
                    *(
                        self._bounded(kind, item, lease)
                        for kind, items in zip(self.kinds, loaded, strict=True)
                        for item in items
                    )
                )
                total += sum(len(rows) for rows in claimed)
        finally:
            self._running = False
        if not self._closed:
            await self.schedule_next()
        return total

    async def _claim(self) -> tuple[str, list[list[Any]]]:
        """Lease a batch of due rows of each kind, in one transaction; the lease and the
        rows."""
        now = datetime.now(UTC)
        lease = self.lease_until(now)
        async with self.db.write() as tx:
            return lease, [
                await kind.outbox.claim_due(tx, iso(now), lease, CLAIM_BATCH) for kind in self.kinds
            ]

    async def _bounded(self, kind: DeliveryKind[Item], item: Item, lease: str) -> None:
        async with self._sem:
            if await self._still_held(kind, kind.row(item).id, lease):
                await self.attempt(kind, item)

    async def _still_held(self, kind: DeliveryKind[Item], delivery_id: str, lease: str) -> bool:
        """Whether a claimed row waited for a free slot so long that its lease may run out
        during the attempt (a batch holds more rows than are sent at once, and slow receivers
        take their timeout): then it is renewed, unless the lease already ran out and another
        process took the row over (it sends it; sending it here too would be a duplicate)."""
        now = datetime.now(UTC)
        if parse_iso(lease) - now >= timedelta(seconds=self.lease_seconds / 2):
            return True  # the attempt began soon after the claim: no write
        renewed = self.lease_until(now)
        return await self.db.write_statement(
            lambda tx: kind.outbox.renew_lease(tx, delivery_id, lease, renewed)
        )

    async def attempt(self, kind: DeliveryKind[Item], item: Item) -> Attempted:
        """Make one attempt of a leased delivery and record it; never raises for a failure."""
        row = kind.row(item)
        started = datetime.now(UTC)
        clock = time.perf_counter()
        try:
            sending = kind.send(item)
            outcome = await telemetry.delivery(sending, kind.label(item), row.id, row.attempts + 1)
        except Exception as exc:  # a bug must not leave the row leased forever
            log.exception("%s %s: unexpected error", kind.noun, row.id)
            outcome = Outcome(False, error=f"internal error: {type(exc).__name__}")
        latency = int((time.perf_counter() - clock) * 1000)
        now_dt = datetime.now(UTC)
        schedule = self.settings.retry_schedule_seconds
        fields, next_at = next_state(row.attempts, row.cycle_start, outcome, schedule, now_dt)
        attempt = Attempt(
            delivery_id=row.id,
            attempt=fields["attempts"],
            started_at=iso(started),
            status_code=outcome.status_code,
            latency_ms=latency,
            success=outcome.success,
            error=outcome.error,
            response_body=outcome.body,
        )
        now = iso(now_dt)
        changes = {**fields, **kind.columns(outcome)}

        async def record(tx: Tx) -> Any:
            """Log the attempt and move the row (and what its kind says) on."""
            if not await kind.outbox.delivery_exists(tx, row.id):
                return None  # its owner (an agent, a webhook...) went while it ran
            await kind.outbox.record_attempt(tx, attempt)
            await kind.outbox.update_delivery(tx, row.id, changes, now)
            return await kind.recorded(tx, item, fields, outcome, now)

        # Batched with other small writes: under load, attempts end in floods.
        recorded = await self.db.write_batched(record)
        if self.on_attempt is not None:
            result = "success" if outcome.success else ("retry" if next_at else "failed")
            self.on_attempt(kind.label(item), result)
        if next_at is not None:
            self.wake(next_at)
        return Attempted(outcome, recorded)


class Queue(Generic[Item]):
    """One kind's door to the worker: attempts made at once (a submit's first attempts)
    and the leases they take."""

    def __init__(self, deliverer: Deliverer, kind: DeliveryKind[Item]):
        self.deliverer = deliverer
        self.kind = kind

    def lease_until(self, now: datetime, attempts: int = 1) -> str:
        """The end of a lease taken now for `attempts` attempts in a row."""
        return self.deliverer.lease_until(now, attempts)

    async def attempt(self, item: Item) -> Attempted:
        """Make one attempt of a leased delivery of this kind and record it."""
        return await self.deliverer.attempt(self.kind, item)
