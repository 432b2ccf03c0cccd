"""Health check and the OpenAPI document."""

from __future__ import annotations

from aiohttp import web

from agentsvc.api import app_keys
from agentsvc.api.errors import ServerBusy
from agentsvc.api.models import ResponseModel
from agentsvc.api.routing import Call, RouteTable, json_response
from agentsvc.api.state import request_deps
from agentsvc.errors import NotFound
from agentsvc.observability import CONTENT_TYPE
from agentsvc.services.health import HealthService

routes = RouteTable("system")


def _health(call: Call) -> HealthService:
    return call.app[app_keys.health_key]


class Health(ResponseModel):
    status: str


@routes.get("/healthz", auth="public", response=Health, below_api=False)
async def get_healthz(call: Call):
    """Report that the service is up."""
    return json_response({"status": "ok"})


@routes.get("/readyz", auth="public", response=Health, below_api=False, errors=(503,))
async def get_readyz(call: Call):
    """Report that the service can serve: its database answers (for load balancers)."""
    if not await _health(call).ready():
        raise ServerBusy("The database does not answer; try another instance")
    return json_response({"status": "ok"})


@routes.get("/metrics", auth="public", below_api=False, media_type="text/plain", errors=(404,))
async def get_metrics(call: Call):
    """Prometheus metrics: requests, latencies, open streams, outbox depth, deliveries."""
    deps = request_deps(call.request)
    if not deps.settings.server.metrics:
        raise NotFound("Metrics are disabled ([server] metrics = false)")
    body = await deps.metrics.render()
    return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE})


@routes.get("/openapi.json", auth="public", response=dict, cors=True)
async def get_openapi(call: Call):
    """The OpenAPI 3.1 document of every endpoint."""
    body = await call.app[app_keys.openapi_key].body()
    return web.Response(body=body, content_type="application/json")
