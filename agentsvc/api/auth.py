"""Request authentication (API keys, cookie sessions), team rate limits, trusted origins."""

from __future__ import annotations

from aiohttp import web

from agentsvc.api.limits import take_token
from agentsvc.api.state import request_deps, request_state
from agentsvc.errors import Forbidden, Unauthorized
from agentsvc.services.team.access import Principal
from agentsvc.services.team.sessions import SESSION_COOKIE
from agentsvc.services.team.trust import is_trusted_origin, untrusted_origin_message

# Longer than any token we issue: not worth a lookup.
_MAX_COOKIE_LENGTH = 128


SEND_KEY = "send it as 'Authorization: Bearer YOUR_KEY'"
NOT_BEARER = f"The Authorization header must start with 'Bearer ': {SEND_KEY}"
NO_TOKEN = f"The Authorization header has no key after 'Bearer ': {SEND_KEY}"
X_API_KEY = (
    f"This API does not read the X-API-Key header: {SEND_KEY} (an API key, or sign in"
    " for a session)"
)
NO_CREDENTIAL = f"No API key or session: {SEND_KEY} (or sign in for a session)"


def bearer_token(request: web.Request) -> str | None:
    """Return the token of an `Authorization: Bearer` header, if any."""
    header = request.headers.get("Authorization")
    if not header:
        return None
    scheme, _, token = header.strip().partition(" ")
    if scheme.lower() != "bearer":
        raise Unauthorized(NOT_BEARER)
    if not token.strip():
        raise Unauthorized(NO_TOKEN)
    return token.strip()


def missing_credential(request: web.Request) -> Unauthorized:
    """The 401 of a request that sent no credential: what to send instead (a key sent in
    X-API-Key is named, since it looks like a key that was refused)."""
    if "X-API-Key" in request.headers:
        return Unauthorized(X_API_KEY)
    return Unauthorized(NO_CREDENTIAL)


async def authenticate(request: web.Request) -> Principal | None:
    """Return the caller's principal, None when no credential was sent.

    A Bearer key wins over the session cookie. A key that was sent but is not valid is
    always a 401, even where authentication is optional; a stale session cookie counts as
    no credential (browsers keep sending it), so required endpoints still answer 401.
    """
    state = request_state(request)
    if state.principal is not None:
        return state.principal
    token = bearer_token(request)
    if token is None:
        return await _session_principal(request)
    principal = await request_deps(request).keys.resolve(token)
    if principal is None:
        raise Unauthorized()
    state.principal = principal
    return principal


def request_cookie(request: web.Request, name: str) -> str | None:
    """One cookie's value from the `Cookie` header (surrounding double quotes removed).

    aiohttp's `request.cookies` builds a Morsel for every cookie the browser sends, ~12 µs
    on each cookie-authenticated request; the tokens we issue need no RFC 6265 unescaping.
    """
    header = request.headers.get("Cookie")
    if not header or name not in header:
        return None
    for pair in header.split(";"):
        key, sep, value = pair.partition("=")
        if sep and key.strip() == name:
            value = value.strip()
            if len(value) >= 2 and value[0] == value[-1] == '"':
                value = value[1:-1]
            return value
    return None


async def _session_principal(request: web.Request) -> Principal | None:
    cookie = request_cookie(request, SESSION_COOKIE)
    if not cookie or len(cookie) > _MAX_COOKIE_LENGTH:
        return None
    deps = request_deps(request)
    ttl = deps.settings.auth.session_ttl_seconds
    principal, extended = await deps.keys.resolve_session(cookie, ttl)
    if principal is None:
        return None
    state = request_state(request)
    if extended:
        state.session_refresh = cookie
    state.principal = principal
    return principal


async def enforce_rate_limit(request: web.Request, principal: Principal) -> None:
    """Take a token from the team's bucket; 429 when its plan's rate is exhausted."""
    settings = request_deps(request).settings
    per_minute = settings.plans.limits(principal.plan).requests_per_minute
    if per_minute is None:
        return
    await take_token(
        request,
        f"team:{principal.team_id}",
        per_minute,
        f"Rate limit of {per_minute} requests per minute exceeded",
        report=True,
    )


def check_origin(request: web.Request, principal: Principal) -> None:
    """Refuse state changes by cookie sessions from untrusted origins (API keys are exempt).

    Browsers attach the cookie to cross-site requests too; a key is never sent by a browser
    on its own, so only session callers must show an Origin (or Referer) we trust.
    """
    if principal.session_id is None:
        return
    origin = request.headers.get("Origin") or request.headers.get("Referer")
    settings = request_deps(request).settings
    if not is_trusted_origin(settings, origin):
        raise Forbidden(untrusted_origin_message(settings, origin))


def refuse_foreign_origin(request: web.Request) -> None:
    """On sign-in endpoints: a browser's Origin, when sent, must be trusted (login CSRF)."""
    origin = request.headers.get("Origin")
    settings = request_deps(request).settings
    if origin is not None and not is_trusted_origin(settings, origin):
        raise Forbidden(untrusted_origin_message(settings, origin))


def set_session_cookie(request: web.Request, response: web.StreamResponse, token: str) -> None:
    """Put the session cookie on a response: HttpOnly, SameSite=Lax, Secure behind HTTPS."""
    settings = request_deps(request).settings
    response.set_cookie(
        SESSION_COOKIE,
        token,
        max_age=int(settings.auth.session_ttl_seconds),
        path="/",
        httponly=True,
        samesite="Lax",
        secure=cookies_secure(request),
    )


def cookies_secure(request: web.Request) -> bool:
    """Whether the cookies we set are `Secure`: public_url is HTTPS, or this request came so."""
    public_url = request_deps(request).settings.server.public_url
    return public_url.startswith("https://") or request.secure


def clear_session_cookie(response: web.StreamResponse) -> None:
    """Tell the browser to forget the session cookie."""
    response.del_cookie(SESSION_COOKIE, path="/")


def refresh_session_cookie(request: web.Request, response: web.StreamResponse) -> None:
    """Before a response is prepared: send the cookie again when its session's expiry moved
    forward (unless the handler set or cleared it itself)."""
    token = request_state(request).session_refresh
    if token is None or SESSION_COOKIE in response.cookies:
        return
    set_session_cookie(request, response, token)
