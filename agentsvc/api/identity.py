"""An agent's widget identity secret: set or generate it, see whether one is set, remove it."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field
from pydantic.json_schema import SkipJsonSchema

from agentsvc.api import app_keys
from agentsvc.api.models import RequestModel, ResponseModel
from agentsvc.api.routing import Call, RouteTable, envelope_response
from agentsvc.services.agents import identity as identity_service
from agentsvc.services.agents.service import AgentsService

routes = RouteTable("agents")


def _agents(call: Call) -> AgentsService:
    return call.app[app_keys.agents_key]


Secret = Annotated[
    str,
    Field(
        min_length=identity_service.MIN_SECRET_LENGTH,
        max_length=identity_service.MAX_SECRET_LENGTH,
    ),
]


class IdentitySecretIn(RequestModel):
    secret: Secret | SkipJsonSchema[None] = Field(
        None, description="The secret to use; omitted: a random one is generated"
    )


class IdentitySecretOut(ResponseModel):
    agent_id: str
    enabled: bool
    secret: str | None = Field(None, description="Returned once, when it is set")


@routes.put(
    "/agents/{id}/identity-secret",
    body=IdentitySecretIn,
    response=IdentitySecretOut,
    envelope=True,
    errors=(400, 404),
)
async def put_identity_secret(call: Call):
    """Set (or generate) the agent's identity secret for signed widget users."""
    secret = await _agents(call).set_identity_secret(
        call.team_id, call.params["id"], call.body.secret
    )
    return envelope_response({"agentId": call.params["id"], "enabled": True, "secret": secret})


@routes.get(
    "/agents/{id}/identity-secret", response=IdentitySecretOut, envelope=True, errors=(404,)
)
async def get_identity_secret(call: Call):
    """Whether the agent has an identity secret (the secret itself is never shown again)."""
    enabled = await _agents(call).has_identity_secret(call.team_id, call.params["id"])
    return envelope_response({"agentId": call.params["id"], "enabled": enabled, "secret": None})


@routes.delete(
    "/agents/{id}/identity-secret", response=IdentitySecretOut, envelope=True, errors=(404,)
)
async def delete_identity_secret(call: Call):
    """Remove the agent's identity secret: declared widget users are then taken as given."""
    await _agents(call).clear_identity_secret(call.team_id, call.params["id"])
    return envelope_response({"agentId": call.params["id"], "enabled": False, "secret": None})
