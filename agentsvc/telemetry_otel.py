"""OpenTelemetry's SDK behind `agentsvc.telemetry`: imported only when traces are configured.

Spans follow the semantic conventions: HTTP server spans named by the route's template,
GenAI spans (`invoke_agent`, `chat`, `execute_tool`, `retrieval`) with the `gen_ai.*`
attributes, and a client span per delivery attempt. People's words (messages, prompts,
tool inputs and outputs, the question retrieved for) are recorded only with
`capture_content`; an exception's text never is, only its type.

Spans are batched by the SDK's `BatchSpanProcessor` and sent by its OTLP/HTTP exporter from
the processor's own thread: a request only appends its spans to a bounded queue. A
collector that is down or slow costs the export thread its timeout, the queue overflows and
spans are dropped, told in words once per `warning_interval_seconds` (telemetry_export.py).
"""

from __future__ import annotations

import asyncio
import contextvars
import threading
from collections.abc import AsyncIterator, Awaitable, Mapping, MutableMapping
from typing import Any
from urllib.parse import urlsplit

import orjson
from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import SpanLimits, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from opentelemetry.sdk.trace.sampling import ALWAYS_ON, TraceIdRatioBased
from opentelemetry.trace import Span, SpanKind, StatusCode
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from agentsvc import __version__
from agentsvc.config import TelemetrySettings
from agentsvc.telemetry_export import QuietExporter, quiet_the_sdk

# Longest text attribute (captured content): longer values are cut by the SDK.
MAX_ATTRIBUTE_CHARS = 16_384
BATCH_SPANS = 512

OPERATION = "gen_ai.operation.name"
PROVIDER = "gen_ai.provider.name"
CONVERSATION = "gen_ai.conversation.id"
ERROR_TYPE = "error.type"
BUILTIN_PROVIDER = "agentsvc.builtin"  # the in-process model: a custom provider value

# The providers' stop reasons (normalised by llm/) as the conventions name them.
FINISH_REASONS = {"end_turn": "stop", "tool_use": "tool_call", "max_tokens": "length"}

# The conversation of the turn being traced, for the model calls made inside it.
_conversation: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "agentsvc_traced_conversation", default=None
)


def error_type(exc: BaseException) -> str:
    """A short, fixed name for what went wrong: a provider's code, else the class name
    (never the exception's message, which may quote people)."""
    if isinstance(exc, GeneratorExit | asyncio.CancelledError):
        return "cancelled"
    code = getattr(exc, "code", None)
    return code if isinstance(code, str) and code else type(exc).__name__


def content_json(value: Any) -> str:
    """A captured value as the JSON text the conventions allow on span attributes."""
    return orjson.dumps(value, default=str).decode()


class Handle:
    """The span a `with` block works on: `set` an attribute, `fail` with an error type."""

    __slots__ = ("span",)

    def __init__(self, span: Span):
        self.span = span

    def set(self, key: str, value: Any) -> None:
        """Set one attribute."""
        self.span.set_attribute(key, value)

    def fail(self, kind: str) -> None:
        """Mark the span as failed: `error.type` and an error status, no message."""
        self.span.set_attribute(ERROR_TYPE, kind)
        self.span.set_status(StatusCode.ERROR)

    def answered(self, status: int) -> None:
        """An HTTP server span's response status; a 5xx marks it failed."""
        self.span.set_attribute("http.response.status_code", status)
        if status >= 500:
            self.fail(str(status))


