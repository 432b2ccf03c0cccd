"""What one request carries between the endpoint wrapper, authentication and the response,
and what every request needs from the application."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from aiohttp import web

from agentsvc.api import app_keys

if TYPE_CHECKING:
    from agentsvc.api.bodies import BodySlots
    from agentsvc.config import Settings
    from agentsvc.observability import Metrics, RequestStats
    from agentsvc.ratelimit import Decision, Limiter
    from agentsvc.services.health import HealthService
    from agentsvc.services.team.access import KeyResolver, Principal


@dataclass(frozen=True, slots=True)
class RequestDeps:
    """What every request needs from the application, under one key (built at start-up)."""

    settings: Settings
    limiter: Limiter
    keys: KeyResolver  # API keys and session tokens to principals
    metrics: Metrics
    body_slots: BodySlots  # the few large bodies held at once (see `api.bodies`)
    health: HealthService  # whether the database answers (`serving`)
    # Each endpoint's wrapper's values of this application, computed on its first request
    # (the wrappers are shared by every application of the process: `routing.make_handler`).
    bound: dict[Any, Any] = field(default_factory=dict)


def request_deps(request: web.Request) -> RequestDeps:
    """The application's `RequestDeps`."""
    return request.app[app_keys.request_deps_key]


@dataclass(slots=True)
class RequestState:
    """Per-request values, in one object so the hot path reads attributes, not mapping keys."""

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
