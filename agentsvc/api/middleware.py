"""The middleware: every error rendered as the envelope; CORS for the widget's endpoints."""

from __future__ import annotations

import asyncio
import logging
import time

from aiohttp import web

from agentsvc import keys
from agentsvc.api import auth
from agentsvc.api.state import RequestState
from agentsvc.errors import (
    ApiError,
    InternalError,
    MethodNotAllowed,
    NotFound,
    PayloadTooLarge,
    error_response,
)
from agentsvc.observability import add_request_id_header, observe, request_id

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


def add_cors_headers(request: web.Request, response: web.StreamResponse) -> None:
    """At response prepare: CORS headers on the widget's endpoints, streams included."""
    endpoint = _endpoint(request)
    if endpoint is not None and endpoint.cors:
        response.headers.update(CORS_HEADERS)


async def prepare_response(request: web.Request, response: web.StreamResponse) -> None:
    """on_response_prepare: every header the service adds, then the metrics.

    One signal handler rather than five: each costs a coroutine per response. Streams are
    covered too, since they are prepared before their first byte.
    """
    auth.add_rate_limit_headers(request, response)
    auth.refresh_session_cookie(request, response)
    add_cors_headers(request, response)
    add_request_id_header(request, response)
    observe(request, response)
