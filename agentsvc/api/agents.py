"""Agent endpoints: list, get, create, partial update, delete."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BeforeValidator, Field
from pydantic.json_schema import SkipJsonSchema

from agentsvc.api import app_keys
from agentsvc.api.audit import actor_of
from agentsvc.api.guardrails import (
    GUARDRAILS_DESCRIPTION,
    GuardrailsIn,
    GuardrailsOut,
    TryBody,
    TryOut,
)
from agentsvc.api.models import MODEL_ID_MARKER, NON_BLANK, RequestModel, ResponseModel, integral
from agentsvc.api.routing import (
    Call,
    RouteTable,
    bytes_response,
    envelope_bytes,
    envelope_response,
)
from agentsvc.api.usage import BudgetIn, BudgetStatusOut, usage_service
from agentsvc.api.widget_look import WidgetIn, WidgetOut
from agentsvc.errors import Forbidden
from agentsvc.language import DEFAULT_LANGUAGE, LANGUAGES
from agentsvc.services.agents.registry import NewAgent
from agentsvc.services.agents.service import AgentChanges, AgentsService, version_view
from agentsvc.services.guardrails import settings as guardrail_settings
from agentsvc.services.handoff.settings import DAYS
from agentsvc.services.privacy import retention
from agentsvc.services.widget import look as widget_look
from agentsvc.store.agents import Agent

routes = RouteTable("agents")


def agents_service(call: Call) -> AgentsService:
    return call.app[app_keys.agents_key]


Name = Annotated[str, Field(min_length=1, max_length=200, pattern=NON_BLANK)]
# The OpenAPI document narrows this to the configured providers (see api/openapi.py).
ModelId = Annotated[
    str, Field(min_length=1, max_length=300, json_schema_extra={MODEL_ID_MARKER: True})
]
Temperature = Annotated[float, Field(ge=0, le=100)]
Prompt = Annotated[str, Field(max_length=100_000)]
# Snowball's language names: the word forms the builtin model and retrieval fold together.
Language = Annotated[
    Literal[LANGUAGES],  # type: ignore[valid-type]
    Field(description="The agent's language, for word forms (ships/shipping)."),
]


SHOW_SOURCES_DESCRIPTION = (
    "the widget lists an answer's sources under it (titles, linked when fetched from a URL);"
    " a display setting, not versioned"
)


class AgentCreate(RequestModel):
    name: Name
    model: ModelId | SkipJsonSchema[None] = None
    system_prompt: Prompt | SkipJsonSchema[None] = None
    temperature: Temperature | SkipJsonSchema[None] = None
    language: Language | SkipJsonSchema[None] = None
    show_sources: bool | SkipJsonSchema[None] = Field(None, description=SHOW_SOURCES_DESCRIPTION)


Clock = Annotated[str, Field(pattern=r"^\d\d:\d\d$", description="HH:MM, 00:00 to 24:00")]


class BusinessInterval(RequestModel):
    day: Literal[DAYS]  # type: ignore[valid-type]
    start: Clock
    end: Clock


class BusinessHours(RequestModel):
    timezone: Annotated[str, Field(min_length=1, max_length=64, description="IANA zone")]
    intervals: Annotated[list[BusinessInterval], Field(max_length=70)]


class HandoffNotifyIn(RequestModel):
    nullable = frozenset({"teamChat"})

    email: bool | SkipJsonSchema[None] = Field(
        None, description="e-mail the members who opted in (PATCH /team/members/{id})"
    )
    team_chat: Annotated[str, Field(max_length=2000)] | None = Field(
        None, description="a webhook URL that gets each handoff, signed (Standard Webhooks)"
    )


class HandoffIn(RequestModel):
    nullable = frozenset({"businessHours"})

    enabled: bool | SkipJsonSchema[None] = None
    business_hours: BusinessHours | None = Field(None, description="absent or null: always")
    offline_message: Annotated[str, Field(min_length=1, max_length=2000)] | SkipJsonSchema[None] = (
        None
    )
    notify: HandoffNotifyIn | SkipJsonSchema[None] = None


RetentionDays = Annotated[
    int, Field(ge=retention.MIN_DAYS, le=retention.MAX_DAYS), BeforeValidator(integral)
]
RETENTION_DESCRIPTION = (
    "conversations idle and submissions older than this many days are purged; null: kept"
    " forever (owner only)"
)


class PublishGateIn(RequestModel):
    evalset_id: Annotated[str, Field(min_length=1, max_length=100)] = Field(
        description="one of the agent's evaluation sets, run on the draft at each publish"
    )
    min_pass_rate: Annotated[float, Field(ge=0, le=100)] = Field(
        0, description="the % of its cases the draft must pass"
    )
    max_drop: Annotated[float, Field(ge=0, le=100)] = Field(
        100, description="at most this many points under the live version's pass rate"
    )


BUDGET_DESCRIPTION = (
    "the agent's monthly budget: a warning at warnAtPercent, and at the limit it answers with"
    " its offline message until the month ends (owner only; null: none); not versioned"
)


class AgentPatch(RequestModel):
    nullable = frozenset({"retentionDays", "publishGate", "budget"})

    name: Name | SkipJsonSchema[None] = None
    model: ModelId | SkipJsonSchema[None] = None
    system_prompt: Prompt | SkipJsonSchema[None] = None
    temperature: Temperature | SkipJsonSchema[None] = None
    language: Language | SkipJsonSchema[None] = None
    handoff: HandoffIn | SkipJsonSchema[None] = Field(
        None, description="handoff to a person; the given fields replace the stored ones"
    )
    widget: WidgetIn | SkipJsonSchema[None] = Field(
        None, description="the widget's look, language, texts and starters (merged in)"
    )
    guardrails: GuardrailsIn | SkipJsonSchema[None] = Field(
        None, description=GUARDRAILS_DESCRIPTION
    )
    show_sources: bool | SkipJsonSchema[None] = Field(None, description=SHOW_SOURCES_DESCRIPTION)
    retention_days: RetentionDays | None = Field(None, description=RETENTION_DESCRIPTION)
    publish_gate: PublishGateIn | None = Field(
        None, description="an evaluation set the draft must pass to be published; null: none"
    )
    budget: BudgetIn | None = Field(None, description=BUDGET_DESCRIPTION)
    versioning: Literal["live", "draft"] | SkipJsonSchema[None] = Field(
        None,
        description="draft: changes of what the agent does (prompt, model, temperature,"
        " language, handoff, guardrails) wait in its draft until POST /agents/{id}/publish;"
        " live: they go live at once (each as a new version)",
    )


class AgentSummary(ResponseModel):
    id: str
    name: str
    slug: str
    model: str
    created_at: str


class AgentCreated(AgentSummary):
    temperature: float
    system_prompt: str
    language: Language


class HandoffNotifyOut(ResponseModel):
    email: bool
    team_chat: str | None
    team_chat_secret: str | None = Field(description="whsec_ secret that signs team chat posts")


class BusinessIntervalOut(ResponseModel):
    day: str
    start: str
    end: str


class BusinessHoursOut(ResponseModel):
    timezone: str
    intervals: list[BusinessIntervalOut]


class HandoffOut(ResponseModel):
    enabled: bool
    business_hours: BusinessHoursOut | None
    offline_message: str
    notify: HandoffNotifyOut


class DraftOut(ResponseModel):
    based_on: int = Field(description="the live version the draft started from")
    updated_at: str
    snapshot: dict[str, Any] = Field(
        description="what the agent will do once published: systemPrompt, model,"
        " temperature, language, handoff, guardrails"
    )


class RunningVariant(ResponseModel):
    version: int
    weight: float


class RunningExperiment(ResponseModel):
    id: str
    variants: list[RunningVariant]


class AgentOut(AgentCreated):
    updated_at: str
    version: int = Field(description="the live version's number (GET /agents/{id}/versions)")
    versioning: Literal["live", "draft"]
    draft: DraftOut | None = Field(description="the changes waiting to be published, if any")
    experiment: RunningExperiment | None = Field(
        description="the experiment running on the agent's versions (GET /experiments/{id})"
    )
    publish_gate: dict[str, Any] | None = Field(
        description="{evalsetId, minPassRate, maxDrop}: what a publish must pass; null: none"
    )
    handoff: HandoffOut
    guardrails: GuardrailsOut = Field(description=GUARDRAILS_DESCRIPTION)
    widget: WidgetOut
    show_sources: bool = Field(description=SHOW_SOURCES_DESCRIPTION)
    retention_days: int | None = Field(description=RETENTION_DESCRIPTION)
    budget: BudgetStatusOut | None = Field(description=BUDGET_DESCRIPTION)


class AgentDeleted(ResponseModel):
    id: str
    deleted: bool


def summary_json(agent: Agent) -> dict:
    return {
        "id": agent.id,
        "name": agent.name,
        "slug": agent.slug,
        "model": agent.model,
        "createdAt": agent.created_at,
    }


def created_json(agent: Agent) -> dict:
    return {
        **summary_json(agent),
        "temperature": agent.temperature,
        "systemPrompt": agent.system_prompt,
        "language": agent.language,
    }


async def agent_json(call: Call, agent: Agent) -> dict:
    """An agent as the team sees it, with its budget and this month's spending."""
    budget = await usage_service(call).agent_budget(agent.team_id, agent.id)
    return {**_settings_of(agents_service(call), agent), "budget": budget}


