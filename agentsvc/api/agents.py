"""Agent endpoints: list, get, create, partial update, delete."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field
from pydantic.json_schema import SkipJsonSchema

from agentsvc import keys
from agentsvc.api.models import MODEL_ID_MARKER, RequestModel, ResponseModel
from agentsvc.api.routing import Call, RouteTable, envelope_response
from agentsvc.errors import ValidationFailed
from agentsvc.language import DEFAULT_LANGUAGE, LANGUAGES
from agentsvc.services.agents import registry as agent_service
from agentsvc.services.agents.models import model_error
from agentsvc.store.agents import Agent

routes = RouteTable("agents")

Name = Annotated[str, Field(min_length=1, max_length=200, pattern=r"\S")]
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


class AgentCreate(RequestModel):
    name: Name
    model: ModelId | SkipJsonSchema[None] = None
    system_prompt: Prompt | SkipJsonSchema[None] = None
    temperature: Temperature | SkipJsonSchema[None] = None
    language: Language | SkipJsonSchema[None] = None


class AgentPatch(RequestModel):
    name: Name | SkipJsonSchema[None] = None
    model: ModelId | SkipJsonSchema[None] = None
    system_prompt: Prompt | SkipJsonSchema[None] = None
    temperature: Temperature | SkipJsonSchema[None] = None
    language: Language | SkipJsonSchema[None] = None


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


class AgentOut(AgentCreated):
    updated_at: str


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


def agent_json(agent: Agent) -> dict:
    return {**created_json(agent), "updatedAt": agent.updated_at}


def _check_model(call: Call, model: str) -> None:
    problem = model_error(call.app[keys.settings_key], model)
    if problem:
        raise ValidationFailed(f"model: {problem}")


@routes.get("/agents", response=list[AgentSummary], envelope=True)
async def list_agents(call: Call):
    """List the team's agents, newest first."""
    agents = await agent_service.list_agents(call.app[keys.db_key], call.team_id)
    return envelope_response([summary_json(a) for a in agents])


@routes.get("/agents/{id}", response=AgentOut, envelope=True, errors=(404,))
async def get_agent(call: Call):
    """Get one agent."""
    agent = await agent_service.get_agent(
        call.app[keys.db_key], call.app[keys.agent_cache_key], call.team_id, call.params["id"]
    )
    return envelope_response(agent_json(agent))


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
    settings = call.app[keys.settings_key]
    model = body.model or settings.models.default
    _check_model(call, model)
    agent = await agent_service.create_agent(
        call.app[keys.db_key],
        team_id=call.team_id,
        name=body.name,
        model=model,
        system_prompt=body.system_prompt or "",
        temperature=body.temperature,
        language=body.language or DEFAULT_LANGUAGE,
    )
    return envelope_response(created_json(agent), status=201)


@routes.patch("/agents/{id}", body=AgentPatch, response=AgentOut, envelope=True, errors=(404,))
async def patch_agent(call: Call):
    """Update some fields of an agent; the slug stays as it was."""
    body: AgentPatch = call.body
    fields = body.given()
    if "model" in fields:
        _check_model(call, fields["model"])
    agent = await agent_service.update_agent(
        call.app[keys.db_key],
        call.app[keys.agent_cache_key],
        call.team_id,
        call.params["id"],
        fields,
    )
    return envelope_response(agent_json(agent))


@routes.delete(
    "/agents/{id}", response=AgentDeleted, envelope=True, owner_only=True, errors=(403, 404)
)
async def delete_agent(call: Call):
    """Delete an agent and everything it owns (owner only)."""
    await agent_service.delete_agent(
        call.app[keys.db_key], call.app[keys.agent_cache_key], call.team_id, call.params["id"]
    )
    return envelope_response({"id": call.params["id"], "deleted": True})