class Scope(Handle):
    """A started span, current for a `with` block; an exception marks it failed with its
    type. A plain class rather than `contextlib.contextmanager`: its generator and wrapper
    cost about 1.5 µs of CPU a span more."""

    __slots__ = ("_parent", "_conversation", "_token", "_marked")

    def __init__(self, span: Span, parent: otel_context.Context | None, conversation: Any):
        super().__init__(span)
        self._parent = parent
        self._conversation = conversation
        self._token: object = None
        self._marked: contextvars.Token[str | None] | None = None

    def __enter__(self) -> Scope:
        self._token = otel_context.attach(trace.set_span_in_context(self.span, self._parent))
        if self._conversation:
            self._marked = _conversation.set(self._conversation)
        return self

    def __exit__(self, kind: object, exc: BaseException | None, traceback: object) -> None:
        if exc is not None and not getattr(exc, "not_a_failure", False):
            self.fail(error_type(exc))
        if self._marked is not None:
            _conversation.reset(self._marked)
        otel_context.detach(self._token)  # type: ignore[arg-type]
        self.span.end()


class _Resource(Resource):
    """The service's resource, hashed once: the exporter looks every span's resource up
    in a dict, and the SDK's hash writes the attributes out as JSON each time (about 2 µs
    of the export thread's CPU a span). A resource never changes after it is made."""

    def __init__(self, attributes: dict[str, str]):
        super().__init__(attributes)
        self._hash = super().__hash__()

    def __hash__(self) -> int:
        return self._hash


