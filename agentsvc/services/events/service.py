"""Event webhooks as one object: a team's webhooks (created with a signing secret shown
once, listed, deleted) and their delivery log with redelivery."""

from __future__ import annotations

from dataclasses import dataclass

from agentsvc.db import ConstraintViolation, Database, Tx
from agentsvc.errors import Conflict, NotFound, ValidationFailed
from agentsvc.ids import new_id, now_iso
from agentsvc.secretbox import SecretBox
from agentsvc.services import audit, changes
from agentsvc.services.audit import Actor
from agentsvc.services.events.emitter import Emitter
from agentsvc.services.events.outbox import secret_context
from agentsvc.services.events.payloads import EVENT_TYPES
from agentsvc.services.tools.definitions import new_webhook_secret
from agentsvc.services.tools.rules import check_target_url
from agentsvc.store import webhook_deliveries as deliveries_store
from agentsvc.store import webhooks as store
from agentsvc.store.deliveries import Attempt
from agentsvc.store.webhook_deliveries import LoggedDelivery
from agentsvc.store.webhooks import Webhook


@dataclass(frozen=True, slots=True)
class CreatedWebhook:
    webhook: Webhook
    secret: str  # whsec_..., returned once


@dataclass(frozen=True, slots=True)
class DeliveryPage:
    """Which page of a webhook's delivery log."""

    status: str | None
    limit: int
    after: tuple[str, str] | None  # the (created_at, id) of the last delivery seen


def _events(events: list[str]) -> list[str]:
    unknown = [e for e in events if e not in EVENT_TYPES]
    if unknown:
        raise ValidationFailed(f"events: unknown event type {unknown[0]!r}")
    if not events:
        raise ValidationFailed("events: name at least one event type")
    return list(dict.fromkeys(events))


@dataclass(frozen=True, slots=True)
class WebhooksConfig:
    """The settings event webhooks are created under."""

    max_per_team: int  # [webhooks] max_per_team
    allow_private: bool  # [outbound] allow_private: private addresses may receive events


class WebhooksService:
    """A team's event webhooks and their deliveries; handlers call its methods."""

    def __init__(self, db: Database, box: SecretBox, emitter: Emitter, config: WebhooksConfig):
        self._db = db
        self._box = box
        self._emitter = emitter
        self._config = config

    async def create_webhook(
        self, actor: Actor, *, url: str, events: list[str], description: str
    ) -> CreatedWebhook:
        """Register a URL for some event types; its signing secret is in this answer only."""
        check_target_url("url", url, allow_private=self._config.allow_private)
        chosen = _events(events)
        now = now_iso()
        webhook_id = new_id("webhook")
        secret = new_webhook_secret()
        webhook = Webhook(
            id=webhook_id,
            team_id=actor.team_id,
            url=url,
            events=chosen,
            description=description,
            sealed_secret=self._box.seal(secret, secret_context(webhook_id)),
            created_by=actor.user_id,
            created_at=now,
            updated_at=now,
        )
        async with self._db.write() as tx:
            await self._insert(tx, actor, webhook)
        await self._db.announce(changes.webhooks(actor.team_id))
        return CreatedWebhook(webhook, secret)

    async def _insert(self, tx: Tx, actor: Actor, webhook: Webhook) -> None:
        """Store a new webhook within the team's limit, with its audit entry."""
        duplicate = Conflict("url: the team already has a webhook for this URL")
        max_per_team = self._config.max_per_team
        if await store.url_taken(tx, actor.team_id, webhook.url):
            raise duplicate
        if await store.count_for_team(tx, actor.team_id) >= max_per_team:
            raise Conflict(
                f"The team has {max_per_team} webhooks, the most allowed"
                " ([webhooks] max_per_team): delete one first"
            )
        try:
            await store.insert(tx, webhook)
        except ConstraintViolation as exc:
            raise duplicate from exc
        await audit.record_in(
            tx,
            actor,
            "webhook.created",
            target_type="webhook",
            target_id=webhook.id,
            label=webhook.url,
            details={"events": webhook.events},
        )

    async def list_webhooks(self, team_id: str) -> list[Webhook]:
        """The team's webhooks, newest first (never their secrets)."""
        return await store.list_for_team(self._db.reader, team_id)

    async def get_webhook(self, team_id: str, webhook_id: str) -> Webhook:
        """The team's webhook, or NotFound."""
        webhook = await store.get(self._db.reader, team_id, webhook_id)
        if webhook is None:
            raise NotFound("Webhook not found")
        return webhook

    async def delete_webhook(self, actor: Actor, webhook_id: str) -> None:
        """Delete a webhook; its pending deliveries are dropped with its log."""
        async with self._db.write() as tx:
            webhook = await store.get(tx, actor.team_id, webhook_id)
            if webhook is None or not await store.delete(tx, actor.team_id, webhook_id):
                raise NotFound("Webhook not found")
            await audit.record_in(
                tx,
                actor,
                "webhook.deleted",
                target_type="webhook",
                target_id=webhook_id,
                label=webhook.url,
            )
        await self._db.announce(changes.webhooks(actor.team_id))

    async def list_deliveries(
        self, team_id: str, webhook_id: str, page: DeliveryPage
    ) -> tuple[list[LoggedDelivery], bool]:
        """A page of the webhook's delivery log, newest first, and whether more follow."""
        await self.get_webhook(team_id, webhook_id)
        return await deliveries_store.list_page(
            self._db.reader, webhook_id, status=page.status, limit=page.limit, after=page.after
        )

    async def get_delivery(
        self, team_id: str, webhook_id: str, delivery_id: str
    ) -> tuple[LoggedDelivery, list[Attempt]]:
        """One delivery with its event's body and every attempt, or NotFound."""
        await self.get_webhook(team_id, webhook_id)
        found = await deliveries_store.get(self._db.reader, webhook_id, delivery_id)
        if found is None:
            raise NotFound("Delivery not found")
        return found, await deliveries_store.OUTBOX.attempts_of(self._db.reader, delivery_id)

    async def redeliver(self, team_id: str, webhook_id: str, delivery_id: str) -> LoggedDelivery:
        """Send a delivery again, on a fresh retry schedule, whatever its state (a receiver
        may have lost a successful one); Conflict while an attempt of it is running."""
        await self.get_webhook(team_id, webhook_id)
        async with self._db.write() as tx:
            if await deliveries_store.get(tx, webhook_id, delivery_id) is None:
                raise NotFound("Delivery not found")
            if not await deliveries_store.OUTBOX.restart(tx, delivery_id, now_iso()):
                raise Conflict("The delivery is being attempted right now; try again shortly")
            found = await deliveries_store.get(tx, webhook_id, delivery_id)
        self._emitter.wake()
        assert found is not None
        return found
