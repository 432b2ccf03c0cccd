"""Trigger endpoints: management (bare objects), templates, stats, the public feed and events.

Fixed paths (`/triggers/stats`, `/triggers/templates`, `/triggers/widget/...`,
`/triggers/event`) are registered before `/triggers/{id}` (aiohttp matches routes in
registration order), and the `{id}` pattern excludes their names as well.
"""

from __future__ import annotations

import hashlib
from typing import Annotated, Any, Literal

import orjson
from aiohttp import web
from pydantic import BeforeValidator, Field
from pydantic.json_schema import SkipJsonSchema

from agentsvc.api import app_keys
from agentsvc.api.limits import take_token
from agentsvc.api.models import NON_BLANK, QueryModel, RequestModel, ResponseModel, integral
from agentsvc.api.routing import Call, RouteTable, json_response
from agentsvc.errors import NotFound, ValidationFailed
from agentsvc.services.triggers import templates as trigger_templates
from agentsvc.services.triggers.service import TriggersService
from agentsvc.store.trigger_events import Mismatch, TriggerEvent
from agentsvc.store.triggers import Trigger

routes = RouteTable("triggers")


def _triggers(call: Call) -> TriggersService:
    return call.app[app_keys.triggers_key]


# One trigger's path; it never matches the fixed one-segment paths above, whatever the order
# of registration, and so a 405 on them lists only their own methods in `Allow`.
ONE_TRIGGER = "/triggers/{id:(?!(?:stats|templates|event)$)[^/]+}"

# Widgets on busy sites revalidate the feed at most this often (then a cheap 304).
WIDGET_MAX_AGE_SECONDS = 60

TriggerType = Literal["time_on_page", "scroll_depth", "exit_intent", "page_view", "custom_event"]
ActionType = Literal["open_chat", "show_form", "show_bubble"]
Name = Annotated[str, Field(min_length=1, max_length=200, pattern=NON_BLANK)]
Description = Annotated[str, Field(max_length=2000)]


Priority = Annotated[int, Field(ge=-1_000_000, le=1_000_000), BeforeValidator(integral)]
Id = Annotated[str, Field(min_length=1, max_length=100)]


class AgentQuery(QueryModel):
    agent_id: Id


class TriggerCreate(RequestModel):
    nullable = frozenset({"description"})

    name: Name
    description: Description | None = None
    trigger_type: TriggerType
    conditions: dict[str, Any]
    action_type: ActionType
    action_config: dict[str, Any]
    trigger_once: bool = True
    is_enabled: bool = True
    priority: Priority = 0


class TriggerUpdate(RequestModel):
    nullable = frozenset({"description"})

    name: Name | SkipJsonSchema[None] = None
    description: Description | None = None
    trigger_type: TriggerType | SkipJsonSchema[None] = None
    conditions: dict[str, Any] | SkipJsonSchema[None] = None
    action_type: ActionType | SkipJsonSchema[None] = None
    action_config: dict[str, Any] | SkipJsonSchema[None] = None
    trigger_once: bool | SkipJsonSchema[None] = None
    is_enabled: bool | SkipJsonSchema[None] = None
    priority: Priority | SkipJsonSchema[None] = None


class TriggerEventIn(RequestModel):
    nullable = frozenset({"triggerId", "sessionId", "pagePath"})

    agent_id: Id
    trigger_id: Id | None = None
    trigger_name: Name
    trigger_type: TriggerType
    action_type: ActionType
    event_type: Literal["fired", "converted"]
    session_id: Annotated[str, Field(max_length=200)] | None = None
    page_path: Annotated[str, Field(max_length=2000)] | None = None


class WidgetTrigger(ResponseModel):
    id: str
    name: str
    trigger_type: TriggerType
    conditions: dict[str, Any]
    action_type: ActionType
    action_config: dict[str, Any]
    trigger_once: bool
    priority: int


class TriggerOut(WidgetTrigger):
    agent_id: str
    description: str | None
    is_enabled: bool
    created_at: str
    updated_at: str


class TriggerTemplate(ResponseModel):
    id: str
    name: str
    description: str
    trigger_type: TriggerType
    conditions: dict[str, Any]
    action_type: ActionType
    action_config: dict[str, Any]


class TriggerCounts(ResponseModel):
    fired_count: int
    converted_count: int


class Success(ResponseModel):
    success: bool


def widget_json(trigger: Trigger) -> dict[str, Any]:
    return {
        "id": trigger.id,
        "name": trigger.name,
        "triggerType": trigger.trigger_type,
        "conditions": trigger.conditions,
        "actionType": trigger.action_type,
        "actionConfig": trigger.action_config,
        "triggerOnce": trigger.trigger_once,
        "priority": trigger.priority,
    }


def trigger_json(trigger: Trigger) -> dict[str, Any]:
    return {
        "id": trigger.id,
        "agentId": trigger.agent_id,
        "name": trigger.name,
        "description": trigger.description,
        "triggerType": trigger.trigger_type,
        "conditions": trigger.conditions,
        "actionType": trigger.action_type,
        "actionConfig": trigger.action_config,
        "triggerOnce": trigger.trigger_once,
        "isEnabled": trigger.is_enabled,
        "priority": trigger.priority,
        "createdAt": trigger.created_at,
        "updatedAt": trigger.updated_at,
    }