class Tracing:
    """The tracer provider, its batch processor and exporter, and the span helpers."""

    def __init__(self, settings: TelemetrySettings):
        quiet_the_sdk()
        self.capture_content = settings.capture_content
        self._timeout = settings.export_timeout_seconds
        # Every setting is given: nothing is read from OTEL_* variables behind the
        # configuration's back (sampling, limits, resource).
        self.provider = TracerProvider(
            resource=_Resource(
                {"service.name": settings.service_name, "service.version": __version__}
            ),
            sampler=ALWAYS_ON
            if settings.sample_ratio >= 1
            else TraceIdRatioBased(settings.sample_ratio),
            span_limits=SpanLimits(max_attribute_length=MAX_ATTRIBUTE_CHARS),
        )
        self._exporter = QuietExporter(settings)
        self.processor = BatchSpanProcessor(
            self._exporter,
            max_queue_size=settings.max_queue_spans,
            schedule_delay_millis=settings.export_interval_seconds * 1000,
            max_export_batch_size=min(BATCH_SPANS, settings.max_queue_spans),
            export_timeout_millis=settings.export_timeout_seconds * 1000,
        )
        self.provider.add_span_processor(self.processor)
        self.tracer = self.provider.get_tracer("agentsvc", __version__)
        self.propagator = TraceContextTextMapPropagator()

    def shutdown(self) -> None:
        """Send what is queued, giving up after about the export timeout: a collector
        that hangs must not hold the process's stop (the SDK would wait 30 s and more)."""
        self._exporter.stop_after(self._timeout)
        closing = threading.Thread(target=self.provider.shutdown, daemon=True)
        closing.start()
        closing.join(self._timeout + 1)

    # -- spans ---------------------------------------------------------------------------

    def span(
        self,
        name: str,
        attributes: dict[str, Any] | None = None,
        kind: SpanKind = SpanKind.INTERNAL,
        parent: otel_context.Context | None = None,
    ) -> Scope:
        """A span, current for the `with` block; an exception marks it failed with its type."""
        span = self.tracer.start_span(
            name,
            context=parent,
            kind=kind,
            attributes=attributes,
            record_exception=False,
            set_status_on_exception=False,
        )
        return Scope(span, parent, attributes.get(CONVERSATION) if attributes else None)

    def server_span(self, method: str, route: str | None, headers: Mapping[str, str]) -> Scope:
        """An HTTP server span named `METHOD /route/{template}`, continuing the caller's
        trace when it sent a `traceparent`. The path, query and headers are not recorded."""
        attributes: dict[str, Any] = {"http.request.method": method}
        if route is not None:
            attributes["http.route"] = route
        parent = self.propagator.extract(headers) if "traceparent" in headers else None
        name = f"{method} {route}" if route is not None else method
        return self.span(name, attributes, SpanKind.SERVER, parent)

    def sampled_out(self) -> bool:
        """Whether the current trace was left out by sampling: its spans would record
        nothing, so the hooks make none (a span outside any trace is the sampler's call)."""
        span = trace.get_current_span()
        return not span.is_recording() and span.get_span_context().is_valid

    def inject(self, headers: MutableMapping[str, str]) -> None:
        """Write the current span's `traceparent` into the headers."""
        self.propagator.inject(headers)

    # -- GenAI -----------------------------------------------------------------------------

    def traced_model(self, model: Any, kind: str, base_url: str) -> TracedModel:
        """Wrap a model provider; `kind` is the configured protocol or `builtin`."""
        return TracedModel(self, model, kind, base_url)

    async def tool_call(self, run: Awaitable[Any], call: Any, tool: Any) -> Any:
        """An `execute_tool` span around one tool call of a turn."""
        attributes: dict[str, Any] = {
            OPERATION: "execute_tool",
            "gen_ai.tool.name": call.name,
            "gen_ai.tool.call.id": call.id,
            # Run by the service against an outside API (HTTP, MCP), or shown (a form).
            "gen_ai.tool.type": "extension",
        }
        if tool is not None:
            attributes["agentsvc.tool.execution_type"] = tool.execution_type
        if self.capture_content:
            attributes["gen_ai.tool.call.arguments"] = content_json(
                call.input if call.input is not None else call.raw_arguments
            )
        with self.span(f"execute_tool {call.name}", attributes) as span:
            result = await run
            output, is_error = result[0], result[1]
            if is_error:
                span.fail("tool_error")
            if self.capture_content:
                span.set("gen_ai.tool.call.result", content_json(output))
            return result

    async def retrieval(self, run: Awaitable[Any], agent_id: str, query: str, top_k: int) -> Any:
        """A `retrieval` span around a search of an agent's knowledge."""
        attributes: dict[str, Any] = {
            OPERATION: "retrieval",
            "gen_ai.data_source.id": agent_id,
            "gen_ai.request.top_k": float(top_k),
        }
        if self.capture_content:
            attributes["gen_ai.retrieval.query.text"] = query
        with self.span(f"retrieval {agent_id}", attributes) as span:
            passages = await run
            span.set("agentsvc.retrieval.passages", len(passages))
            if self.capture_content:
                documents = [{"id": p.document_id, "score": p.score} for p in passages]
                span.set("gen_ai.retrieval.documents", content_json(documents))
            return passages

    async def delivery(self, run: Awaitable[Any], kind: str, delivery_id: str, attempt: int) -> Any:
        """A client span around one delivery attempt (a webhook, a post action, a reply)."""
        attributes = {
            "agentsvc.delivery.kind": kind,
            "agentsvc.delivery.id": delivery_id,
            "agentsvc.delivery.attempt": attempt,
        }
        with self.span(f"deliver {kind}", attributes, SpanKind.CLIENT) as span:
            outcome = await run
            status = getattr(outcome, "status_code", None)
            if status is not None:
                span.set("http.response.status_code", status)
            if not getattr(outcome, "success", True):
                span.fail(str(status) if status is not None else "delivery_failed")
            return outcome


