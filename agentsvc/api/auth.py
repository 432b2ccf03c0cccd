"""Request authentication (API keys; cookie sessions later), team rate limits, origins."""

from __future__ import annotations

from aiohttp import web

from agentsvc import keys
from agentsvc.errors import RateLimited, Unauthorized
from agentsvc.services.access import Principal


def bearer_token(request: web.Request) -> str | None:
    """Return the token of an `Authorization: Bearer` header, if any."""
    header = request.headers.get("Authorization")
    if not header:
        return None
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise Unauthorized()
    return token.strip()


async def authenticate(request: web.Request) -> Principal | None:
    """Return the caller's principal, None when no credential was sent.

    A credential that was sent but is not valid is always a 401, even on endpoints
    where authentication is optional.
    """
    principal = request.get(keys.principal_request_key)
    if principal is not None:
        return principal
    token = bearer_token(request)
    if token is None:
        return None
    principal = await request.app[keys.key_resolver_key].resolve(token)
    if principal is None:
        raise Unauthorized()
    request[keys.principal_request_key] = principal
    return principal


def enforce_rate_limit(request: web.Request, principal: Principal) -> None:
    """Take a token from the team's bucket; 429 when its plan's rate is exhausted."""
    settings = request.app[keys.settings_key]
    per_minute = settings.plans.limits(principal.plan).requests_per_minute
    if per_minute is None:
        return
    decision = request.app[keys.rate_buckets_key].take(f"team:{principal.team_id}", per_minute)
    request[keys.rate_decision_request_key] = decision
    if not decision.allowed:
        raise RateLimited(
            f"Rate limit of {per_minute} requests per minute exceeded",
            headers={"Retry-After": str(decision.retry_after)},
        )


def check_origin(request: web.Request, principal: Principal) -> None:
    """Refuse state changes by cookie sessions from untrusted origins (API keys are exempt)."""
    # Cookie sessions arrive with the team-and-sessions work; API keys need no origin.
    return None


async def add_rate_limit_headers(request: web.Request, response: web.StreamResponse) -> None:
    """on_response_prepare: put X-RateLimit-* on every response of a rate-limited caller."""
    decision = request.get(keys.rate_decision_request_key)
    if decision is not None:
        response.headers.update(decision.headers())
