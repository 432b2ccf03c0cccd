"""The delivery outbox worker: every target of a submission, and every event a webhook
wants, attempted and retried on a schedule.

The database is the source of truth. Each target of a submission is a `form_deliveries`
row, each (event, webhook) a `webhook_deliveries` row (services/events/outbox.py); the
worker claims due rows of both in one transaction. An attempt first holds a lease on its
row, then sends, then records the attempt and the row's next state in one transaction. The
APScheduler job only wakes `deliver_due` at the earliest time a row becomes due; at
start-up every lease is dropped (no attempt of a previous process can still be running) and
the wake-up is scheduled again.

With several processes on one PostgreSQL database, a claim skips rows another process has
locked, so each attempt is made by one process; leases are never dropped at start-up
(another process may be sending), a killed process's leases run out after `lease_seconds`
and any process takes the rows over, since each also polls every `poll_seconds`.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from agentsvc.db import Tx
from agentsvc.ids import iso, parse_iso
from agentsvc.jobs import Jobs
from agentsvc.services.forms.delivery_send import MAIL_TIMEOUT_SECONDS, Outcome, Sender
from agentsvc.store import submissions as store
from agentsvc.store.submissions import Attempt, Delivery, Submission

if TYPE_CHECKING:
    from agentsvc.services.events.outbox import Claimed, EventQueue

log = logging.getLogger(__name__)

CLAIM_BATCH = 100
CONCURRENCY = 32
JOB_ID = "form-deliveries"


def derive_status(mode: str, webhook: str | None, client_result: dict | None) -> str:
    """A submission's status from its primary delivery state and its client result."""
    client = None if client_result is None else bool(client_result.get("success"))
    if mode == "client":
        return {None: "submitted", True: "client_success", False: "client_failed"}[client]
    if mode == "webhook":
        return {"success": "webhook_success", "failed": "webhook_failed"}.get(webhook, "pending")
    if webhook == "failed" or client is False:
        return "failed"
    if webhook == "success":
        return "success" if client else "webhook_success"
    return "client_success" if client else "pending"


def next_state(
    attempts_before: int,
    cycle_start: int,
    res: Outcome,
    schedule: list[float],
    now_dt: datetime,
) -> tuple[dict[str, Any], datetime | None]:
    """A row's columns after an attempt (success, retry at a time, or failed for good) and
    when it is due again (None when it is done)."""
    now = iso(now_dt)
    attempts = attempts_before + 1
    made = attempts - cycle_start
    fields: dict[str, Any] = {"attempts": attempts, "lease_until": None}
    if res.success:
        fields |= {"status": "success", "last_error": None, "next_attempt_at": None}
        fields["completed_at"] = now
        return fields, None
    fields["last_error"] = res.error
    if res.stop or made >= len(schedule):
        fields |= {"status": "failed", "next_attempt_at": None, "completed_at": now}
        return fields, None
    next_at = now_dt + timedelta(seconds=schedule[made])
    fields["next_attempt_at"] = iso(next_at)
    return fields, next_at


