"""The process's log and its Prometheus metrics (what each request adds: api/request_log.py)."""

from __future__ import annotations

import logging
import sys
from bisect import bisect_left
from collections.abc import Awaitable, Callable
from typing import TextIO

from prometheus_client import CollectorRegistry, Counter, Gauge, generate_latest
from prometheus_client.core import CounterMetricFamily, HistogramMetricFamily
from prometheus_client.exposition import CONTENT_TYPE_LATEST
from prometheus_client.utils import floatToGoString

LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


class OwnLinesOnly(logging.Filter):
    """Below WARNING, only agentsvc's own lines: a library's INFO lines (the scheduler's
    every job run, the MCP SDK's every session, the HTTP client's every request) would
    bury them. A library's warnings and errors still pass."""

    def filter(self, record: logging.LogRecord) -> bool:
        name = record.name
        return record.levelno >= logging.WARNING or name == "agentsvc" or name[:9] == "agentsvc."


def configure_logging(level: str, stream: TextIO | None = None) -> None:
    """Log to stderr at `level` (AGENTSVC_LOG_LEVEL); at DEBUG, libraries' lines too."""
    logging.basicConfig(level=level, format=LOG_FORMAT, stream=stream or sys.stderr)
    root = logging.getLogger()
    if root.getEffectiveLevel() > logging.DEBUG:
        for handler in root.handlers:
            handler.addFilter(OwnLinesOnly())


Collector = Callable[[], Awaitable[None]]


LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10)


class RequestStats:
    """Per-request counts and latency histograms kept as plain numbers.

    prometheus_client's Counter and Histogram take a lock per update; on the hot path of
    every request that cost several microseconds, so these are tallied here (one event loop,
    no lock needed) and turned into metric families only when /metrics is scraped.
    """

    def __init__(self) -> None:
        self.counts: dict[tuple[str, str, int], int] = {}
        # route -> [bucket counts..., +Inf count], sum of seconds
        self.buckets: dict[str, list[int]] = {}
        self.sums: dict[str, float] = {}

    def add(self, method: str, route: str, status: int, seconds: float) -> None:
        key = (method, route, status)
        self.counts[key] = self.counts.get(key, 0) + 1
        counts = self.buckets.get(route)
        if counts is None:
            counts = self.buckets[route] = [0] * (len(LATENCY_BUCKETS) + 1)
            self.sums[route] = 0.0
        counts[bisect_left(LATENCY_BUCKETS, seconds)] += 1
        self.sums[route] += seconds

    def collect(self):
        """prometheus_client collector protocol."""
        requests = CounterMetricFamily(
            "agentsvc_http_requests", "HTTP requests answered", labels=["method", "route", "status"]
        )
        for (method, route, status), value in self.counts.items():
            requests.add_metric([method, route, str(status)], value)
        yield requests
        latency = HistogramMetricFamily(
            "agentsvc_http_request_duration_seconds",
            "Time to answer (streams: to the first byte)",
            labels=["route"],
        )
        for route, counts in self.buckets.items():
            cumulative, running = [], 0
            for bound, count in zip((*LATENCY_BUCKETS, float("inf")), counts, strict=True):
                running += count
                cumulative.append((floatToGoString(bound), running))
            latency.add_metric([route], cumulative, sum_value=self.sums[route])
        yield latency


class Metrics:
    """The app's Prometheus registry (one per app, so tests can build many apps)."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        self.request_stats = RequestStats()
        self.registry.register(self.request_stats)
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

    def add_collector(self, collector: Collector) -> None:
        """Run `collector` before each scrape (e.g. to read the outbox depth)."""
        self._collectors.append(collector)

    async def render(self) -> bytes:
        """Run the collectors and return the exposition text."""
        for collector in self._collectors:
            await collector()
        return generate_latest(self.registry)


CONTENT_TYPE = CONTENT_TYPE_LATEST
