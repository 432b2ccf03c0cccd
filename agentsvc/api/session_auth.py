"""Session sign-in endpoints: e-mail and password, magic links, GitHub and Google, sign-out."""

from __future__ import annotations

from typing import Annotated, Literal

from aiohttp import web
from pydantic import Field
from pydantic.json_schema import SkipJsonSchema

from agentsvc.api import app_keys, auth
from agentsvc.api.limits import take_token
from agentsvc.api.models import QueryModel, RequestModel, ResponseModel
from agentsvc.api.routing import Call, RouteTable, envelope_response
from agentsvc.api.state import request_deps
from agentsvc.errors import Forbidden, Unauthorized
from agentsvc.input_types import CallbackUrl, Email, Password
from agentsvc.services.team.oauth import STATE_TTL_SECONDS
from agentsvc.services.team.service import SignInService
from agentsvc.services.team.sessions import SESSION_COOKIE, SignedIn, normalise_email

routes = RouteTable("auth")


def _sign_in(call: Call) -> SignInService:
    return call.app[app_keys.sign_in_key]


OAUTH_STATE_COOKIE = "agentsvc_oauth_state"


class SignInEmail(RequestModel):
    email: Email
    password: Password


class MagicLinkRequest(RequestModel):
    email: Email
    callback_url: CallbackUrl


class SwitchTeam(RequestModel):
    team_id: Annotated[str, Field(min_length=1, max_length=100)]


class TokenQuery(QueryModel):
    token: str = Field(min_length=1, max_length=200)


class OAuthStartQuery(QueryModel):
    callback_url: str = Field("/", min_length=1, max_length=2048)


class OAuthCallbackQuery(QueryModel):
    code: str | SkipJsonSchema[None] = Field(None, max_length=2048)
    state: str | SkipJsonSchema[None] = Field(None, max_length=200)
    error: str | SkipJsonSchema[None] = Field(None, max_length=200)


class UserOut(ResponseModel):
    id: str
    email: str
    name: str


class SignedInOut(ResponseModel):
    user: UserOut


class TeamRef(ResponseModel):
    id: str
    name: str
    role: str


class SessionTeam(TeamRef):
    plan: str


class SessionOut(ResponseModel):
    user: UserOut
    team: SessionTeam
    teams: list[TeamRef]
    authenticated_by: str


class Success(ResponseModel):
    success: bool


class Providers(ResponseModel):
    providers: list[str]
    mail_delivery: Literal["smtp", "log"] = Field(
        description="how sign-in links leave: by SMTP, or (no [smtp] host) into the server's"
        " log, where `agentsvc login-link` makes one too"
    )


async def limit_sign_in(call: Call, email: str | None = None) -> None:
    """Take a token per client IP (and per e-mail address); 429 with Retry-After beyond."""
    settings = request_deps(call.request).settings.auth
    message = "Too many sign-in attempts; try again later"
    await take_token(
        call.request, f"sign-in-ip:{call.request.remote}", settings.sign_in_per_minute_ip, message
    )
    if email is not None:
        bucket = f"sign-in-email:{normalise_email(email)}"
        await take_token(call.request, bucket, settings.sign_in_per_minute_email, message)


def user_json(user) -> dict:
    return {"id": user.id, "email": user.email, "name": user.name}


def signed_in_response(call: Call, signed_in: SignedIn, status: int = 200) -> web.Response:
    response = envelope_response({"user": user_json(signed_in.user)}, status=status)
    auth.set_session_cookie(call.request, response, signed_in.token)
    return response


def redirect(location: str, status: int = 303) -> web.Response:
    return web.Response(status=status, headers={"Location": location})


@routes.post(
    "/auth/sign-in/email",
    auth="public",
    body=SignInEmail,
    response=SignedInOut,
    envelope=True,
    errors=(401, 403, 429),
    response_headers=("Set-Cookie",),
)
async def post_sign_in_email(call: Call):
    """Sign in with e-mail and password; sets the `agentsvc_session` cookie."""
    body: SignInEmail = call.body
    auth.refuse_foreign_origin(call.request)
    await limit_sign_in(call, body.email)
    signed_in = await _sign_in(call).sign_in_with_password(body.email, body.password)
    return signed_in_response(call, signed_in)


@routes.post("/auth/sign-out", auth="optional", response=Success, envelope=True, errors=(403,))
async def post_sign_out(call: Call):
    """End the cookie session (if any) and clear its cookie."""
    token = auth.request_cookie(call.request, SESSION_COOKIE)
    if token:
        await _sign_in(call).sign_out(token)
    response = envelope_response({"success": True})
    auth.clear_session_cookie(response)
    return response


