"""What one request carries between the middleware, authentication and the response hook."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from aiohttp import web

from agentsvc.api import app_keys

if TYPE_CHECKING:
    from agentsvc.observability import RequestStats
    from agentsvc.ratelimit import Decision
    from agentsvc.services.team.access import Principal


@dataclass(slots=True)
class RequestState:
    """Per-request values, in one object so the hot path reads attributes, not mapping app_keys."""

    started: float
    cors: bool = False  # answer with the CORS headers (the widget's endpoints)
    route: str | None = None  # the endpoint's path template, the metrics' route label
    stats: RequestStats | None = None  # where the response is counted (the app's)
    request_id: str | None = None
    principal: Principal | None = None
    rate_decision: Decision | None = None  # X-RateLimit-* headers to send
    session_refresh: str | None = None  # a session token whose expiry moved forward


def request_state(request: web.Request) -> RequestState:
    """The request's state, created by the endpoint wrapper (or here, for any other path)."""
    try:
        return request[app_keys.request_state_key]
    except KeyError:
        state = request[app_keys.request_state_key] = RequestState(time.perf_counter())
        return state
