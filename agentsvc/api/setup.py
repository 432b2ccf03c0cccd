"""First-run setup: the dashboard asks whether an owner must be created, and creates it."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from agentsvc.api import app_keys, auth
from agentsvc.api.models import RequestModel, ResponseModel
from agentsvc.api.routing import Call, RouteTable, envelope_response
from agentsvc.api.session_auth import limit_sign_in
from agentsvc.input_types import MAX_DISPLAY_NAME, NewPassword
from agentsvc.services.team.service import TeamService
from agentsvc.text_patterns import DISPLAY_NAME_PATTERN

routes = RouteTable("setup")


def _team(call: Call) -> TeamService:
    return call.app[app_keys.team_key]


class OwnerCreate(RequestModel):
    email: Annotated[str, Field(min_length=3, max_length=254, pattern=r"^[^@\s\x00]+@[^@\s\x00]+$")]
    password: NewPassword
    name: Annotated[str, Field(max_length=MAX_DISPLAY_NAME, pattern=DISPLAY_NAME_PATTERN)] = ""


class SetupState(ResponseModel):
    needs_owner: bool


class OwnerUser(ResponseModel):
    id: str
    email: str
    name: str


class OwnerCreated(ResponseModel):
    user: OwnerUser


@routes.get("/setup", auth="public", response=SetupState, envelope=True)
async def get_setup(call: Call):
    """Whether this instance still needs its first (owner) account."""
    needs = await _team(call).needs_owner()
    return envelope_response({"needsOwner": needs})


@routes.post(
    "/setup",
    auth="public",
    body=OwnerCreate,
    response=OwnerCreated,
    envelope=True,
    status=201,
    errors=(403, 429),
    response_headers=("Set-Cookie",),
)
async def post_setup(call: Call):
    """Create the owner account and its team, signed in; only while no user exists."""
    body: OwnerCreate = call.body
    auth.refuse_foreign_origin(call.request)
    # Hashing a password is deliberately costly: the sign-in limits apply here too.
    await limit_sign_in(call, body.email)
    signed_in = await _team(call).create_owner(
        email=body.email, password=body.password, name=body.name
    )
    user = signed_in.user
    response = envelope_response(
        {"user": {"id": user.id, "email": user.email, "name": user.name}}, status=201
    )
    auth.set_session_cookie(call.request, response, signed_in.token)
    return response
