"""What each request leaves behind: its id, its access-log line and its metrics."""

from __future__ import annotations

import itertools
import logging
import re
import secrets
import time

import orjson
from aiohttp import web
from aiohttp.abc import AbstractAccessLogger

from agentsvc.api import app_keys
from agentsvc.api.state import RequestState, request_state

_SAFE_REQUEST_ID = re.compile(r"^[A-Za-z0-9._:-]{1,128}$")
# A random process prefix and a counter: unique ids without a urandom syscall per request.
_ID_PREFIX = secrets.token_hex(4)
_id_counter = itertools.count(1)

access_log = logging.getLogger("agentsvc.access")

# The name of the catch-all route (404, 405, preflights): one label for every unknown path.
UNMATCHED_ROUTE = "unmatched"


def route_template(request: web.BaseRequest) -> str | None:
    """The path template of the endpoint that answered, None when none did."""
    try:
        route = request.match_info.route
    except (AssertionError, AttributeError):
        # A request aiohttp's parser refused is answered before routing: no match info.
        return None
    resource = route.resource if route is not None else None
    if resource is None or resource.name == UNMATCHED_ROUTE:
        return None
    return resource.canonical


def request_id(request: web.Request, state: RequestState | None = None) -> str:
    """Return the request's id: the caller's `X-Request-Id` when sane, else a new one."""
    if state is None:
        state = request_state(request)
    if state.request_id is None:
        incoming = request.headers.get("X-Request-Id")
        if incoming is None or not _SAFE_REQUEST_ID.match(incoming):
            incoming = f"{_ID_PREFIX}{next(_id_counter):08x}"
        state.request_id = incoming
    return state.request_id


class JsonAccessLogger(AbstractAccessLogger):
    """One JSON object per request: time, id, method, route, status, duration, size."""

    def log(self, request: web.BaseRequest, response: web.StreamResponse, time: float) -> None:
        record = {
            "requestId": request_id(request),
            "method": request.method,
            "path": request.path,  # the query string is left out: it may hold tokens
            "route": route_template(request),
            "status": response.status,
            "durationMs": round(time * 1000, 2),
            "bytes": response.body_length,
            "remote": request.remote,
        }
        self.logger.info(orjson.dumps(record).decode())

    @property
    def enabled(self) -> bool:
        return self.logger.isEnabledFor(logging.INFO)


def observe(request: web.Request, state: RequestState, status: int) -> None:
    """Count a response and its latency under its route template."""
    stats = state.stats
    if stats is None:
        metrics = request.app.get(app_keys.metrics_key)
        if metrics is None:
            return
        stats = metrics.request_stats
    route = state.route or route_template(request) or UNMATCHED_ROUTE
    stats.add(request.method, route, status, time.perf_counter() - state.started)
