"""Request ids, structured access logs and Prometheus metrics."""

from __future__ import annotations

import itertools
import logging
import re
import secrets
import time
from collections.abc import Awaitable, Callable

import orjson
from aiohttp import web
from aiohttp.abc import AbstractAccessLogger
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_LATEST

request_id_request_key: web.RequestKey[str] = web.RequestKey("request_id")
started_request_key: web.RequestKey[float] = web.RequestKey("started")

_SAFE_REQUEST_ID = re.compile(r"^[A-Za-z0-9._:-]{1,128}$")
# A random process prefix and a counter: unique ids without a urandom syscall per request.
_ID_PREFIX = secrets.token_hex(4)
_id_counter = itertools.count(1)

access_log = logging.getLogger("agentsvc.access")


def request_id(request: web.Request) -> str:
    """Return the request's id: the caller's `X-Request-Id` when sane, else a new one."""
    rid = request.get(request_id_request_key)
    if rid is None:
        incoming = request.headers.get("X-Request-Id", "")
        rid = (
            incoming if _SAFE_REQUEST_ID.match(incoming) else f"{_ID_PREFIX}{next(_id_counter):08x}"
        )
        request[request_id_request_key] = rid
    return rid


def add_request_id_header(request: web.Request, response: web.StreamResponse) -> None:
    """At response prepare: echo the request id."""
    response.headers["X-Request-Id"] = request_id(request)


class JsonAccessLogger(AbstractAccessLogger):
    """One JSON object per request: time, id, method, route, status, duration, size."""

    def log(self, request: web.BaseRequest, response: web.StreamResponse, time: float) -> None:
        resource = request.match_info.route.resource if request.match_info.route else None
        record = {
            "requestId": request.get(request_id_request_key),
            "method": request.method,
            "path": request.path,  # the query string is left out: it may hold tokens
            "route": resource.canonical if resource else None,
            "status": response.status,
            "durationMs": round(time * 1000, 2),
            "bytes": response.body_length,
            "remote": request.remote,
        }
        self.logger.info(orjson.dumps(record).decode())

    @property
    def enabled(self) -> bool:
        return self.logger.isEnabledFor(logging.INFO)


Collector = Callable[[], Awaitable[None]]


class Metrics:
    """The app's Prometheus registry (one per app, so tests can build many apps)."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        self.requests = Counter(
            "agentsvc_http_requests_total",
            "HTTP requests answered",
            ["method", "route", "status"],
            registry=self.registry,
        )
        self.latency = Histogram(
            "agentsvc_http_request_duration_seconds",
            "Time to answer (streams: to the first byte)",
            ["route"],
            registry=self.registry,
            buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10),
        )
        self.open_streams = Gauge(
            "agentsvc_open_streams", "Chat streams open now", registry=self.registry
        )
        self.outbox_depth = Gauge(
            "agentsvc_outbox_depth", "Deliveries waiting to be sent", registry=self.registry
        )
        self.deliveries = Counter(
            "agentsvc_deliveries_total",
            "Webhook and post-action delivery attempts by outcome",
            ["kind", "outcome"],
            registry=self.registry,
        )
        self._collectors: list[Collector] = []
        # labels() resolves children through a lock and a dict each time; cache them.
        self._children: dict[tuple[str, str, str], tuple[Counter, Histogram]] = {}

    def observe_request(self, method: str, route: str, status: int, seconds: float) -> None:
        """Count one answered request and its latency."""
        key = (method, route, str(status))
        children = self._children.get(key)
        if children is None:
            children = (self.requests.labels(*key), self.latency.labels(route))
            self._children[key] = children
        children[0].inc()
        children[1].observe(seconds)

    def add_collector(self, collector: Collector) -> None:
        """Run `collector` before each scrape (e.g. to read the outbox depth)."""
        self._collectors.append(collector)

    async def render(self) -> bytes:
        """Run the collectors and return the exposition text."""
        for collector in self._collectors:
            await collector()
        return generate_latest(self.registry)


metrics_key: web.AppKey[Metrics] = web.AppKey("metrics")


def observe(request: web.Request, response: web.StreamResponse) -> None:
    """At response prepare: count the response and its latency under its route template."""
    metrics = request.app.get(metrics_key)
    started = request.get(started_request_key)
    if metrics is None or started is None:
        return
    route = request.match_info.route
    resource = route.resource if route else None
    name = resource.canonical if resource is not None else "unmatched"
    metrics.observe_request(request.method, name, response.status, time.perf_counter() - started)


CONTENT_TYPE = CONTENT_TYPE_LATEST