def _settings_of(service: AgentsService, agent: Agent) -> dict:
    return service.view_of(agent, "settings", lambda a: _settings_json(service, a))


def _settings_json(service: AgentsService, agent: Agent) -> dict:
    """What of an agent's JSON follows from the agent alone (kept while it is unchanged)."""
    return {
        **created_json(agent),
        "updatedAt": agent.updated_at,
        "version": agent.version,
        "versioning": agent.versioning,
        "draft": draft_json(agent.draft),
        "experiment": agent.experiment,
        "publishGate": agent.publish_gate,
        "handoff": service.handoff_json(agent),
        "guardrails": guardrail_settings.settings_of(agent.guardrails),
        "widget": widget_look.settings_of(agent.widget),
        "showSources": widget_look.show_sources(agent.widget),
        "retentionDays": agent.retention_days,
    }


def draft_json(draft: dict[str, Any] | None) -> dict[str, Any] | None:
    if draft is None:
        return None
    return {
        "basedOn": draft["basedOn"],
        "updatedAt": draft["updatedAt"],
        "snapshot": version_view(draft["snapshot"]),
    }


@routes.get("/agents", response=list[AgentSummary], envelope=True)
async def list_agents(call: Call):
    """List the team's agents, newest first."""
    agents = await agents_service(call).list_agents(call.team_id)
    return envelope_response([summary_json(a) for a in agents])


