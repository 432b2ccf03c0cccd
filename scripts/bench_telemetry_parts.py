"""Where the CPU of traces goes, per chat turn, measured in this process apart from a server.

`bench_telemetry.py` measures the whole (a server's CPU per turn, off against on); this
splits it into its parts, each with the CPU clock of the thread that pays it:

- on the event loop: one turn's hooks, as the service calls them (the request's span, the
  turn's `invoke_agent`, the retrieval, the model call over a model that streams two
  pieces and its usage), against the same turn with traces off, and the same with the
  turn left out by sampling (`sample_ratio = 0`);
- in the exporting thread: encoding the spans to protobuf (the SDK's OTLP encoder), and
  the HTTP POST of a batch to a local OTLP/HTTP receiver (the SDK's exporter, through
  `QuietExporter`).

    python scripts/bench_telemetry_parts.py [--turns 20000] [--runs 3]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import threading
import time
from pathlib import Path

from multidict import CIMultiDict, CIMultiDictProxy

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from agentsvc import telemetry  # noqa: E402
from agentsvc.config import TelemetrySettings  # noqa: E402
from agentsvc.llm.base import Stop, TextDelta, Usage  # noqa: E402
from scripts.bench_telemetry import Collector  # noqa: E402

SPANS_PER_TURN = 4
AGENT = "agt_0123456789abcdef"
HEADERS = CIMultiDictProxy(
    CIMultiDict({"Host": "shop", "Content-Type": "application/json", "Authorization": "Bearer k"})
)


class Model:
    """A model that answers at once: two pieces of text, its usage, its stop."""

    async def stream(self, request):
        for event in (TextDelta("We open "), TextDelta("at nine."), Usage(12, 4), Stop("end_turn")):
            yield event


class Request:
    model = "builtin"
    temperature = 70
    system = ""
    messages: list = []


class Passage:
    document_id = "doc_1"
    score = 1.0


async def search() -> list[Passage]:
    return [Passage()]


class Turn:
    """The service's turn as the hooks see it: `invoke_agent` around retrieval and a model call."""

    def __init__(self, model) -> None:
        self.model = model

    @telemetry.traced(
        lambda turn: (
            "invoke_agent Shop",
            {
                "gen_ai.operation.name": "invoke_agent",
                "gen_ai.provider.name": "agentsvc.builtin",
                "gen_ai.agent.id": AGENT,
                "gen_ai.agent.name": "Shop",
                "gen_ai.conversation.id": "cnv_0123456789abcdef",
                "gen_ai.request.model": "builtin",
                "agentsvc.channel": "api",
            },
        )
    )
    async def run(self) -> None:
        await telemetry.retrieval(search(), AGENT, "When do you open?", 5)
        async for _event in self.model.stream(Request()):
            pass


async def turns(count: int) -> float:
    """CPU µs of this thread per turn, over `count` turns (after a warm-up)."""
    turn = Turn(telemetry.traced_model(Model(), "builtin"))

    async def one() -> None:
        with telemetry.server_span("POST", "/api/v1/chat", HEADERS) as span:
            await turn.run()
            span.answered(200)

    for _ in range(1000):
        await one()
    started = time.thread_time()
    for _ in range(count):
        await one()
    return (time.thread_time() - started) / count * 1e6


def on_the_loop(endpoint: str, sample_ratio: float | None, count: int) -> float:
    """One turn's hooks: off (`sample_ratio` None) or on at that ratio."""
    if sample_ratio is not None:
        # Batches of 512 go to the receiver from the SDK's thread, not counted here.
        telemetry.start(TelemetrySettings(otlp_endpoint=endpoint, sample_ratio=sample_ratio))
    try:
        return asyncio.run(turns(count))
    finally:
        asyncio.run(telemetry.stop())


def recorded_spans(endpoint: str, count: int) -> list:
    """`count` spans of real turns, as the exporter receives them."""
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult

    class Keep(SpanExporter):
        def __init__(self) -> None:
            self.spans: list = []

        def export(self, spans):
            self.spans.extend(spans)
            return SpanExportResult.SUCCESS

    keep = Keep()
    telemetry.start(TelemetrySettings(otlp_endpoint=endpoint))
    telemetry._tracing.provider.add_span_processor(SimpleSpanProcessor(keep))  # noqa: SLF001
    try:
        asyncio.run(turns(count // SPANS_PER_TURN))
    finally:
        asyncio.run(telemetry.stop())
    return keep.spans[-count:]


def exporting(endpoint: str, batch: int, rounds: int) -> tuple[float, float]:
    """CPU µs per span of encoding, and of the exporter's whole export (POST included)."""
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

    from agentsvc.telemetry_export import QuietExporter

    spans = recorded_spans(endpoint, batch)
    exporter = QuietExporter(TelemetrySettings(otlp_endpoint=endpoint))
    exporter.export(spans)
    started = time.thread_time()
    for _ in range(rounds):
        encode_spans(spans).SerializeToString()
    encode = (time.thread_time() - started) / rounds / batch * 1e6
    started = time.thread_time()
    for _ in range(rounds):
        exporter.export(spans)
    export = (time.thread_time() - started) / rounds / batch * 1e6
    exporter.shutdown()
    return encode, export


def receiver() -> str:
    """A local OTLP/HTTP receiver on a thread of its own; its endpoint."""
    loop = asyncio.new_event_loop()
    collector = Collector()
    ready = threading.Event()

    def serve() -> None:
        asyncio.set_event_loop(loop)
        loop.run_until_complete(collector.start())
        ready.set()
        loop.run_forever()

    threading.Thread(target=serve, daemon=True).start()
    ready.wait(10)
    return collector.endpoint


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--turns", type=int, default=20_000)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    endpoint = receiver()
    runs: dict[str, list[float]] = {}
    for _ in range(args.runs):
        for name, ratio in (("off", None), ("on, left out by sampling", 0.0), ("on", 1.0)):
            runs.setdefault(name, []).append(on_the_loop(endpoint, ratio, args.turns))
        encode, export = exporting(endpoint, 512, 20)
        runs.setdefault("encode", []).append(encode)
        runs.setdefault("export", []).append(export)
    off, unsampled, on = (
        statistics.median(runs[n]) for n in ("off", "on, left out by sampling", "on")
    )
    encode, export = statistics.median(runs["encode"]), statistics.median(runs["export"])
    post = export - encode
    print(f"\nCPU per chat turn of {SPANS_PER_TURN} spans (medians of {args.runs} runs)")
    print(f"  on the event loop, traces off:                {off:7.1f} µs")
    print(f"  on the event loop, a turn sampling left out:  {unsampled - off:7.1f} µs more")
    print(
        f"  on the event loop, recorded:                  {on - off:7.1f} µs more"
        f" ({(on - off) / SPANS_PER_TURN:.1f} µs a span)"
    )
    print(
        f"  exporting thread, protobuf encoding:          {encode * SPANS_PER_TURN:7.1f} µs"
        f" ({encode:.1f} µs a span)"
    )
    print(
        f"  exporting thread, HTTP POST (batches of 512): {post * SPANS_PER_TURN:7.1f} µs"
        f" ({post:.1f} µs a span)"
    )
    total = on - off + export * SPANS_PER_TURN
    print(
        f"  in all, recorded:                             {total:7.1f} µs"
        f" ({total / SPANS_PER_TURN:.1f} µs a span)"
    )


if __name__ == "__main__":
    main()
