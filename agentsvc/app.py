"""create_app(settings): the aiohttp application, its routes, and its life (runtime.py)."""

from __future__ import annotations

from functools import cache, lru_cache, partial

import orjson
from aiohttp import web

from agentsvc import runtime
from agentsvc.api import all_endpoints, app_keys
from agentsvc.api.bodies import BodySlots
from agentsvc.api.documents import knowledge_body_mb
from agentsvc.api.openapi import OpenApiDocument, build_document
from agentsvc.api.pipeline import add_fallback
from agentsvc.api.routing import make_handler
from agentsvc.config import Settings
from agentsvc.observability import Metrics


def create_app(settings: Settings) -> web.Application:
    """Build the application; resources open on startup and close on cleanup."""
    server = settings.server
    # aiohttp's own cap is the largest body any endpoint takes; endpoints check their own.
    max_mb = max(server.max_body_mb, server.submit_max_body_mb, knowledge_body_mb(settings))
    # No middleware and no response hook: see api/pipeline.py.
    app = web.Application(client_max_size=int(max_mb * 1024 * 1024))
    app[app_keys.settings_key] = settings
    app[app_keys.body_slots_key] = BodySlots(
        server.max_large_bodies, server.large_body_wait_seconds
    )
    app[app_keys.metrics_key] = Metrics()
    runtime.attach(app)

    for resource in _routes():
        app.router.register_resource(resource)
    app[app_keys.openapi_key] = OpenApiDocument(partial(_openapi_body, tuple(settings.providers)))
    return app


@cache
def _routes() -> tuple[web.AbstractResource, ...]:
    """Every endpoint's route and the catch-all, made once per process and shared by its
    applications (the wrappers keep each application's values apart): building them costs
    4 ms of CPU, which a process starting many applications (the tests) paid for each."""
    template = web.Application()
    for endpoint in all_endpoints():
        template.router.add_route(endpoint.method, endpoint.full_path, make_handler(endpoint))
    add_fallback(template)
    return tuple(template.router.resources())


@lru_cache(maxsize=8)
def _openapi_body(providers: tuple[str, ...]) -> bytes:
    """The OpenAPI document, which depends on the configured providers' names alone: built
    once per process (a third of a second of pydantic's schema generation), not per app."""
    return orjson.dumps(build_document(all_endpoints(), list(providers)))
