"""Channel endpoints: an agent's channels (owners manage them, members read them) and the
public address each channel receives its platform's messages at."""

from __future__ import annotations

import time
from typing import Annotated, Any, Literal

from pydantic import Field
from pydantic.json_schema import SkipJsonSchema

from agentsvc.api import app_keys
from agentsvc.api.audit import actor_of
from agentsvc.api.bodies import read_body
from agentsvc.api.limits import take_token
from agentsvc.api.models import NON_BLANK, RequestModel, ResponseModel
from agentsvc.api.routing import Call, RouteTable, envelope_response, parse_json, validate_model
from agentsvc.errors import Unauthorized
from agentsvc.services.channels.inbound import Inbound
from agentsvc.services.channels.kinds import AVAILABLE_TYPES
from agentsvc.services.channels.service import ChannelChange, ChannelsService, ChannelView
from agentsvc.services.delivery.signing import verify
from agentsvc.services.tools.rules import MAX_URL_CHARS

routes = RouteTable("channels")

CHANNEL_PATH = "/channels/{id:ch_[A-Za-z0-9_-]+}"
INBOUND_MAX_MB = 1.0  # a platform message over 1 MB is refused (413)
ChannelType = Literal[AVAILABLE_TYPES]  # type: ignore[valid-type]


def _channels(call: Call) -> ChannelsService:
    return call.app[app_keys.channels_key]


# ── the settings of each type ────────────────────────────────────────────────────────────


class ApiChannelConfig(RequestModel):
    """The `api` channel: replies are POSTed to `outboundUrl`, signed with its secret."""

    outbound_url: Annotated[
        str,
        Field(
            min_length=1,
            max_length=MAX_URL_CHARS,
            description="http(s) address that receives the agent's replies (checked like"
            " webhook URLs)",
        ),
    ]


CONFIG_MODELS: dict[str, type[RequestModel]] = {"api": ApiChannelConfig}


def _config(kind: str, data: Any) -> dict[str, Any]:
    """A type's settings, checked by its model (field errors name `config.<field>`)."""
    model = validate_model(CONFIG_MODELS[kind], data, "config.")
    return model.model_dump(by_alias=True)


Name = Annotated[str, Field(min_length=1, max_length=100, pattern=NON_BLANK)]


class ChannelCreate(RequestModel):
    type: ChannelType = Field(description="the platform: " + ", ".join(AVAILABLE_TYPES))
    name: Name | SkipJsonSchema[None] = None
    config: ApiChannelConfig = Field(description="the type's settings (api: {outboundUrl})")


class ChannelPatch(RequestModel):
    name: Name | SkipJsonSchema[None] = None
    enabled: bool | SkipJsonSchema[None] = None
    config: dict[str, Any] | SkipJsonSchema[None] = Field(
        None, description="the type's whole settings; credentials left out are kept"
    )


class ChannelOut(ResponseModel):
    id: str
    agent_id: str
    type: ChannelType
    name: str
    enabled: bool
    inbound_url: str = Field(description="where the platform sends messages (public)")
    config: dict[str, Any] = Field(description="the settings; credentials masked, ••••1234")
    created_at: str
    updated_at: str


class ChannelCreated(ChannelOut):
    secret: str | None = Field(
        description="api: the whsec_... signing secret, shown only in this answer"
    )


class ChannelDeleted(ResponseModel):
    id: str
    deleted: bool


class InboundMessage(RequestModel):
    """What the api channel receives: who wrote (your id for the user), the text, and your
    id of the message (the same id twice makes one turn)."""

    user_id: Annotated[str, Field(min_length=1, max_length=200, pattern=NON_BLANK)]
    text: Annotated[str, Field(min_length=1, max_length=10_000, pattern=NON_BLANK)]
    message_id: Annotated[str, Field(min_length=1, max_length=200, pattern=NON_BLANK)]


class InboundReceived(ResponseModel):
    received: bool
    duplicate: bool = Field(description="true when this messageId was received before")