@routes.get("/auth/session", response=SessionOut, envelope=True)
async def get_session(call: Call):
    """Who is signed in: the user, the team acted in with its role, and the user's teams."""
    assert call.principal is not None
    return envelope_response(await _sign_in(call).session_info(call.principal))


@routes.post(
    "/auth/session/team", body=SwitchTeam, response=SessionOut, envelope=True, errors=(403, 404)
)
async def post_session_team(call: Call):
    """Make this cookie session act in another team the user belongs to."""
    assert call.principal is not None
    if call.principal.session_id is None:
        raise Forbidden(
            "Only a cookie session can switch teams; an API key acts for the team it was created in"
        )
    service = _sign_in(call)
    principal = await service.switch_team(call.principal, call.body.team_id)
    return envelope_response(await service.session_info(principal))


@routes.get("/auth/providers", auth="public", response=Providers, envelope=True)
async def get_providers(call: Call):
    """The external sign-in providers configured on this instance, and how mail leaves."""
    service = _sign_in(call)
    return envelope_response(
        {"providers": service.providers(), "mailDelivery": service.mail_delivery}
    )


@routes.post(
    "/auth/magic-link",
    auth="public",
    body=MagicLinkRequest,
    response=Success,
    envelope=True,
    errors=(403, 429),
)
async def post_magic_link(call: Call):
    """E-mail a single-use sign-in link (same answer whether or not the address has an account)."""
    body: MagicLinkRequest = call.body
    auth.refuse_foreign_origin(call.request)
    await limit_sign_in(call, body.email)
    await _sign_in(call).request_magic_link(body.email, body.callback_url)
    return envelope_response({"success": True})


@routes.get(
    "/auth/magic-link/verify",
    auth="public",
    query=TokenQuery,
    status=303,
    errors=(401, 429),
    response_headers=("Location", "Set-Cookie"),
)
async def get_magic_link_verify(call: Call):
    """Open a magic link: sign in with the session cookie and go to its callbackUrl."""
    await limit_sign_in(call)
    # Relative when on public_url's origin: a link opened at localhost stays there.
    signed_in, location = await _sign_in(call).use_magic_link(call.query.token)
    response = redirect(location)
    auth.set_session_cookie(call.request, response, signed_in.token)
    return response


async def _oauth_start(call: Call, provider: str) -> web.Response:
    await limit_sign_in(call)
    started = await _sign_in(call).start_oauth(provider, call.query.callback_url)
    response = redirect(started.authorize_url, status=302)
    # Binds the state to this browser: a callback carrying someone else's state fails.
    response.set_cookie(
        OAUTH_STATE_COOKIE,
        started.state,
        max_age=STATE_TTL_SECONDS,
        path="/api/v1/auth/callback/",
        httponly=True,
        samesite="Lax",
        secure=auth.cookies_secure(call.request),
    )
    return response


async def _oauth_callback(call: Call, provider: str) -> web.Response:
    query: OAuthCallbackQuery = call.query
    await limit_sign_in(call)
    service = _sign_in(call)
    service.check_provider(provider)
    if query.error or not query.code or not query.state:
        raise Unauthorized(f"Sign-in with {provider} was not completed")
    signed_in, callback = await service.finish_oauth(
        provider,
        code=query.code,
        state=query.state,
        browser_state=auth.request_cookie(call.request, OAUTH_STATE_COOKIE),
    )
    response = redirect(callback)
    response.del_cookie(OAUTH_STATE_COOKIE, path="/api/v1/auth/callback/")
    auth.set_session_cookie(call.request, response, signed_in.token)
    return response


_START = dict(
    auth="public",
    query=OAuthStartQuery,
    status=302,
    errors=(400, 404, 429),
    response_headers=("Location", "Set-Cookie"),
)
_CALLBACK = dict(
    auth="public",
    query=OAuthCallbackQuery,
    status=303,
    errors=(401, 404, 429),
    response_headers=("Location", "Set-Cookie"),
)


@routes.get("/auth/sign-in/github", **_START)
async def get_sign_in_github(call: Call):
    """Start signing in with GitHub (redirect with state and PKCE); 404 when not configured."""
    return await _oauth_start(call, "github")


@routes.get("/auth/sign-in/google", **_START)
async def get_sign_in_google(call: Call):
    """Start signing in with Google (redirect with state and PKCE); 404 when not configured."""
    return await _oauth_start(call, "google")


@routes.get("/auth/callback/github", **_CALLBACK)
async def get_callback_github(call: Call):
    """GitHub's redirect back: verify state and PKCE, sign in by verified e-mail."""
    return await _oauth_callback(call, "github")


@routes.get("/auth/callback/google", **_CALLBACK)
async def get_callback_google(call: Call):
    """Google's redirect back: verify state and PKCE, sign in by verified e-mail."""
    return await _oauth_callback(call, "google")
