"""What every request goes through: its state, errors as the envelope, the service headers.

There is no aiohttp middleware and no `on_response_prepare` hook: each costs a coroutine
layer or a signal per request (aiohttp adds a layer of its own as soon as one middleware
exists), about 8 µs of the ~55 µs a small POST took. Instead the endpoint wrapper built by
`routing.make_handler` starts the state, turns exceptions into the envelope and calls
`finish_response`; a stream calls `finish_response` itself before its first byte; and a
catch-all route (`fallback`) answers what no endpoint matched: 404, 405 with `Allow`, and
CORS preflights.

With `[telemetry] otlp_endpoint` set, the same wrapper (and `fallback`) runs the request in
its span (`telemetry.server_span`): no middleware then either, which would cost its two
layers on every traced request; unset, the span is one shared object that does nothing.
"""

from __future__ import annotations

import asyncio
import logging
import time

from aiohttp import web

from agentsvc import telemetry
from agentsvc.api import app_keys, auth
from agentsvc.api.errors import (
    ApiError,
    InternalError,
    MethodNotAllowed,
    PayloadTooLarge,
    error_response,
)
from agentsvc.api.request_log import UNMATCHED_ROUTE, observe, request_id
from agentsvc.api.state import RequestState, request_state
from agentsvc.errors import DomainError, NotFound, Unauthorized

log = logging.getLogger(__name__)

# Browsers read the allowed methods and headers, and how long to cache them, from the
# preflight's answer only: other responses carry just the origin.
PREFLIGHT_HEADERS = {
    "Access-Control-Allow-Origin": "*",
    "Access-Control-Allow-Methods": "GET, POST, OPTIONS",
    "Access-Control-Allow-Headers": "Content-Type, Authorization, X-Session-Id, Last-Event-ID",
    "Access-Control-Max-Age": "86400",
}


def from_http_exception(exc: web.HTTPException) -> ApiError:
    """The envelope error for an HTTP error aiohttp raised (e.g. 413 from `request.read`)."""
    if exc.status == 404:
        return NotFound("No such endpoint")
    if exc.status == 405:
        allow = exc.headers.get("Allow", "")
        return MethodNotAllowed(f"Method not allowed; allowed: {allow}", headers={"Allow": allow})
    if exc.status == 413:
        return PayloadTooLarge()
    error = ApiError(exc.reason)
    error.status = exc.status
    error.code = exc.reason.upper().replace(" ", "_") if exc.reason else "ERROR"
    return error


def unexpected_error(request: web.Request) -> web.Response:
    """Log the exception being handled and answer with a masked 500."""
    log.exception(
        "unhandled error on %s %s (request %s)", request.method, request.path, request_id(request)
    )
    return error_response(InternalError())


def finish_response(
    request: web.Request, response: web.StreamResponse, state: RequestState | None = None
) -> None:
    """Add the service's headers and count the response; before it is prepared, once."""
    if state is None:
        state = request_state(request)
    headers = response.headers
    if state.rate_decision is not None:
        headers.update(state.rate_decision.headers())
    if state.session_refresh is not None:
        auth.refresh_session_cookie(request, response)
    if state.cors:
        headers["Access-Control-Allow-Origin"] = "*"
    headers["X-Request-Id"] = state.request_id or request_id(request, state)
    observe(request, state, response.status)


async def _allowed_methods(request: web.Request) -> set[str]:
    """The methods of the endpoints whose path matches the request's."""
    allowed: set[str] = set()
    for resource in request.app.router.resources():
        if resource.name != UNMATCHED_ROUTE:
            _, methods = await resource.resolve(request)
            allowed |= methods
    return allowed


async def _count_against_team(request: web.Request) -> None:
    """Take a request of a caller's team, when a credential is sent, as an endpoint would.

    Its answer then carries the rate-limit headers (or is a 429): an authenticated caller
    sees the same headers on a wrong path as on a right one, and probing unknown paths
    spends the team's budget. A credential that does not authenticate changes nothing: the
    path is unknown whoever asks.
    """
    headers = request.headers
    if "Authorization" not in headers and "Cookie" not in headers:
        return  # the usual 404: no lookup at all
    try:
        principal = await auth.authenticate(request)
    except Unauthorized:
        return
    if principal is not None:
        await auth.enforce_rate_limit(request, principal)


async def fallback(request: web.Request) -> web.Response:
    """The catch-all route: CORS preflights, then 405 for a known path, else 404."""
    # With traces on, a span named by the method alone (the path may be anything).
    with telemetry.server_span(request.method, None, request.headers) as span:
        request[app_keys.request_state_key] = RequestState(time.perf_counter())
        if request.method == "OPTIONS" and request.headers.get("Access-Control-Request-Method"):
            response = web.Response(status=204, headers=PREFLIGHT_HEADERS)
        else:
            try:
                await _count_against_team(request)
                allowed = await _allowed_methods(request)
                if allowed:
                    allow = ",".join(sorted(allowed))
                    raise MethodNotAllowed(
                        f"Method not allowed; allowed: {allow}", headers={"Allow": allow}
                    )
                raise NotFound("No such endpoint")
            except DomainError as exc:
                response = error_response(exc)
            except (asyncio.CancelledError, ConnectionResetError):
                raise
            except Exception:
                response = unexpected_error(request)
        finish_response(request, response)
        span.answered(response.status)
        return response


def add_fallback(app: web.Application) -> None:
    """Register the catch-all route; call it after every endpoint (it must resolve last)."""
    app.router.add_route("*", r"/{tail:[\s\S]*}", fallback, name=UNMATCHED_ROUTE)
