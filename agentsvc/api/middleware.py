"""The middleware: every error rendered as the envelope; CORS for the widget's endpoints."""

from __future__ import annotations

import asyncio
import logging
import time

from aiohttp import web

from agentsvc import keys
from agentsvc.api import auth
from agentsvc.api.state import RequestState, request_state
from agentsvc.errors import (
    ApiError,
    InternalError,
    MethodNotAllowed,
    NotFound,
    PayloadTooLarge,
    error_response,
)
from agentsvc.observability import observe, request_id

log = logging.getLogger("agentsvc.api")

CORS_HEADERS = {
    "Access-Control-Allow-Origin": "*",
    "Access-Control-Allow-Methods": "GET, POST, OPTIONS",
    "Access-Control-Allow-Headers": "Content-Type, Authorization, X-Session-Id",
    "Access-Control-Max-Age": "86400",
}


def _from_http_exception(exc: web.HTTPException) -> ApiError:
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


def _endpoint(request: web.Request):
    return getattr(request.match_info.handler, "endpoint", None)


@web.middleware
async def error_middleware(request: web.Request, handler) -> web.StreamResponse:
    """Answer every failure with the JSON error envelope; log and mask the unexpected.

    It also answers CORS preflights (one middleware rather than two: each costs a call per
    request on the hot path).
    """
    request[keys.request_state_key] = RequestState(time.perf_counter())
    if request.method == "OPTIONS" and request.headers.get("Access-Control-Request-Method"):
        return web.Response(status=204, headers=CORS_HEADERS)
    try:
        response = await handler(request)
    except ApiError as exc:
        response = error_response(exc)
    except web.HTTPException as exc:
        if exc.status < 400:
            raise
        response = error_response(_from_http_exception(exc))
    except (asyncio.CancelledError, ConnectionResetError):
        raise
    except Exception:
        log.exception(
            "unhandled error on %s %s (request %s)",
            request.method,
            request.path,
            request_id(request),
        )
        response = error_response(InternalError())
    return response


async def prepare_response(request: web.Request, response: web.StreamResponse) -> None:
    """on_response_prepare: every header the service adds, then the metrics.

    One signal handler reading the request's state once: it runs for every response
    (streams too, before their first byte), so it is kept to attribute reads.
    """
    state = request_state(request)
    headers = response.headers
    if state.rate_decision is not None:
        headers.update(state.rate_decision.headers())
    if state.session_refresh is not None:
        auth.refresh_session_cookie(request, response)
    endpoint = _endpoint(request)
    if endpoint is not None and endpoint.cors:
        headers.update(CORS_HEADERS)
    headers["X-Request-Id"] = state.request_id or request_id(request)
    observe(request, state.started, response.status)
