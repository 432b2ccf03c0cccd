"""Event webhook deliveries as a queue of the durable outbox (services/forms/delivery.py).

The outbox worker claims due rows of both queues in one transaction, under the same leases,
retry schedule and wake-ups; this module knows what is particular to events: what a claimed
delivery sends (its event's stored body, signed with its webhook's secret, Standard Webhooks
headers with the event id as `webhook-id`) and how an attempt is recorded.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from agentsvc.db import Database, Tx
from agentsvc.ids import iso
from agentsvc.secretbox import SecretBox, SecretBoxError
from agentsvc.services.forms.delivery_send import Outcome, sign
from agentsvc.store import webhook_deliveries as store
from agentsvc.store.submissions import Attempt
from agentsvc.store.webhook_deliveries import EventDelivery, Sendable

if TYPE_CHECKING:
    from agentsvc.services.forms.delivery_send import Sender


def secret_context(webhook_id: str) -> str:
    """The secret box context of an event webhook's signing secret."""
    return f"event-webhook:{webhook_id}"


@dataclass(frozen=True, slots=True)
class Claimed:
    """A leased delivery and what it sends (None: its webhook or event went meanwhile)."""

    delivery: EventDelivery
    sendable: Sendable | None


class EventQueue:
    """The event deliveries' side of the outbox: claim, send, record."""

    kind = "event"

    def __init__(self, db: Database, box: SecretBox):
        self.db = db
        self.box = box

    async def claim(self, tx: Tx, now: str, lease_until: str, limit: int) -> list[EventDelivery]:
        return await store.claim_due(tx, now, lease_until, limit)

    async def load(self, batch: list[EventDelivery]) -> list[Claimed]:
        found = await store.sendables(self.db.reader, [d.id for d in batch])
        return [Claimed(d, found.get(d.id)) for d in batch]

    async def next_due_at(self) -> str | None:
        return await store.next_due_at(self.db.reader)

    async def pending_count(self) -> int:
        return await store.count_pending(self.db.reader)

    async def release_all_leases(self, tx: Tx) -> int:
        return await store.release_all_leases(tx)

    async def send(self, sender: Sender, claimed: Claimed) -> Outcome:
        """One attempt: POST the stored body, signed; failures are outcomes."""
        item = claimed.sendable
        if item is None:
            return Outcome(False, error="the webhook or the event no longer exists", stop=True)
        try:
            secret = self.box.open(item.sealed_secret, secret_context(item.webhook_id))
        except SecretBoxError:
            return Outcome(False, error="the signing secret cannot be opened")
        body = item.payload.encode("utf-8")
        stamp = int(time.time())
        headers = {
            "Content-Type": "application/json",
            "webhook-id": item.event_id,
            "webhook-timestamp": str(stamp),
            "webhook-signature": sign(secret, item.event_id, stamp, body),
        }
        return await sender.post(item.url, headers, body)

    def record(
        self,
        delivery: EventDelivery,
        started: datetime,
        latency_ms: int,
        res: Outcome,
        fields: dict,
    ):
        """The unit of work that logs the attempt and moves the row on."""
        attempt = Attempt(
            delivery_id=delivery.id,
            attempt=fields["attempts"],
            started_at=iso(started),
            status_code=res.status_code,
            latency_ms=latency_ms,
            success=res.success,
            error=res.error,
            response_body=res.body,
        )
        now = iso(datetime.now(UTC))
        changes = {**fields, "last_status_code": res.status_code}

        async def write(tx: Tx) -> None:
            if not await store.delivery_exists(tx, delivery.id):
                return  # its webhook, conversation or submission went while it ran
            await store.record_attempt(tx, attempt)
            await store.update_delivery(tx, delivery.id, changes, now)

        return write