@routes.get("/agents/{id}", response=AgentOut, envelope=True, errors=(404,))
async def get_agent(call: Call):
    """Get one agent."""
    service = agents_service(call)
    agent = await service.get(call.team_id, call.params["id"])
    budget = await usage_service(call).agent_budget(agent.team_id, agent.id)
    if budget is not None:
        return envelope_response({**_settings_of(service, agent), "budget": budget})
    # The answer follows from the agent alone: its bytes are kept while it is unchanged.
    body = service.view_of(agent, "body", lambda a: _body_without_budget(service, a))
    return bytes_response(body)


def _body_without_budget(service: AgentsService, agent: Agent) -> bytes:
    return envelope_bytes({**_settings_of(service, agent), "budget": None})


@routes.post(
    "/agents",
    body=AgentCreate,
    response=AgentCreated,
    envelope=True,
    status=201,
    owner_only=True,
    errors=(403,),
)
async def post_agent(call: Call):
    """Create an agent (owner only)."""
    body: AgentCreate = call.body
    new = NewAgent(
        name=body.name,
        model=body.model or "",  # empty: the configured default
        system_prompt=body.system_prompt or "",
        temperature=body.temperature,
        language=body.language or DEFAULT_LANGUAGE,
        widget={"showSources": True} if body.show_sources else None,
    )
    agent = await agents_service(call).create(actor_of(call), new)
    return envelope_response(created_json(agent), status=201)


@routes.patch(
    "/agents/{id}", body=AgentPatch, response=AgentOut, envelope=True, errors=(403, 404, 409)
)
async def patch_agent(call: Call):
    """Update some fields of an agent; the slug stays as it was."""
    body: AgentPatch = call.body
    fields = body.given()
    handoff = fields.pop("handoff", None)
    guardrails = fields.pop("guardrails", None)
    widget = fields.pop("widget", None)
    widget_changes = {} if widget is None else widget.changes()
    if "show_sources" in fields:
        widget_changes["showSources"] = fields.pop("show_sources")
    retention_given = "retention_days" in fields
    retention_days = fields.pop("retention_days", None)
    is_owner = bool(call.principal and call.principal.is_owner)
    if retention_given and not is_owner:
        raise Forbidden("Only the team owner can change how long data is kept (retentionDays)")
    budget_given = "budget" in fields
    budget = fields.pop("budget", None)
    if budget_given and not is_owner:
        raise Forbidden("Only the team owner can change the agent's budget (budget)")
    budget_change = budget.change() if budget is not None else None
    usage_service(call).check(budget_change)  # refused before anything else changes
    if handoff is not None:
        handoff = body.handoff.model_dump(by_alias=True, exclude_unset=True)  # type: ignore[union-attr]
    if "publish_gate" in fields and body.publish_gate is not None:
        fields["publish_gate"] = body.publish_gate.model_dump(by_alias=True)
    changes = AgentChanges(
        fields=fields,
        handoff=handoff,
        guardrails=guardrails.as_stored() if guardrails is not None else None,
        widget=widget_changes or None,
        retention_given=retention_given,
        retention_days=retention_days,
    )
    agent = await agents_service(call).update(actor_of(call), call.params["id"], changes)
    if budget_given:
        await usage_service(call).set_agent_budget(actor_of(call), agent.id, budget_change)
    return envelope_response(await agent_json(call, agent))


@routes.delete(
    "/agents/{id}", response=AgentDeleted, envelope=True, owner_only=True, errors=(403, 404)
)
async def delete_agent(call: Call):
    """Delete an agent and everything it owns (owner only)."""
    await agents_service(call).delete(actor_of(call), call.params["id"])
    return envelope_response({"id": call.params["id"], "deleted": True})


@routes.post(
    "/agents/{id}/guardrails/try", body=TryBody, response=TryOut, envelope=True, errors=(400, 404)
)
async def try_guardrails(call: Call):
    """What the agent's guardrails (its draft's, with the unsaved changes given) would do
    with a text: redacted, blocked, too long, or saying what it must not; no model is asked
    and nothing is stored."""
    body: TryBody = call.body
    given = body.guardrails.as_stored() if body.guardrails is not None else None
    found = await agents_service(call).try_guardrails(
        call.team_id, call.params["id"], body.text, given
    )
    return envelope_response(found)
