"""Event webhook endpoints (owner only): create, list, get, delete, the delivery log and
redelivery."""

from __future__ import annotations

from typing import Annotated, Any, Literal

import orjson
from aiohttp import web
from pydantic import Field
from pydantic.json_schema import SkipJsonSchema

from agentsvc.api import app_keys
from agentsvc.api.audit import CURSOR_PAGINATION_SCHEMA, actor_of
from agentsvc.api.cursors import MAX_CURSOR_LENGTH, decode_cursor, next_cursor
from agentsvc.api.forms import AttemptOut, attempt_json
from agentsvc.api.models import QueryModel, RequestModel, ResponseModel
from agentsvc.api.routing import Call, RouteTable, envelope_response
from agentsvc.services.events.payloads import EVENT_TYPES
from agentsvc.services.events.service import DeliveryPage, WebhooksService
from agentsvc.services.tools.rules import MAX_URL_CHARS
from agentsvc.store.webhook_deliveries import LoggedDelivery
from agentsvc.store.webhooks import Webhook

routes = RouteTable("webhooks")


def _webhooks(app: web.Application) -> WebhooksService:
    return app[app_keys.webhooks_key]


EventType = Literal[EVENT_TYPES]  # type: ignore[valid-type]
WEBHOOK_ID = "wh_[A-Za-z0-9_-]+"
DELIVERY_ID = "whd_[A-Za-z0-9_-]+"
WEBHOOK_PATH = "/webhooks/{id:" + WEBHOOK_ID + "}"
DELIVERY_PATH = WEBHOOK_PATH + "/deliveries/{deliveryId:" + DELIVERY_ID + "}"


class WebhookCreate(RequestModel):
    url: Annotated[
        str,
        Field(
            min_length=1,
            max_length=MAX_URL_CHARS,
            description="http(s) address that receives the events (checked like tool URLs)",
        ),
    ]
    events: Annotated[
        list[EventType],
        Field(min_length=1, max_length=len(EVENT_TYPES) * 4, description="event types"),
    ]
    description: Annotated[str, Field(max_length=200)] | SkipJsonSchema[None] = None


class WebhookOut(ResponseModel):
    id: str
    url: str
    events: list[EventType]
    description: str
    created_at: str
    updated_at: str


class WebhookCreated(WebhookOut):
    secret: str = Field(description="whsec_... signing secret, shown only in this answer")


class WebhookDeleted(ResponseModel):
    id: str
    deleted: bool


DeliveryStatus = Literal["pending", "success", "failed"]


class DeliveryQuery(QueryModel):
    status: DeliveryStatus | None = None
    limit: Annotated[int, Field(ge=1, le=100)] = 20
    cursor: Annotated[str | None, Field(min_length=1, max_length=MAX_CURSOR_LENGTH)] = None


class EventDeliveryOut(ResponseModel):
    id: str
    event_id: str = Field(description="the webhook-id header: the same on every attempt")
    event_type: str
    status: DeliveryStatus
    attempts: int
    last_status_code: int | None
    last_error: str | None
    next_attempt_at: str | None
    created_at: str
    updated_at: str
    completed_at: str | None


class EventDeliveryDetail(EventDeliveryOut):
    payload: dict[str, Any] = Field(description="the body sent: {id, type, timestamp, data}")
    log: list[AttemptOut]


def webhook_json(webhook: Webhook) -> dict[str, Any]:
    return {
        "id": webhook.id,
        "url": webhook.url,
        "events": webhook.events,
        "description": webhook.description,
        "createdAt": webhook.created_at,
        "updatedAt": webhook.updated_at,
    }


def delivery_json(logged: LoggedDelivery) -> dict[str, Any]:
    d = logged.delivery
    return {
        "id": d.id,
        "eventId": d.event_id,
        "eventType": logged.event_type,
        "status": d.status,
        "attempts": d.attempts,
        "lastStatusCode": d.last_status_code,
        "lastError": d.last_error,
        "nextAttemptAt": d.next_attempt_at if d.status == "pending" else None,
        "createdAt": d.created_at,
        "updatedAt": d.updated_at,
        "completedAt": d.completed_at,
    }