def channel_json(view: ChannelView) -> dict[str, Any]:
    c = view.channel
    return {
        "id": c.id,
        "agentId": c.agent_id,
        "type": c.type,
        "name": c.name,
        "enabled": c.enabled,
        "inboundUrl": view.inbound_url,
        "config": view.config,
        "createdAt": c.created_at,
        "updatedAt": c.updated_at,
    }


@routes.post(
    "/agents/{id}/channels",
    body=ChannelCreate,
    response=ChannelCreated,
    envelope=True,
    status=201,
    owner_only=True,
    errors=(403, 404, 409),
)
async def post_channel(call: Call):
    """Give an agent a channel (owner only); an api channel's secret is shown only here."""
    body: ChannelCreate = call.body
    view = await _channels(call).create_channel(
        actor_of(call),
        call.params["id"],
        body.type,
        body.name,
        body.config.model_dump(by_alias=True),
    )
    return envelope_response({**channel_json(view), "secret": view.secret}, status=201)


@routes.get("/agents/{id}/channels", response=list[ChannelOut], envelope=True, errors=(404,))
async def list_channels(call: Call):
    """The agent's channels, oldest first."""
    found = await _channels(call).list_channels(call.team_id, call.params["id"])
    return envelope_response([channel_json(v) for v in found])


@routes.get(CHANNEL_PATH, response=ChannelOut, envelope=True, errors=(404,))
async def get_channel(call: Call):
    """One channel (its credentials masked)."""
    view = await _channels(call).get_channel(call.team_id, call.params["id"])
    return envelope_response(channel_json(view))


@routes.patch(
    CHANNEL_PATH,
    body=ChannelPatch,
    response=ChannelOut,
    envelope=True,
    owner_only=True,
    errors=(403, 404),
)
async def patch_channel(call: Call):
    """Rename, enable or disable a channel, or replace its settings (owner only)."""
    body: ChannelPatch = call.body
    service = _channels(call)
    config = None
    if body.config is not None:
        kind = await service.channel_type(call.team_id, call.params["id"])
        config = _config(kind, body.config)
    change = ChannelChange(name=body.name, enabled=body.enabled, config=config)
    view = await service.update_channel(actor_of(call), call.params["id"], change)
    return envelope_response(channel_json(view))


@routes.delete(
    CHANNEL_PATH, response=ChannelDeleted, envelope=True, owner_only=True, errors=(403, 404)
)
async def delete_channel(call: Call):
    """Delete a channel and its pending replies (owner only); its conversations stay."""
    await _channels(call).delete_channel(actor_of(call), call.params["id"])
    return envelope_response({"id": call.params["id"], "deleted": True})


@routes.post(
    CHANNEL_PATH + "/inbound",
    auth="public",
    response=InboundReceived,
    envelope=True,
    status=202,
    max_body_mb=INBOUND_MAX_MB,
    errors=(401, 404, 413, 429),
    extra={"body_schema": InboundMessage, "description": "See docs/integrators/channels.md."},
)
async def post_channel_inbound(call: Call):
    """Receive a message of the channel's platform (signed); the reply follows on the
    channel."""
    service = _channels(call)
    channel = await service.receiving_channel(call.params["id"])
    raw = bytes(await read_body(call.request, INBOUND_MAX_MB))
    secret = service.credentials(channel)["secret"]
    refused = verify(secret, call.request.headers, raw, time.time())
    if refused is not None:
        raise Unauthorized(f"Invalid signature: {refused}")
    body = validate_model(InboundMessage, parse_json(raw))
    assert isinstance(body, InboundMessage)
    per_channel, per_user = service.limits
    message = "Too many messages on this channel; try again later"
    await take_token(call.request, f"ch:{channel.id}", per_channel, message)
    message = "Too many messages from this user on this channel; try again later"
    await take_token(call.request, f"ch:{channel.id}:u:{body.user_id}", per_user, message)
    fresh = await service.receive(channel, Inbound(body.user_id, body.text, body.message_id))
    return envelope_response({"received": True, "duplicate": not fresh}, status=202)
