"""Benchmark: what traces cost chat turns, telemetry off against on.

Two `agentsvc serve` processes, both pinned to core 0: `off` (no `[telemetry]`, nothing of
OpenTelemetry loaded) and `on` (every span exported over OTLP/HTTP to a local receiver in
this process, which decodes each request with opentelemetry-proto and counts the spans).
A closed loop of concurrent clients sends complete /chat turns (knowledge searched, no
tool) to each in turn, cycles interleaved; medians of turns/s, latency and the server's CPU
per turn. Each turn is four spans: the request, the turn, the retrieval, the model call.

Two models, measured one after the other (`--model` picks one):
- `builtin`: the in-process toy model, answering in microseconds: the turn is almost
  nothing but the service's own work, so the spans' cost shows in full;
- `openai`: the tests' fake OpenAI-compatible server (tests/support/fakes/openai_server.py)
  in a process of its own on loopback: each turn is a real streamed HTTP call to a model
  with its usage, as in every real deployment (the model's own time excepted: it answers
  at once).

`--sample-ratio R` traces that fraction of the turns only.

    python scripts/bench_telemetry.py [--seconds 4] [--cycles 3] [--clients 16] \
        [--sample-ratio 1.0] [--model builtin|openai|both]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
from pathlib import Path

import aiohttp
from aiohttp import web

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from scripts import benchlib  # noqa: E402
from scripts.bench_webhooks import EXTRA, PROMPT, chat_load  # noqa: E402

# The agent's model id for each measured model, and how the figures name it.
MODELS = {
    "builtin": ("builtin", "builtin model"),
    "openai": ("oai/gpt-4o-mini", "OpenAI-compatible model over HTTP"),
}


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


async def setup_team(base: str, config: Path, email: str, models: list[str]):
    """An API key and one agent per measured model: (key, {model: agent_id})."""
    key = benchlib.api_key(config, email)
    agents = {}
    async with aiohttp.ClientSession(headers={"Authorization": f"Bearer {key}"}) as session:
        for model in models:
            body = {"name": "Shop", "systemPrompt": PROMPT, "model": MODELS[model][0]}
            async with session.post(f"{base}/api/v1/agents", json=body) as resp:
                data = await resp.json()
                if resp.status != 201:
                    raise RuntimeError(f"creating the {model} agent: {resp.status} {data}")
            agents[model] = data["data"]["id"]
    return key, agents


def measure(loop, servers, models, args) -> dict[tuple[str, str], list[tuple]]:
    """Interleaved cycles of chat load on each server, model by model."""
    results: dict[tuple[str, str], list[tuple]] = {}
    names = list(servers)
    for model in models:
        for base, key, agents in servers.values():  # warm-up: caches, connections
            loop.run_until_complete(chat_load(base, key, agents[model], 1.0, args.clients))
        for cycle in range(args.cycles):
            for name in names if cycle % 2 == 0 else names[::-1]:
                base, key, agents = servers[name]
                pid = benchlib.server_pid(base)
                cpu_before = benchlib.cpu_seconds(pid)
                result = loop.run_until_complete(
                    chat_load(base, key, agents[model], args.seconds, args.clients)
                )
                turns = result[0] * args.seconds
                cpu_us = (benchlib.cpu_seconds(pid) - cpu_before) / max(turns, 1) * 1e6
                results.setdefault((model, name), []).append((*result, cpu_us))
    return results


def report(results, models, sample_ratio: float) -> None:
    """Print each model's table and record its figures for bench_all.py."""
    for model in models:
        label = MODELS[model][1]
        print(
            f"\n{label}\n{'server':16} {'turns/s':>9} {'p50 ms':>8} {'p99 ms':>8} {'errors':>7}"
            f" {'CPU µs/turn':>12} {'core busy':>10} {'vs off':>7}"
        )
        off_rps = statistics.median(r[0] for r in results[(model, "telemetry off")])
        medians = {}
        for name in ("telemetry off", "telemetry on"):
            runs = results[(model, name)]
            rps = statistics.median(r[0] for r in runs)
            cpu = statistics.median(r[4] for r in runs)
            medians[name] = (rps, cpu)
            print(
                f"{name:16} {rps:9.0f} {statistics.median(r[1] for r in runs):8.2f}"
                f" {statistics.median(r[2] for r in runs):8.2f} {sum(r[3] for r in runs):7d}"
                f" {cpu:12.0f} {rps * cpu / 1e6:10.0%} {rps / off_rps:7.0%}"
            )
        (on_rps, on_cpu), (off_rps, off_cpu) = medians["telemetry on"], medians["telemetry off"]
        # Turns/s follow the CPU per turn only while the server's core is the limit (busy
        # near 100 %); below it, the model or the clients set the pace.
        print(
            f"traces add {on_cpu - off_cpu:.0f} µs of server CPU per turn"
            f" ({on_cpu / off_cpu - 1:+.0%}); CPU per turn off/on: {off_cpu / on_cpu:.0%}"
        )
        figure = f"chat turns/s on vs off ({label}, sampling {sample_ratio:g})"
        benchlib.record("telemetry", figure, on_rps / off_rps, "ratio", ">= 0.95")
        for name, (_rps, cpu) in medians.items():
            benchlib.record("telemetry", f"server CPU per chat turn ({label}), {name}", cpu, "µs")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=4.0)
    parser.add_argument("--cycles", type=int, default=3)
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--sample-ratio", type=float, default=1.0)
    parser.add_argument("--model", choices=[*MODELS, "both"], default="both")
    args = parser.parse_args()
    models = list(MODELS) if args.model == "both" else [args.model]

    loop = asyncio.new_event_loop()
    collector = Collector()
    loop.run_until_complete(collector.start())
    traced = (
        f'[telemetry]\notlp_endpoint = "{collector.endpoint}"\nsample_ratio = {args.sample_ratio}\n'
    )
    try:
        with benchlib.loopback_fake("openai_server", what="the fake OpenAI server") as model_url:
            provider = (
                f'[providers.oai]\nkind = "openai"\nbase_url = "{model_url}"\napi_key = "b"\n'
            )
            with (
                benchlib.service(EXTRA + provider) as (off_base, _, off_config),
                benchlib.service(EXTRA + provider + traced) as (on_base, _, on_config),
            ):
                servers = {
                    "telemetry off": (
                        off_base,
                        *loop.run_until_complete(
                            setup_team(off_base, off_config, "off@example.com", models)
                        ),
                    ),
                    "telemetry on": (
                        on_base,
                        *loop.run_until_complete(
                            setup_team(on_base, on_config, "on@example.com", models)
                        ),
                    ),
                }
                results = measure(loop, servers, models, args)
                loop.run_until_complete(asyncio.sleep(3))  # the last batches arrive
    finally:
        loop.run_until_complete(collector.close())
        loop.close()

    report(results, models, args.sample_ratio)
    print(f"\nspans received by the collector: {collector.spans} in {collector.exports} exports")


if __name__ == "__main__":
    main()
