"""SAML 2.0 sign-in endpoints of a team: our service provider metadata, the start
(HTTP-Redirect to the identity provider) and the assertion consumer service (HTTP-POST)."""

from __future__ import annotations

from urllib.parse import parse_qs

from aiohttp import web

from agentsvc.api import auth
from agentsvc.api.bodies import read_body
from agentsvc.api.routing import Call, RouteTable
from agentsvc.api.session_auth import OAuthStartQuery, limit_sign_in
from agentsvc.api.sso import sso_service
from agentsvc.errors import Unauthorized, UnsupportedMediaType
from agentsvc.services.sso.oidc import STATE_TTL_SECONDS

routes = RouteTable("sso")

SAML_STATE_COOKIE = "agentsvc_saml_state"
SAML_COOKIE_PATH = "/api/v1/auth/saml/"
FORM = "application/x-www-form-urlencoded"
# A form holding a SAMLResponse of the largest size read (256 KB of base64, percent-encoded).
MAX_ACS_BODY_MB = 1.0
METADATA_TYPE = "application/samlmetadata+xml"


@routes.get("/auth/saml/{teamId}/metadata", auth="public", media_type=METADATA_TYPE, errors=(404,))
async def get_auth_saml_metadata(call: Call):
    """Our service provider metadata for the team (entity id, ACS URL, signed assertions
    wanted), for providers that read it; 404 when the team has no SAML sign-in."""
    xml = await sso_service(call).saml_metadata(call.params["teamId"])
    return web.Response(text=xml, content_type=METADATA_TYPE, charset="utf-8")


@routes.get(
    "/auth/saml/{teamId}/start",
    auth="public",
    query=OAuthStartQuery,
    status=302,
    errors=(400, 401, 404, 429),
    response_headers=("Location", "Set-Cookie"),
)
async def get_auth_saml_start(call: Call):
    """Start signing in through the team's SAML provider: a redirect carrying an
    AuthnRequest (HTTP-Redirect binding) and a one-use RelayState; 404 when the team has
    no SAML sign-in."""
    await limit_sign_in(call)
    location, relay = await sso_service(call).saml_start(
        call.params["teamId"], call.query.callback_url
    )
    response = web.Response(status=302, headers={"Location": location})
    # Binds the sign-in to this browser. The provider posts back from its own site, and
    # only a SameSite=None cookie rides along on a cross-site POST (it needs HTTPS).
    secure = auth.cookies_secure(call.request)
    response.set_cookie(
        SAML_STATE_COOKIE,
        relay,
        max_age=STATE_TTL_SECONDS,
        path=SAML_COOKIE_PATH,
        httponly=True,
        samesite="None" if secure else "Lax",
        secure=secure,
    )
    return response


@routes.post(
    "/auth/saml/{teamId}/acs",
    auth="public",
    status=303,
    errors=(401, 404, 413, 415, 429),
    response_headers=("Location", "Set-Cookie"),
    extra={"request_media": (FORM,)},
)
async def post_auth_saml_acs(call: Call):
    """The provider's answer (HTTP-POST binding): check the RelayState, verify the signed
    assertion, sign in with the session cookie and go to the callbackUrl given at the start."""
    await limit_sign_in(call)
    if call.request.content_type != FORM:
        raise UnsupportedMediaType(f"Content-Type must be {FORM}")
    raw = await read_body(call.request, MAX_ACS_BODY_MB)
    try:
        form = parse_qs(raw.decode("utf-8"), max_num_fields=10, strict_parsing=False)
    except (UnicodeDecodeError, ValueError) as exc:
        raise Unauthorized("Single sign-on was not completed at the identity provider") from exc
    encoded = (form.get("SAMLResponse") or [""])[0]
    if not encoded:
        raise Unauthorized("Single sign-on was not completed at the identity provider")
    signed_in, location = await sso_service(call).saml_finish(
        call.params["teamId"],
        encoded,
        (form.get("RelayState") or [None])[0],
        auth.request_cookie(call.request, SAML_STATE_COOKIE),
    )
    response = web.Response(status=303, headers={"Location": location})
    response.del_cookie(SAML_STATE_COOKIE, path=SAML_COOKIE_PATH)
    auth.set_session_cookie(call.request, response, signed_in.token)
    return response