def _etag_matches(header: str, etag: str) -> bool:
    candidates = [c.strip() for c in header.split(",")]
    # Weak comparison (RFC 9110): a W/ prefix does not prevent a match.
    return "*" in candidates or etag in (c.removeprefix("W/") for c in candidates)


@routes.get("/triggers/stats", query=AgentQuery, response=dict[str, TriggerCounts], errors=(404,))
async def get_trigger_stats(call: Call):
    """Fired and converted counts of every trigger of an agent."""
    stats = await _triggers(call).stats(call.team_id, call.query.agent_id)
    return json_response(stats)


@routes.get("/triggers/templates", response=list[TriggerTemplate])
async def get_trigger_templates(call: Call):
    """Ready-made triggers covering every trigger type and action."""
    return json_response(trigger_templates.list_templates())


@routes.get(
    "/triggers/widget/{agentId}",
    auth="public",
    cors=True,
    response=list[WidgetTrigger],
    response_headers=("ETag", "Cache-Control"),
    errors=(404,),
)
async def get_widget_triggers(call: Call):
    """The enabled triggers of an agent for the widget (public; ETag and If-None-Match)."""
    triggers = await _triggers(call).widget_triggers(call.params["agentId"])
    body = orjson.dumps([widget_json(t) for t in triggers])
    etag = '"' + hashlib.blake2b(body, digest_size=16).hexdigest() + '"'
    headers = {"ETag": etag, "Cache-Control": f"public, max-age={WIDGET_MAX_AGE_SECONDS}"}
    if_none_match = call.request.headers.get("If-None-Match")
    if if_none_match and _etag_matches(if_none_match, etag):
        return web.Response(status=304, headers=headers)
    return web.Response(body=body, content_type="application/json", headers=headers)


ACCEPTED_BODY = orjson.dumps({"success": True})


@routes.post(
    "/triggers/event",
    auth="public",
    cors=True,
    body=TriggerEventIn,
    response=Success,
    status=202,
    errors=(404, 429),
)
async def post_trigger_event(call: Call):
    """Record a widget's fired/converted event (public; limited per session id and per IP)."""
    body: TriggerEventIn = call.body
    triggers = _triggers(call)
    per_minute = triggers.events_per_minute
    message = f"More than {per_minute} trigger events per minute from this session or address"
    await take_token(call.request, f"trigger-events:ip:{call.request.remote}", per_minute, message)
    if body.session_id:
        session_key = f"trigger-events:session:{body.agent_id}:{body.session_id}"
        await take_token(call.request, session_key, per_minute, message)
    # sessionId serves the flood limit; pagePath is accepted but not kept (events are
    # counted, not stored one by one).
    event = TriggerEvent(
        body.agent_id,
        body.trigger_id,
        body.trigger_name,
        body.event_type,
        body.trigger_type,
        body.action_type,
    )
    counted = await triggers.record_event(event)
    if counted is None:
        raise NotFound("No such trigger for this agent")
    if isinstance(counted, Mismatch):
        raise ValidationFailed(f"{counted.field}: does not match the trigger that triggerId names")
    return web.Response(body=ACCEPTED_BODY, status=202, content_type="application/json")


@routes.get("/triggers", query=AgentQuery, response=list[TriggerOut], errors=(404,))
async def list_triggers(call: Call):
    """List an agent's triggers in execution order (lower priority first)."""
    triggers = await _triggers(call).list_triggers(call.team_id, call.query.agent_id)
    return json_response([trigger_json(t) for t in triggers])


@routes.post(
    "/triggers",
    query=AgentQuery,
    body=TriggerCreate,
    response=TriggerOut,
    status=201,
    errors=(404,),
)
async def post_trigger(call: Call):
    """Create a trigger for the agent named by the agentId query parameter."""
    body: TriggerCreate = call.body
    trigger = await _triggers(call).create(call.team_id, call.query.agent_id, body.model_dump())
    return json_response(trigger_json(trigger), status=201)


@routes.get(ONE_TRIGGER, response=TriggerOut, errors=(404,))
async def get_trigger(call: Call):
    """Get one trigger."""
    trigger = await _triggers(call).get(call.team_id, call.params["id"])
    return json_response(trigger_json(trigger))


@routes.put(
    ONE_TRIGGER,
    body=TriggerUpdate,
    response=TriggerOut,
    errors=(404,),
)
async def put_trigger(call: Call):
    """Update some fields of a trigger; the result is validated as a whole."""
    body: TriggerUpdate = call.body
    trigger = await _triggers(call).update(call.team_id, call.params["id"], body.given())
    return json_response(trigger_json(trigger))


@routes.delete(ONE_TRIGGER, response=Success, errors=(404,))
async def delete_trigger(call: Call):
    """Delete a trigger with its stats."""
    await _triggers(call).delete(call.team_id, call.params["id"])
    return json_response({"success": True})


@routes.post(ONE_TRIGGER + "/toggle", response=TriggerOut, errors=(404,))
async def post_trigger_toggle(call: Call):
    """Invert a trigger's isEnabled."""
    trigger = await _triggers(call).toggle(call.team_id, call.params["id"])
    return json_response(trigger_json(trigger))
