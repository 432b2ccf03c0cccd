"""API key management for the dashboard: list (masked), create (shown once), revoke."""

from __future__ import annotations

from pydantic.json_schema import SkipJsonSchema

from agentsvc.api import app_keys
from agentsvc.api.audit import actor_of
from agentsvc.api.models import RequestModel, ResponseModel
from agentsvc.api.routing import Call, RouteTable, envelope_response
from agentsvc.input_types import KeyName
from agentsvc.services.team.service import ApiKeysService
from agentsvc.store.api_keys import ApiKey

routes = RouteTable("api-keys")


def _keys(call: Call) -> ApiKeysService:
    return call.app[app_keys.api_keys_key]


class ApiKeyCreate(RequestModel):
    name: KeyName | SkipJsonSchema[None] = None


class ApiKeyOut(ResponseModel):
    id: str
    name: str
    prefix: str
    last4: str
    user_id: str
    created_at: str


class ApiKeyCreated(ApiKeyOut):
    key: str


class ApiKeyDeleted(ResponseModel):
    id: str
    deleted: bool


def key_json(key: ApiKey) -> dict:
    return {
        "id": key.id,
        "name": key.name,
        "prefix": key.prefix,
        "last4": key.last4,
        "userId": key.user_id,
        "createdAt": key.created_at,
    }


@routes.get("/api-keys", response=list[ApiKeyOut], envelope=True)
async def list_api_keys(call: Call):
    """Live keys, masked: the owner sees the team's, a member their own."""
    assert call.principal is not None
    found = await _keys(call).list_keys(call.principal)
    return envelope_response([key_json(k) for k in found])


@routes.post("/api-keys", body=ApiKeyCreate, response=ApiKeyCreated, envelope=True, status=201)
async def post_api_key(call: Call):
    """Create a key acting for the caller in this team; the key is shown only in this answer."""
    assert call.principal is not None
    created = await _keys(call).create_key(call.principal, call.body.name or "", actor_of(call))
    return envelope_response(
        {
            "id": created.id,
            "name": created.name,
            "prefix": created.prefix,
            "last4": created.last4,
            "userId": call.principal.user_id,
            "createdAt": created.created_at,
            "key": created.key,
        },
        status=201,
    )


@routes.delete("/api-keys/{id}", response=ApiKeyDeleted, envelope=True, errors=(403, 404))
async def delete_api_key(call: Call):
    """Revoke a key at once (members: only their own)."""
    assert call.principal is not None
    await _keys(call).revoke_key(call.principal, call.params["id"], actor_of(call))
    return envelope_response({"id": call.params["id"], "deleted": True})
