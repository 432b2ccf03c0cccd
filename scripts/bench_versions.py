"""Benchmark: what keeping an agent's versions costs a PATCH /agents/:id.

One `agentsvc serve` (pinned to core 0, like the others) and one client sending PATCHes
one at a time, in pairs: one that renames the agent (no version is made) and one that
changes its prompt (a version is made). Both read the agent's row and update it in one
transaction, as a PATCH did before versions (which read it after the update instead); the
second also inserts the version's row. The difference of the two medians is the cost of
versioning; a raw aiohttp hello-world's request in the same run gives the scale.

    python scripts/bench_versions.py [--pairs 300]
    BENCH_DATABASE_URL=postgresql://... python scripts/bench_versions.py   # on PostgreSQL

Target (issue 33): PATCH costs at most 1 ms more with versioning.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from pathlib import Path

import aiohttp

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from scripts import benchlib  # noqa: E402

EXTRA = '[plans]\ndefault = "bench"\n[plans.bench]\n'


async def _timed(session: aiohttp.ClientSession, method: str, url: str, **kwargs) -> float:
    started = time.perf_counter()
    async with session.request(method, url, **kwargs) as resp:
        await resp.read()
        assert resp.status == 200, resp.status
    return (time.perf_counter() - started) * 1000


async def run(base: str, config: Path, hello: str, pairs: int) -> int:
    key = benchlib.api_key(config)
    headers = {"Authorization": f"Bearer {key}"}
    async with aiohttp.ClientSession(headers=headers) as session:
        async with session.post(f"{base}/api/v1/agents", json={"name": "Shop"}) as resp:
            agent = (await resp.json())["data"]
        url = f"{base}/api/v1/agents/{agent['id']}"
        plain, versioned, hello_ms = [], [], []
        for i in range(pairs + 20):  # the first 20 pairs warm up
            a = await _timed(session, "PATCH", url, json={"name": f"Shop {i}"})
            b = await _timed(session, "PATCH", url, json={"systemPrompt": f"Rule {i}."})
            h = await _timed(session, "GET", hello + "/")
            if i >= 20:
                plain.append(a)
                versioned.append(b)
                hello_ms.append(h)
        async with session.get(f"{url}/versions?limit=1") as resp:
            newest = (await resp.json())["data"][0]["number"]
    assert newest == pairs + 21, newest
    plain_p50, versioned_p50 = statistics.median(plain), statistics.median(versioned)
    hello_p50 = statistics.median(hello_ms)
    extra = versioned_p50 - plain_p50
    backend = "PostgreSQL" if benchlib.DATABASE_URL else "SQLite"
    figures = {
        "backend": backend,
        "PATCH, no version made, p50 (ms)": f"{plain_p50:.2f} ({plain_p50 / hello_p50:.1f}x hello)",
        "PATCH, version made, p50 (ms)": f"{versioned_p50:.2f}"
        f" ({versioned_p50 / hello_p50:.1f}x hello)",
        "cost of versioning (ms)": f"{extra:.2f}",
        "hello-world request p50 (ms)": f"{hello_p50:.2f}",
    }
    benchlib.record("versions", f"PATCH extra ms ({backend})", extra, "ms", "<= 1")
    violations = [] if extra <= 1.0 else [f"versioning costs {extra:.2f} ms a PATCH (target <= 1)"]
    return benchlib.print_report(figures, violations, "versioning target met")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--pairs", type=int, default=300)
    args = parser.parse_args()
    with benchlib.service(EXTRA) as (base, _, config), benchlib.hello_world() as hello:
        sys.exit(asyncio.run(run(base, config, hello, args.pairs)))


if __name__ == "__main__":
    main()
