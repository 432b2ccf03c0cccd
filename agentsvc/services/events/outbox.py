"""Event webhook deliveries as a kind of the outbox (services/delivery/outbox.py).

The outbox worker claims due rows of every kind in one transaction, under the same leases,
retry schedule and wake-ups; this module knows what is particular to events: what a claimed
delivery sends (its event's stored body, signed with its webhook's secret, Standard Webhooks
headers with the event id as `webhook-id`) and the status code its row keeps.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from agentsvc.db import Database, Tx
from agentsvc.secretbox import SecretBox, SecretBoxError
from agentsvc.services.delivery.outcome import Outcome
from agentsvc.services.delivery.post import Poster
from agentsvc.services.delivery.signing import signature_headers
from agentsvc.store import webhook_deliveries as store
from agentsvc.store.webhook_deliveries import EventDelivery, Sendable


def secret_context(webhook_id: str) -> str:
    """The secret box context of an event webhook's signing secret."""
    return f"event-webhook:{webhook_id}"


@dataclass(frozen=True, slots=True)
class Claimed:
    """A leased delivery and what it sends (None: its webhook or event went meanwhile)."""

    delivery: EventDelivery
    sendable: Sendable | None


class EventDeliveries:
    """The event deliveries' kind of the outbox: load, send, and the row's status code."""

    outbox = store.OUTBOX
    noun = "event delivery"

    def __init__(self, db: Database, box: SecretBox, poster: Poster):
        self.db = db
        self.box = box
        self.poster = poster
        self.timeout_seconds = poster.timeout_seconds

    async def load(self, rows: list[EventDelivery]) -> list[Claimed]:
        """The claimed rows with what they send (None for those whose webhook went)."""
        found = await store.sendables(self.db.reader, [d.id for d in rows])
        return [Claimed(d, found.get(d.id)) for d in rows]

    def row(self, item: Claimed) -> EventDelivery:
        return item.delivery

    def label(self, item: Claimed) -> str:
        return "event"

    def columns(self, outcome: Outcome) -> dict[str, Any]:
        return {"last_status_code": outcome.status_code}

    async def recorded(
        self, tx: Tx, item: Claimed, fields: dict[str, Any], outcome: Outcome, now: str
    ) -> None:
        return None

    async def send(self, claimed: Claimed) -> Outcome:
        """One attempt: POST the stored body, signed; failures are outcomes."""
        item = claimed.sendable
        if item is None:
            return Outcome(False, error="the webhook or the event no longer exists", stop=True)
        try:
            secret = self.box.open(item.sealed_secret, secret_context(item.webhook_id))
        except SecretBoxError:
            return Outcome(False, error="the signing secret cannot be opened")
        body = item.payload.encode("utf-8")
        headers = {
            "Content-Type": "application/json",
            **signature_headers(secret, item.event_id, body),
        }
        return await self.poster.post(item.url, headers, body)
