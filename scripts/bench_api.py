"""Benchmark authenticated agent reads against a raw aiohttp hello-world in the same run.

Usage: python scripts/bench_api.py [--seconds 5] [--cycles 3] [--connections 32]

The team's plan has a rate limit (high enough never to refuse), so every read takes a token
as on a real plan: in this process's memory, or, with BENCH_REDIS_URL (bench_all.py
--redis), from Redis as a cluster does. With BENCH_DATABASE_URL the service runs on
PostgreSQL.
Targets (issue 37): GET /agents/:id at least 75 % of hello-world req/s on SQLite, 60 % on
PostgreSQL with Redis limits.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import benchlib  # noqa: E402

# A plan whose limit never refuses the load but is taken from on every request.
RATE_LIMITED = '[plans]\ndefault = "bench"\n[plans.bench]\nrequests_per_minute = 100000000\n'
TARGET = ">= 0.6" if benchlib.DATABASE_URL else ">= 0.75"


def backend() -> str:
    if not benchlib.DATABASE_URL:
        return "SQLite"
    return "PostgreSQL + Redis limits" if benchlib.REDIS_URL else "PostgreSQL"


def create_agent(base: str, key: str, name: str) -> str:
    request = urllib.request.Request(
        f"{base}/api/v1/agents",
        data=json.dumps({"name": name, "systemPrompt": "Benchmark agent."}).encode(),
        headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request) as resp:
        return json.loads(resp.read())["data"]["id"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=int, default=5)
    parser.add_argument("--cycles", type=int, default=3)
    parser.add_argument("--connections", type=int, default=32)
    args = parser.parse_args()
    opts = {"seconds": args.seconds, "connections": args.connections}

    print(f"backend: {backend()}; {args.connections} connections")
    with benchlib.service(RATE_LIMITED) as (base, _, config), benchlib.hello_world() as hello:
        key = benchlib.api_key(config)
        agent_ids = [create_agent(base, key, f"Agent {i}") for i in range(10)]
        auth = {"Authorization": f"Bearer {key}"}
        samples: dict[str, list] = {"hello": [], "get": [], "list": []}
        cpu: dict[str, list[float]] = {"hello": [], "get": []}
        pids = {"hello": benchlib.server_pid(hello), "get": benchlib.server_pid(base)}

        def measured(name: str, url: str, **kw) -> benchlib.LoadResult:
            # Server CPU per request bounds req/s on its pinned core and, unlike wall-clock
            # req/s, hardly moves when other processes share the machine.
            before = benchlib.cpu_seconds(pids.get(name))
            result = benchlib.load(url, **opts, **kw)
            requests = result.rps * args.seconds
            if name in cpu and requests:
                cpu[name].append((benchlib.cpu_seconds(pids[name]) - before) / requests * 1e6)
            return result

        # Interleave A/B cycles: the machine's speed drifts, ratios within a cycle do not.
        for _ in range(args.cycles):
            samples["hello"].append(measured("hello", hello + "/"))
            samples["get"].append(
                measured("get", f"{base}/api/v1/agents/{agent_ids[0]}", headers=auth)
            )
            samples["list"].append(measured("list", f"{base}/api/v1/agents", headers=auth))

    hello_m = benchlib.median_result(samples["hello"])
    ratios = [g.rps / h.rps for g, h in zip(samples["get"], samples["hello"], strict=True)]
    benchlib.record(
        "api", "GET /agents/:id req/s vs hello-world", statistics.median(ratios), "ratio", TARGET
    )
    if cpu["hello"] and cpu["get"]:
        hello_us, get_us = statistics.median(cpu["hello"]), statistics.median(cpu["get"])
        benchlib.record(
            "api",
            "GET /agents/:id by CPU per request vs hello",
            hello_us / get_us,
            "ratio",
            TARGET,
        )
    benchlib.print_table(
        [
            ("hello-world (raw aiohttp)", hello_m, hello_m),
            ("GET /api/v1/agents/:id (API key)", benchlib.median_result(samples["get"]), hello_m),
            ("GET /api/v1/agents (10 agents)", benchlib.median_result(samples["list"]), hello_m),
        ]
    )

    if cpu["hello"] and cpu["get"]:
        print(
            f"\nserver CPU per request (median): hello-world {hello_us:.0f} us, "
            f"GET /agents/:id {get_us:.0f} us: the agent read can reach {hello_us / get_us:.0%} "
            f"of hello-world req/s on one core (target {float(TARGET.split()[1]):.0%})"
        )


if __name__ == "__main__":
    main()