class _Page:
    """A delivery as the cursor sees it (created_at, id)."""

    def __init__(self, logged: LoggedDelivery):
        self.created_at = logged.delivery.created_at
        self.id = logged.delivery.id


@routes.post(
    "/webhooks",
    body=WebhookCreate,
    response=WebhookCreated,
    envelope=True,
    status=201,
    owner_only=True,
    errors=(403, 409),
)
async def post_webhook(call: Call):
    """Register a URL for events (owner only); the signing secret is shown only here."""
    body: WebhookCreate = call.body
    created = await _webhooks(call.app).create_webhook(
        actor_of(call), url=body.url, events=list(body.events), description=body.description or ""
    )
    return envelope_response(
        {**webhook_json(created.webhook), "secret": created.secret}, status=201
    )


@routes.get("/webhooks", response=list[WebhookOut], envelope=True, owner_only=True)
async def list_webhooks(call: Call):
    """The team's event webhooks, newest first (owner only)."""
    found = await _webhooks(call.app).list_webhooks(call.team_id)
    return envelope_response([webhook_json(w) for w in found])


@routes.get(WEBHOOK_PATH, response=WebhookOut, envelope=True, owner_only=True, errors=(404,))
async def get_webhook(call: Call):
    """One event webhook (owner only; its secret is never shown again)."""
    webhook = await _webhooks(call.app).get_webhook(call.team_id, call.params["id"])
    return envelope_response(webhook_json(webhook))


@routes.delete(WEBHOOK_PATH, response=WebhookDeleted, envelope=True, owner_only=True, errors=(404,))
async def delete_webhook(call: Call):
    """Delete an event webhook and its pending deliveries (owner only)."""
    await _webhooks(call.app).delete_webhook(actor_of(call), call.params["id"])
    return envelope_response({"id": call.params["id"], "deleted": True})


@routes.get(
    WEBHOOK_PATH + "/deliveries",
    query=DeliveryQuery,
    response=list[EventDeliveryOut],
    envelope=True,
    owner_only=True,
    errors=(404,),
    extra={"envelope_extra": {"properties_extra": {"pagination": CURSOR_PAGINATION_SCHEMA}}},
)
async def list_webhook_deliveries(call: Call):
    """The webhook's delivery log, newest first (owner only)."""
    query: DeliveryQuery = call.query
    page = DeliveryPage(status=query.status, limit=query.limit, after=decode_cursor(query.cursor))
    found, more = await _webhooks(call.app).list_deliveries(call.team_id, call.params["id"], page)
    return envelope_response(
        [delivery_json(d) for d in found],
        pagination={
            "limit": query.limit,
            "nextCursor": next_cursor([_Page(d) for d in found], more),
        },
    )


@routes.get(
    DELIVERY_PATH, response=EventDeliveryDetail, envelope=True, owner_only=True, errors=(404,)
)
async def get_webhook_delivery(call: Call):
    """One delivery with the body sent and every attempt (owner only)."""
    logged, attempts = await _webhooks(call.app).get_delivery(
        call.team_id, call.params["id"], call.params["deliveryId"]
    )
    return envelope_response(
        {
            **delivery_json(logged),
            "payload": orjson.loads(logged.payload or "{}"),
            "log": [attempt_json(a) for a in attempts],
        }
    )


@routes.post(
    DELIVERY_PATH + "/redeliver",
    response=EventDeliveryOut,
    envelope=True,
    status=202,
    owner_only=True,
    errors=(404, 409),
)
async def post_webhook_redeliver(call: Call):
    """Send a delivery again on a fresh retry schedule (owner only); answers at once."""
    logged = await _webhooks(call.app).redeliver(
        call.team_id, call.params["id"], call.params["deliveryId"]
    )
    return envelope_response(delivery_json(logged), status=202)