class TracedModel:
    """A model provider whose every call is a GenAI `chat` span: model, provider, tokens
    and finish reasons; the messages only with `capture_content`."""

    def __init__(self, tracing: Tracing, inner: Any, kind: str, base_url: str):
        self._tracing = tracing
        self._inner = inner
        self._fixed: dict[str, Any] = {
            OPERATION: "chat",
            PROVIDER: BUILTIN_PROVIDER if kind == "builtin" else kind,
        }
        self._kind = SpanKind.INTERNAL if kind == "builtin" else SpanKind.CLIENT
        if base_url:
            parts = urlsplit(base_url)
            self._fixed["server.address"] = parts.hostname or ""
            self._fixed["server.port"] = parts.port or (443 if parts.scheme == "https" else 80)

    def stream(self, request: Any) -> AsyncIterator[Any]:
        if self._tracing.sampled_out():
            return self._inner.stream(request)
        return self._stream(request)

    def _start(self, request: Any) -> Span:
        attributes = {
            **self._fixed,
            "gen_ai.request.model": request.model,
            "gen_ai.request.temperature": round(max(0.0, min(100.0, request.temperature)) / 100, 4),
        }
        conversation = _conversation.get()
        if conversation:
            attributes[CONVERSATION] = conversation
        if self._tracing.capture_content:
            attributes["gen_ai.system_instructions"] = content_json(
                [{"type": "text", "content": request.system}]
            )
            attributes["gen_ai.input.messages"] = content_json(
                [_message_json(m) for m in request.messages]
            )
        return self._tracing.tracer.start_span(
            f"chat {request.model}",
            kind=self._kind,
            attributes=attributes,
            record_exception=False,
            set_status_on_exception=False,
        )

    async def _stream(self, request: Any) -> AsyncIterator[Any]:
        span = self._start(request)
        seen = _Seen()
        try:
            async for event in self._inner.stream(request):
                seen.add(event)
                yield event
        except BaseException as exc:
            if not getattr(exc, "not_a_failure", False):
                Handle(span).fail(error_type(exc))
            raise
        finally:
            seen.record(span, self._tracing.capture_content)
            span.end()


class _Seen:
    """What a model call streamed: its usage, stop reasons, and (captured) its output."""

    __slots__ = ("input_tokens", "output_tokens", "reasons", "texts", "calls")

    def __init__(self) -> None:
        self.input_tokens: int | None = None
        self.output_tokens: int | None = None
        self.reasons: list[str] = []
        self.texts: list[str] = []
        self.calls: list[dict[str, Any]] = []

    def add(self, event: Any) -> None:
        name = type(event).__name__
        if name == "TextDelta":
            self.texts.append(event.text)
        elif name == "Usage":
            if event.input_tokens is not None:
                self.input_tokens = (self.input_tokens or 0) + event.input_tokens
            if event.output_tokens is not None:
                self.output_tokens = (self.output_tokens or 0) + event.output_tokens
        elif name == "Stop":
            self.reasons.append(FINISH_REASONS.get(event.reason, event.reason))
        elif name == "ToolCall":
            arguments = event.input if event.input is not None else event.raw_arguments
            self.calls.append(
                {"type": "tool_call", "id": event.id, "name": event.name, "arguments": arguments}
            )

    def record(self, span: Span, capture: bool) -> None:
        attributes: dict[str, Any] = {}
        if self.input_tokens is not None:
            attributes["gen_ai.usage.input_tokens"] = self.input_tokens
        if self.output_tokens is not None:
            attributes["gen_ai.usage.output_tokens"] = self.output_tokens
        if self.reasons:
            attributes["gen_ai.response.finish_reasons"] = self.reasons
        if capture:
            parts: list[dict[str, Any]] = []
            if self.texts:
                parts.append({"type": "text", "content": "".join(self.texts)})
            parts += self.calls
            message = {"role": "assistant", "parts": parts}
            if self.reasons:
                message["finish_reason"] = self.reasons[-1]
            attributes["gen_ai.output.messages"] = content_json([message])
        span.set_attributes(attributes)  # one call: the SDK takes its lock once


def _message_json(message: Any) -> dict[str, Any]:
    """A context message in the conventions' input message shape."""
    if message.role == "tool":
        part = {"type": "tool_call_response", "id": message.tool_use_id, "result": message.content}
        return {"role": "tool", "parts": [part]}
    parts: list[dict[str, Any]] = []
    if message.content:
        parts.append({"type": "text", "content": message.content})
    for call in message.tool_calls:
        arguments = call.input if call.input is not None else call.raw_arguments
        parts.append(
            {"type": "tool_call", "id": call.id, "name": call.name, "arguments": arguments}
        )
    return {"role": message.role, "parts": parts}
