"""Event webhooks of a team: create (the signing secret shown once), list, delete, and
their delivery log with redelivery."""

from __future__ import annotations

from dataclasses import dataclass

from agentsvc.db import ConstraintViolation, Database
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
from agentsvc.store.submissions import Attempt
from agentsvc.store.webhook_deliveries import LoggedDelivery
from agentsvc.store.webhooks import Webhook


@dataclass(frozen=True, slots=True)
class CreatedWebhook:
    webhook: Webhook
    secret: str  # whsec_..., returned once


def _events(events: list[str]) -> list[str]:
    unknown = [e for e in events if e not in EVENT_TYPES]
    if unknown:
        raise ValidationFailed(f"events: unknown event type {unknown[0]!r}")
    if not events:
        raise ValidationFailed("events: name at least one event type")
    return list(dict.fromkeys(events))


async def create_webhook(
    db: Database,
    box: SecretBox,
    actor: Actor,
    *,
    url: str,
    events: list[str],
    description: str,
    max_per_team: int,
    allow_private: bool,
) -> CreatedWebhook:
    """Register a URL for some event types; its signing secret is in this answer only."""
    check_target_url("url", url, allow_private=allow_private)
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
        sealed_secret=box.seal(secret, secret_context(webhook_id)),
        created_by=actor.user_id,
        created_at=now,
        updated_at=now,
    )
    duplicate = Conflict("url: the team already has a webhook for this URL")
    async with db.write() as tx:
        if await store.url_taken(tx, actor.team_id, url):
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
            target_id=webhook_id,
            label=url,
            details={"events": chosen},
        )
    await db.announce(changes.webhooks(actor.team_id))
    return CreatedWebhook(webhook, secret)


async def list_webhooks(db: Database, team_id: str) -> list[Webhook]:
    """The team's webhooks, newest first (never their secrets)."""
    return await store.list_for_team(db.reader, team_id)


async def get_webhook(db: Database, team_id: str, webhook_id: str) -> Webhook:
    """The team's webhook, or NotFound."""
    webhook = await store.get(db.reader, team_id, webhook_id)
    if webhook is None:
        raise NotFound("Webhook not found")
    return webhook


async def delete_webhook(db: Database, actor: Actor, webhook_id: str) -> None:
    """Delete a webhook; its pending deliveries are dropped with its log."""
    async with db.write() as tx:
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
    await db.announce(changes.webhooks(actor.team_id))


async def list_deliveries(
    db: Database,
    team_id: str,
    webhook_id: str,
    *,
    status: str | None,
    limit: int,
    after: tuple[str, str] | None,
) -> tuple[list[LoggedDelivery], bool]:
    """A page of the webhook's delivery log, newest first, and whether more follow."""
    await get_webhook(db, team_id, webhook_id)
    return await deliveries_store.list_page(
        db.reader, webhook_id, status=status, limit=limit, after=after
    )


async def get_delivery(
    db: Database, team_id: str, webhook_id: str, delivery_id: str
) -> tuple[LoggedDelivery, list[Attempt]]:
    """One delivery with its event's body and every attempt, or NotFound."""
    await get_webhook(db, team_id, webhook_id)
    found = await deliveries_store.get(db.reader, webhook_id, delivery_id)
    if found is None:
        raise NotFound("Delivery not found")
    return found, await deliveries_store.attempts_for(db.reader, delivery_id)


async def redeliver(
    db: Database, emitter: Emitter, team_id: str, webhook_id: str, delivery_id: str
) -> LoggedDelivery:
    """Send a delivery again, on a fresh retry schedule, whatever its state (a receiver
    may have lost a successful one); Conflict while an attempt of it is running."""
    await get_webhook(db, team_id, webhook_id)
    async with db.write() as tx:
        if await deliveries_store.get(tx, webhook_id, delivery_id) is None:
            raise NotFound("Delivery not found")
        if not await deliveries_store.restart(tx, delivery_id, now_iso()):
            raise Conflict("The delivery is being attempted right now; try again shortly")
        found = await deliveries_store.get(tx, webhook_id, delivery_id)
    emitter.wake()
    assert found is not None
    return found
