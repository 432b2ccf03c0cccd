"""The span of each HTTP request, when traces are on (app.py adds it only then).

The one middleware of the app: unset, requests go through none (see api/pipeline.py).
"""

from __future__ import annotations

from aiohttp import web

from agentsvc import telemetry
from agentsvc.api.request_log import route_template


@web.middleware
async def trace_requests(request: web.Request, handler) -> web.StreamResponse:
    """Run the request in a server span named by its route's template, with its status."""
    with telemetry.server_span(request.method, route_template(request), request.headers) as span:
        response = await handler(request)
        span.set("http.response.status_code", response.status)
        if response.status >= 500:
            span.fail(str(response.status))
        return response
