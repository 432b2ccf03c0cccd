"""Benchmark: what traces cost chat turns, telemetry off against on.

Two `agentsvc serve` processes, both pinned to core 0: `off` (no `[telemetry]`, nothing of
OpenTelemetry loaded) and `on` (every span exported over OTLP/HTTP to a local receiver in
this process, which decodes each request with opentelemetry-proto and counts the spans).
A closed loop of concurrent clients sends complete /chat turns (builtin model, knowledge
searched, no tool) to each in turn, cycles interleaved; medians of turns/s, latency and the
server's CPU per turn. `--sample-ratio R` traces that fraction of the turns only.

    python scripts/bench_telemetry.py [--seconds 4] [--cycles 3] [--clients 16] \
        [--sample-ratio 1.0]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
from pathlib import Path

from aiohttp import web

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from scripts import benchlib  # noqa: E402
from scripts.bench_webhooks import EXTRA, chat_load, setup_team  # noqa: E402


class Collector:
    """A local OTLP/HTTP receiver: decodes every export and counts its spans."""

    def __init__(self) -> None:
        self.spans = 0
        self.exports = 0
        self.runner: web.AppRunner | None = None
        self.endpoint = ""

    async def start(self) -> None:
        from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
            ExportTraceServiceRequest,
        )

        async def traces(request: web.Request) -> web.Response:
            message = ExportTraceServiceRequest()
            message.ParseFromString(await request.read())
            self.exports += 1
            self.spans += sum(
                len(scope.spans) for rs in message.resource_spans for scope in rs.scope_spans
            )
            return web.Response(body=b"", content_type="application/x-protobuf")

        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_post("/v1/traces", traces)
        self.runner = web.AppRunner(app, access_log=None)
        await self.runner.setup()
        site = web.TCPSite(self.runner, "127.0.0.1", 0)
        await site.start()
        self.endpoint = f"http://127.0.0.1:{self.runner.addresses[0][1]}"

    async def close(self) -> None:
        if self.runner is not None:
            await self.runner.cleanup()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=4.0)
    parser.add_argument("--cycles", type=int, default=3)
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--sample-ratio", type=float, default=1.0)
    args = parser.parse_args()

    loop = asyncio.new_event_loop()
    collector = Collector()
    loop.run_until_complete(collector.start())
    traced = (
        f'[telemetry]\notlp_endpoint = "{collector.endpoint}"\nsample_ratio = {args.sample_ratio}\n'
    )
    results: dict[str, list[tuple[float, float, float, int, float]]] = {}
    try:
        with (
            benchlib.service(EXTRA) as (off_base, _, off_config),
            benchlib.service(EXTRA + traced) as (on_base, _, on_config),
        ):
            targets = {
                "telemetry off": (
                    off_base,
                    *loop.run_until_complete(
                        setup_team(off_base, off_config, "off@example.com", None)
                    ),
                ),
                "telemetry on": (
                    on_base,
                    *loop.run_until_complete(
                        setup_team(on_base, on_config, "on@example.com", None)
                    ),
                ),
            }
            for target in targets.values():  # warm-up: caches, connections
                loop.run_until_complete(chat_load(*target, 1.0, args.clients))
            names = list(targets)
            for cycle in range(args.cycles):
                for name in names if cycle % 2 == 0 else names[::-1]:
                    pid = benchlib.server_pid(targets[name][0])
                    cpu_before = benchlib.cpu_seconds(pid)
                    result = loop.run_until_complete(
                        chat_load(*targets[name], args.seconds, args.clients)
                    )
                    turns = result[0] * args.seconds
                    cpu_us = (benchlib.cpu_seconds(pid) - cpu_before) / max(turns, 1) * 1e6
                    results.setdefault(name, []).append((*result, cpu_us))
            loop.run_until_complete(asyncio.sleep(3))  # the last batches arrive
    finally:
        loop.run_until_complete(collector.close())
        loop.close()

    print(
        f"\n{'server':16} {'turns/s':>9} {'p50 ms':>8} {'p99 ms':>8} {'errors':>7}"
        f" {'CPU µs/turn':>12} {'vs off':>7}"
    )
    off_rps = statistics.median(r[0] for r in results["telemetry off"])
    medians = {}
    for name, runs in results.items():
        rps = statistics.median(r[0] for r in runs)
        cpu = statistics.median(r[4] for r in runs)
        medians[name] = (rps, cpu)
        print(
            f"{name:16} {rps:9.0f} {statistics.median(r[1] for r in runs):8.2f}"
            f" {statistics.median(r[2] for r in runs):8.2f} {sum(r[3] for r in runs):7d}"
            f" {cpu:12.0f} {rps / off_rps:7.0%}"
        )
    print(f"spans received by the collector: {collector.spans} in {collector.exports} exports")
    ratio = medians["telemetry on"][0] / medians["telemetry off"][0]
    label = f"sampling {args.sample_ratio:g}"
    benchlib.record("telemetry", f"chat turns/s on vs off ({label})", ratio, "ratio", ">= 0.95")
    for name, (_rps, cpu) in medians.items():
        benchlib.record("telemetry", f"server CPU per chat turn, {name}", cpu, "µs")


if __name__ == "__main__":
    main()
