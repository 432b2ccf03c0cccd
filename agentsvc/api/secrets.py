"""Team secret endpoints: list names, set a value, delete (values are never returned)."""

from __future__ import annotations

from pydantic import Field

from agentsvc.api import app_keys
from agentsvc.api.models import RequestModel, ResponseModel
from agentsvc.api.routing import Call, RouteTable, json_response
from agentsvc.services.tools import secrets as secret_service
from agentsvc.services.tools.secrets import SecretsService
from agentsvc.store.secrets import SecretInfo

routes = RouteTable("secrets")


def _secrets(call: Call) -> SecretsService:
    return call.app[app_keys.secrets_key]


class SecretPut(RequestModel):
    value: str = Field(min_length=1, max_length=secret_service.MAX_VALUE_CHARS)


class SecretOut(ResponseModel):
    name: str
    created_at: str
    updated_at: str


class Success(ResponseModel):
    success: bool


def secret_json(info: SecretInfo) -> dict:
    return {"name": info.name, "createdAt": info.created_at, "updatedAt": info.updated_at}


@routes.get("/secrets", response=list[SecretOut])
async def list_secrets(call: Call):
    """List the team's secrets by name; values are never returned."""
    infos = await _secrets(call).list_names(call.team_id)
    return json_response([secret_json(i) for i in infos])


@routes.put(
    "/secrets/{name}",
    body=SecretPut,
    response=SecretOut,
    path_patterns={"name": secret_service.NAME_PATTERN},
)
async def put_secret(call: Call):
    """Create or replace a team secret (encrypted at rest)."""
    info = await _secrets(call).put(call.team_id, call.params["name"], call.body.value)
    return json_response(secret_json(info))


@routes.delete(
    "/secrets/{name}",
    response=Success,
    errors=(404,),
    path_patterns={"name": secret_service.NAME_PATTERN},
)
async def delete_secret(call: Call):
    """Delete a team secret."""
    await _secrets(call).delete(call.team_id, call.params["name"])
    return json_response({"success": True})
