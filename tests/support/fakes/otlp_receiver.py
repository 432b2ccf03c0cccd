"""A real OTLP/HTTP traces receiver on 127.0.0.1: `POST /v1/traces`, the protobuf decoded
with `opentelemetry-proto`'s ExportTraceServiceRequest into plain spans.

`hang=True` makes it a collector that accepts the connection and never answers.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web
from aiohttp.test_utils import TestServer

KINDS = {0: "unspecified", 1: "internal", 2: "server", 3: "client", 4: "producer", 5: "consumer"}


@dataclass
class ReceivedSpan:
    name: str
    trace_id: str
    span_id: str
    parent_span_id: str
    kind: str
    attributes: dict[str, Any]
    error: bool  # status code ERROR
    service: str


def _value(any_value) -> Any:
    """An OTLP AnyValue as Python."""
    which = any_value.WhichOneof("value")
    if which == "array_value":
        return [_value(v) for v in any_value.array_value.values]
    if which == "kvlist_value":
        return {kv.key: _value(kv.value) for kv in any_value.kvlist_value.values}
    return getattr(any_value, which) if which else None


def decode(body: bytes) -> list[ReceivedSpan]:
    """The spans of one export request."""
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceRequest,
    )

    request = ExportTraceServiceRequest()
    request.ParseFromString(body)
    spans = []
    for resource_spans in request.resource_spans:
        resource = {a.key: _value(a.value) for a in resource_spans.resource.attributes}
        for scope_spans in resource_spans.scope_spans:
            for span in scope_spans.spans:
                spans.append(
                    ReceivedSpan(
                        name=span.name,
                        trace_id=span.trace_id.hex(),
                        span_id=span.span_id.hex(),
                        parent_span_id=span.parent_span_id.hex(),
                        kind=KINDS.get(span.kind, str(span.kind)),
                        attributes={a.key: _value(a.value) for a in span.attributes},
                        error=span.status.code == 2,
                        service=resource.get("service.name", ""),
                    )
                )
    return spans


@dataclass
class OtlpReceiver:
    """Collects every span exported to it; `raw` keeps the request bodies as sent."""

    hang: bool = False
    spans: list[ReceivedSpan] = field(default_factory=list)
    raw: list[bytes] = field(default_factory=list)
    posts: int = 0
    content_types: set[str] = field(default_factory=set)
    server: TestServer | None = None

    @property
    def endpoint(self) -> str:
        assert self.server is not None
        return f"http://127.0.0.1:{self.server.port}"

    async def _traces(self, request: web.Request) -> web.Response:
        self.posts += 1
        if self.hang:
            await asyncio.sleep(3600)
        body = await request.read()
        self.content_types.add(request.content_type)
        self.raw.append(body)
        self.spans.extend(decode(body))
        return web.Response(body=b"", content_type="application/x-protobuf")

    async def start(self) -> OtlpReceiver:
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_post("/v1/traces", self._traces)
        self.server = TestServer(app, host="127.0.0.1")
        await self.server.start_server()
        return self

    async def close(self) -> None:
        if self.server is not None:
            await self.server.close()

    def named(self, name: str) -> list[ReceivedSpan]:
        return [s for s in self.spans if s.name == name]

    def one(self, name: str) -> ReceivedSpan:
        found = self.named(name)
        assert len(found) == 1, (name, [s.name for s in self.spans])
        return found[0]

    async def wait_for(self, *names: str, timeout: float = 10) -> None:
        """Wait until a span of each name has arrived."""
        deadline = time.monotonic() + timeout
        while not all(self.named(n) for n in names):
            if time.monotonic() > deadline:
                raise AssertionError(
                    f"spans {names} not all received: {[s.name for s in self.spans]}"
                )
            await asyncio.sleep(0.02)
