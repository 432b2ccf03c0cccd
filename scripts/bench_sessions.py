"""Benchmark cookie sessions beside API keys, and password sign-in under a burst.

Usage: python scripts/bench_sessions.py [--seconds 5] [--cycles 3] [--burst 64]
Targets: a cookie-authenticated GET /agents/:id costs about what an API-key one does
(both resolve from the same short-lived cache); sign-in bursts stay bounded in memory
(argon2 runs at most one per core) and wrong-password / unknown-address times match.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import aiohttp

sys.path.insert(0, str(Path(__file__).resolve().parent))
import benchlib  # noqa: E402

EXTRA = (
    "[auth]\nsign_in_per_minute_ip = 1000000\nsign_in_per_minute_email = 1000000\n"
    '[plans]\ndefault = "bench"\n[plans.bench]\n'
)
EMAIL = "bench@example.com"
PASSWORD = "bench password 1"


def create_user(config: Path) -> None:
    env = {**os.environ, "AGENTSVC_CONFIG": str(config)}
    subprocess.run(
        [
            sys.executable,
            "-m",
            "agentsvc",
            "user",
            "create",
            "--email",
            EMAIL,
            "--password",
            PASSWORD,
        ],
        env=env,
        check=True,
        capture_output=True,
    )


def sign_in(base: str) -> str:
    request = urllib.request.Request(
        f"{base}/api/v1/auth/sign-in/email",
        data=json.dumps({"email": EMAIL, "password": PASSWORD}).encode(),
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request) as resp:
        cookie = resp.headers["Set-Cookie"].split(";", 1)[0]
    return cookie


def create_agent(base: str, key: str) -> str:
    request = urllib.request.Request(
        f"{base}/api/v1/agents",
        data=json.dumps({"name": "Bench"}).encode(),
        headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request) as resp:
        return json.loads(resp.read())["data"]["id"]


async def burst(base: str, size: int, email: str, password: str) -> tuple[float, list[float]]:
    """`size` concurrent sign-ins; return (sign-ins per second, latencies in ms)."""
    latencies: list[float] = []
    async with aiohttp.ClientSession() as http:

        async def one() -> None:
            started = time.perf_counter()
            async with http.post(
                f"{base}/api/v1/auth/sign-in/email", json={"email": email, "password": password}
            ) as resp:
                await resp.read()
            latencies.append((time.perf_counter() - started) * 1000)

        started = time.perf_counter()
        await asyncio.wait_for(asyncio.gather(*[one() for _ in range(size)]), 120)
        elapsed = time.perf_counter() - started
    return size / elapsed, latencies


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=int, default=5)
    parser.add_argument("--cycles", type=int, default=3)
    parser.add_argument("--connections", type=int, default=64)
    parser.add_argument("--burst", type=int, default=64)
    args = parser.parse_args()
    opts = {"seconds": args.seconds, "connections": args.connections}

    with benchlib.service(EXTRA) as (base, _, config), benchlib.hello_world() as hello:
        create_user(config)
        key = benchlib.api_key(config, EMAIL)
        cookie = sign_in(base)
        agent = create_agent(base, key)
        url = f"{base}/api/v1/agents/{agent}"
        samples: dict[str, list] = {"hello": [], "key": [], "cookie": []}
        for _ in range(args.cycles):
            samples["hello"].append(benchlib.load(hello + "/", **opts))
            samples["key"].append(
                benchlib.load(url, headers={"Authorization": f"Bearer {key}"}, **opts)
            )
            samples["cookie"].append(benchlib.load(url, headers={"Cookie": cookie}, **opts))

        hello_m = benchlib.median_result(samples["hello"])
        benchlib.record(
            "sessions",
            "GET /agents/:id by session cookie vs hello-world",
            benchlib.median_result(samples["cookie"]).rps / hello_m.rps,
            "ratio",
            ">= 0.5",
        )
        benchlib.print_table(
            [
                ("hello-world (raw aiohttp)", hello_m, hello_m),
                ("GET /agents/:id (API key)", benchlib.median_result(samples["key"]), hello_m),
                (
                    "GET /agents/:id (session cookie)",
                    benchlib.median_result(samples["cookie"]),
                    hello_m,
                ),
            ]
        )
        print()
        for label, email, password in [
            ("right password", EMAIL, PASSWORD),
            ("wrong password", EMAIL, "not the password"),
            ("unknown address", "nobody@example.com", "not the password"),
        ]:
            rate, latencies = asyncio.run(burst(base, args.burst, email, password))
            latencies.sort()
            print(
                f"sign-in burst of {args.burst}, {label:16}: {rate:7.1f}/s  "
                f"p50 {statistics.median(latencies):7.1f} ms  "
                f"p99 {latencies[int(len(latencies) * 0.99) - 1]:7.1f} ms"
            )
        peak = benchlib.rss_mb(benchlib.server_pid(base), peak=True)
        print(f"service peak RSS after the bursts: {peak:.0f} MB")


if __name__ == "__main__":
    main()