class Deliverer:
    """Runs delivery attempts and has itself woken (through `Jobs`) when rows come due."""

    def __init__(
        self,
        sender: Sender,
        *,
        jobs: Jobs | None,
        on_attempt: Callable[[str, str], None] | None = None,
        events: EventQueue | None = None,
    ):
        self.sender = sender
        self.events = events  # the event webhooks' queue, drained with the forms' one
        self.db = sender.db
        self.settings = sender.settings
        self.data_dir = sender.data_dir
        # Told (kind, outcome) after each recorded attempt: "success", "retry" or "failed".
        self.on_attempt = on_attempt
        self.jobs = jobs
        self._running = False
        self._again = False
        self._closed = False
        self._tasks: set[asyncio.Task] = set()
        self._sem = asyncio.Semaphore(CONCURRENCY)

    @property
    def lease_seconds(self) -> float:
        """How long an attempt may hold its row: its timeout and a generous margin."""
        if self.settings.lease_seconds:
            return self.settings.lease_seconds
        return max(self.settings.timeout_seconds, MAIL_TIMEOUT_SECONDS) + 60

    def lease_until(self, now: datetime, attempts: int = 1) -> str:
        return iso(now + timedelta(seconds=self.lease_seconds * attempts))

    # ── waking ────────────────────────────────────────────────────────────────────────
    def wake(self, at: datetime) -> None:
        """Make sure the worker runs no later than `at`."""
        if self._closed or self.jobs is None:
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
        times = [await store.next_due_at(self.db.reader)]
        if self.events is not None:
            times.append(await self.events.next_due_at())
        due = min((t for t in times if t is not None), default=None)
        if due is not None:
            self.wake(parse_iso(due))

    async def pending_count(self) -> int:
        """Deliveries not yet delivered or given up (the outbox depth on /metrics)."""
        pending = await store.count_pending(self.db.reader)
        if self.events is not None:
            pending += await self.events.pending_count()
        return pending

    async def start(self) -> None:
        """At start-up: drop stale leases (one process only) and reschedule every pending
        delivery."""
        if not self.db.shared:
            async with self.db.write() as tx:
                released = await store.release_all_leases(tx)
                if self.events is not None:
                    released += await self.events.release_all_leases(tx)
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
        """Claim and attempt every due delivery; return how many attempts were made."""
        if self._running:
            self._again = True
            return 0
        self._running = True
        total = 0
        try:
            while not self._closed:
                self._again = False
                now = datetime.now(UTC)
                lease = self.lease_until(now)
                async with self.db.write() as tx:
                    batch = await store.claim_due(tx, iso(now), lease, CLAIM_BATCH)
                    events = []
                    if self.events is not None:
                        events = await self.events.claim(tx, iso(now), lease, CLAIM_BATCH)
                if not batch and not events:
                    if self._again:
                        continue
                    break
                subs = await self._submissions({d.submission_id for d in batch})
                claimed = await self.events.load(events) if self.events and events else []
                await asyncio.gather(
                    *(
                        self._bounded(d, subs[d.submission_id])
                        for d in batch
                        if d.submission_id in subs
                    ),
                    *(self._bounded_event(c) for c in claimed),
                )
                total += len(batch) + len(events)
        finally:
            self._running = False
        if not self._closed:
            await self.schedule_next()
        return total

    async def _submissions(self, ids: set[str]) -> dict[str, Submission]:
        return {s.id: s for s in await store.get_submissions(self.db.reader, list(ids))}

    async def _bounded(self, delivery: Delivery, sub: Submission) -> Outcome:
        async with self._sem:
            return await self.attempt(delivery, sub)

    async def _bounded_event(self, claimed: Claimed) -> Outcome:
        async with self._sem:
            return await self.attempt_event(claimed)

    async def attempt_event(self, claimed: Claimed) -> Outcome:
        """Make one attempt of a leased event delivery and record it; never raises."""
        assert self.events is not None
        started = datetime.now(UTC)
        clock = time.perf_counter()
        try:
            outcome = await self.events.send(self.sender, claimed)
        except Exception as exc:  # a bug must not leave the row leased forever
            log.exception("event delivery %s: unexpected error", claimed.delivery.id)
            outcome = Outcome(False, error=f"internal error: {type(exc).__name__}")
        latency = int((time.perf_counter() - clock) * 1000)
        delivery = claimed.delivery
        fields, next_at = next_state(
            delivery.attempts,
            delivery.cycle_start,
            outcome,
            self.settings.retry_schedule_seconds,
            datetime.now(UTC),
        )
        # Batched with other small writes: under load, attempts end in floods.
        await self.db.write_batched(self.events.record(delivery, started, latency, outcome, fields))
        if self.on_attempt is not None:
            result = "success" if outcome.success else ("retry" if next_at else "failed")
            self.on_attempt(self.events.kind, result)
        if next_at is not None:
            self.wake(next_at)
        return outcome

    async def attempt(self, delivery: Delivery, sub: Submission) -> Outcome:
        """Make one attempt of a leased delivery and record it; never raises for a failure."""
        started = datetime.now(UTC)
        clock = time.perf_counter()
        try:
            outcome = await self.sender.send(delivery, sub)
        except Exception as exc:  # a bug must not leave the row leased forever
            log.exception("delivery %s: unexpected error", delivery.id)
            outcome = Outcome(False, error=f"internal error: {type(exc).__name__}")
        latency = int((time.perf_counter() - clock) * 1000)
        status = await self._record(delivery, sub, started, latency, outcome)
        return replace(outcome, submission_status=status)

    async def _record(
        self, delivery: Delivery, sub: Submission, started: datetime, latency: int, res: Outcome
    ) -> str | None:
        """Log the attempt and move the row (and a webhook's submission) on; one transaction.

        Returns the submission's new status when the attempt was its webhook's.
        """
        now_dt = datetime.now(UTC)
        now = iso(now_dt)
        schedule = self.settings.retry_schedule_seconds
        fields, next_at = next_state(delivery.attempts, delivery.cycle_start, res, schedule, now_dt)
        attempts = fields["attempts"]
        attempt = Attempt(
            delivery_id=delivery.id,
            attempt=attempts,
            started_at=iso(started),
            status_code=res.status_code,
            latency_ms=latency,
            success=res.success,
            error=res.error,
            response_body=res.body,
        )

        async def write(tx: Tx) -> str | None:
            if not await store.delivery_exists(tx, delivery.id):
                return None  # deleted with its agent while the attempt ran
            await store.record_attempt(tx, attempt)
            await store.update_delivery(tx, delivery.id, fields, now)
            if delivery.kind != "webhook":
                return None
            current = await store.read_submission(tx, sub.id)
            if current is None:
                return None
            webhook_state = fields.get("status", "pending")
            status = derive_status(current.execution_mode, webhook_state, current.client_result)
            changes = {"webhook_attempts": attempts, "last_error": res.error, "status": status}
            await store.update_submission(tx, sub.id, changes, now)
            return status

        # Batched with other small writes: under load, attempts end in floods.
        status = await self.db.write_batched(write)
        if self.on_attempt is not None:
            outcome = "success" if res.success else ("retry" if next_at else "failed")
            self.on_attempt(delivery.kind, outcome)
        if next_at is not None:
            self.wake(next_at)
        return status  # type: ignore[return-value]
