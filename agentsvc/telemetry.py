"""Traces: do-nothing hooks, made real when `[telemetry] otlp_endpoint` is set.

Hot code calls these in one line each. Unset, nothing of OpenTelemetry is imported: a
wrapper such as `tool_call(coro, ...)` hands its coroutine back untouched, `server_span()`
returns one shared object that does nothing, and `inject()` returns the headers as they are.
Set, `start()` loads `telemetry_otel` (the SDK, its batching exporter) and every hook records
through it; `stop()` sends what is queued, within the export timeout, and turns them off.
Inside a request that `sample_ratio` left out, the hooks make no spans either: a check of
the current span each.

The state is the process's, as OpenTelemetry's own context is: one app per process is
traced (`agentsvc serve` runs one; a test starts one traced app at a time).
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Awaitable, Callable, Mapping, MutableMapping
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from agentsvc.config import TelemetrySettings
    from agentsvc.telemetry_otel import Tracing

log = logging.getLogger(__name__)

T = TypeVar("T")
H = TypeVar("H", bound=MutableMapping[str, str])

_tracing: Tracing | None = None


class _NoSpan:
    """What `server_span()` yields when traces are off: every call does nothing."""

    __slots__ = ()

    def __enter__(self) -> _NoSpan:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def set(self, key: str, value: Any) -> None:
        """Set one attribute (nothing, here)."""

    def fail(self, error_type: str) -> None:
        """Mark the span as failed with a short error type (nothing, here)."""

    def answered(self, status: int) -> None:
        """Record an HTTP response's status (nothing, here)."""


NO_SPAN = _NoSpan()


def start(settings: TelemetrySettings) -> None:
    """Load the SDK and start exporting, when an endpoint is configured."""
    global _tracing
    if not settings.otlp_endpoint:
        return
    from agentsvc.telemetry_otel import Tracing

    _tracing = Tracing(settings)
    log.info("traces are sent to %s", settings.traces_url)


async def stop() -> None:
    """Send the queued spans (bounded by the export timeout) and turn the hooks off."""
    global _tracing
    tracing, _tracing = _tracing, None
    if tracing is not None:
        await asyncio.to_thread(tracing.shutdown)


def server_span(method: str, route: str | None, headers: Mapping[str, str]) -> Any:
    """The span of one HTTP request (its route's template as the name), to end with
    `answered(status)`; the endpoint wrapper and the catch-all route run in it."""
    tracing = _tracing
    return NO_SPAN if tracing is None else tracing.server_span(method, route, headers)


def inject(headers: H) -> H:
    """Add the W3C `traceparent` of the current span to outbound request headers."""
    tracing = _tracing
    if tracing is not None:
        tracing.inject(headers)
    return headers


def traced_model(model: T, kind: str, base_url: str = "") -> T:
    """A model provider whose every call is a GenAI `chat` span (the provider when off)."""
    tracing = _tracing
    return model if tracing is None else tracing.traced_model(model, kind, base_url)


def tool_call(run: Awaitable[T], call: Any, tool: Any) -> Awaitable[T]:
    """Run one tool call of a turn (`run` yields `(output, is_error, form)`) in an
    `execute_tool` span."""
    tracing = _tracing
    return run if tracing is None or tracing.sampled_out() else tracing.tool_call(run, call, tool)


def retrieval(run: Awaitable[T], agent_id: str, query: str, top_k: int) -> Awaitable[T]:
    """Run a knowledge retrieval (yielding passages) in a `retrieval` span."""
    tracing = _tracing
    if tracing is None or tracing.sampled_out():
        return run
    return tracing.retrieval(run, agent_id, query, top_k)


def delivery(run: Awaitable[T], kind: str, delivery_id: str, attempt: int) -> Awaitable[T]:
    """Run one delivery attempt (yielding its outcome) in a client span."""
    tracing = _tracing
    if tracing is None or tracing.sampled_out():
        return run
    return tracing.delivery(run, kind, delivery_id, attempt)


def traced(describe: Callable[[Any], tuple[str, dict[str, Any]]]) -> Callable[[T], T]:
    """Decorate a coroutine method to run in the span `describe(self)` names, when on."""

    def wrap(method: Any) -> Any:
        @functools.wraps(method)
        async def run(self: Any, *args: Any, **kwargs: Any) -> Any:
            tracing = _tracing
            if tracing is None or tracing.sampled_out():
                return await method(self, *args, **kwargs)
            name, attributes = describe(self)
            with tracing.span(name, attributes):
                return await method(self, *args, **kwargs)

        return run

    return wrap
