"""The signed-in member's own things: their picture (and the public address it is served
from, for visitors' browsers) and their password."""

from __future__ import annotations

from pydantic import Field
from pydantic.json_schema import SkipJsonSchema

from agentsvc.api import app_keys
from agentsvc.api.bodies import read_body
from agentsvc.api.conversations import avatar_url, public_origin
from agentsvc.api.downloads import send_stored
from agentsvc.api.errors import PayloadTooLarge
from agentsvc.api.models import RequestModel, ResponseModel
from agentsvc.api.routing import Call, RouteTable, envelope_response, json_response
from agentsvc.api.session_auth import limit_sign_in
from agentsvc.errors import Forbidden
from agentsvc.input_types import NewPassword, Password
from agentsvc.services.team.avatars import MAX_BYTES, TYPES, check_type
from agentsvc.services.team.service import SignInService, TeamService

routes = RouteTable("profile")

# A year: a new picture gets a new address, so an address never changes what it shows.
AVATAR_CACHE = "public, max-age=31536000, immutable"
AVATAR_HEADERS = {
    "X-Content-Type-Options": "nosniff",
    "Content-Security-Policy": "default-src 'none'; sandbox",
    "Cache-Control": AVATAR_CACHE,
    # Shown by the widget on customers' sites.
    "Cross-Origin-Resource-Policy": "cross-origin",
}


def _team(call: Call) -> TeamService:
    return call.app[app_keys.team_key]


def _sign_in(call: Call) -> SignInService:
    return call.app[app_keys.sign_in_key]


class AvatarOut(ResponseModel):
    avatar_url: str = Field(description="where the picture is served (public, cached for good)")


class Success(ResponseModel):
    success: bool


class PasswordChange(RequestModel):
    current_password: Password | SkipJsonSchema[None] = Field(
        None, description="required when the account has a password"
    )
    new_password: NewPassword


@routes.put(
    "/me/avatar",
    response=AvatarOut,
    errors=(400, 413, 415, 503),
    extra={
        "request_media": tuple(TYPES),
        "description": "The raw picture as the body, with its Content-Type: PNG, JPEG, WebP or"
        f" GIF of at most {MAX_BYTES // 1024} KB whose bytes are of that type (never SVG)."
        " A new picture gets a new address.",
    },
)
async def put_my_avatar(call: Call):
    """Set your picture: visitors see it beside your name."""
    assert call.principal is not None
    content_type = call.request.content_type
    check_type(content_type)
    try:
        data = await read_body(call.request, MAX_BYTES / 2**20)
    except PayloadTooLarge:
        raise PayloadTooLarge(
            f"A picture is at most {MAX_BYTES // 1024} KB: choose a smaller one"
        ) from None
    avatar = await _team(call).set_avatar(call.principal.user_id, content_type, bytes(data))
    return json_response({"avatarUrl": avatar_url(public_origin(call), avatar.id)})


@routes.delete("/me/avatar", response=Success)
async def delete_my_avatar(call: Call):
    """Remove your picture."""
    assert call.principal is not None
    await _team(call).delete_avatar(call.principal.user_id)
    return json_response({"success": True})


@routes.get(
    "/avatars/{avatarId}",
    auth="public",
    media_type=tuple(TYPES),
    response_headers=tuple(AVATAR_HEADERS),
    errors=(404, 503),
)
async def get_avatar(call: Call):
    """A member's picture (public: visitors' browsers load it)."""
    picture = await _team(call).avatar(call.params["avatarId"])
    headers = {"Content-Type": picture.content_type, **AVATAR_HEADERS}
    return await send_stored(call.request, picture.size, picture.chunks, headers)


@routes.post(
    "/auth/password",
    body=PasswordChange,
    response=Success,
    envelope=True,
    errors=(400, 403, 429),
)
async def post_password(call: Call):
    """Set or change your password (a signed-in session only); your other sessions end."""
    assert call.principal is not None
    if call.principal.session_id is None:
        raise Forbidden("Only a signed-in session can change its password, not an API key")
    await limit_sign_in(call)
    body: PasswordChange = call.body
    await _sign_in(call).change_password(call.principal, body.current_password, body.new_password)
    return envelope_response({"success": True})
