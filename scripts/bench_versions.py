"""Benchmark: what keeping an agent's versions costs a PATCH /agents/:id.

One `agentsvc serve` (pinned to core 0, like the others) and one client sending PATCHes
one at a time, in pairs: one that renames the agent (no version is made) and one that
changes its prompt (a version is made). Both read the agent's row and update it in one
transaction, as a PATCH did before versions (which read it after the update instead); the
second also inserts the version's row. The difference of the two medians is the cost of
versioning; a raw aiohttp hello-world's request in the same run gives the scale.

    python scripts/bench_versions.py [--pairs 300]
    BENCH_DATABASE_URL=postgresql://... python scripts/bench_versions.py   # on PostgreSQL

Then chat: turns of the builtin model one after another (a new visitor each), in cycles
with and without an experiment running on two of the agent's versions (half the visitors
on the live version, half on the other), so the experiment's cost shows as the ratio of
the two medians.

Last, a run of a 200-case evaluation set on the builtin model, from the request to its end.

Targets (issue 33): PATCH costs at most 1 ms more with versioning; live chat latency
unchanged by a running experiment (within 10 %, the noise of these machines); a 200-case
run on the builtin model under 5 s.
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


async def _turn(session: aiohttp.ClientSession, base: str, agent_id: str, visitor: str) -> float:
    body = {
        "agentId": agent_id,
        "sessionId": visitor,
        "messages": [{"role": "user", "content": "When do you open on Saturdays?"}],
    }
    return await _timed(session, "POST", f"{base}/api/v1/chat", json=body)


async def chat_with_and_without_experiment(
    session: aiohttp.ClientSession, base: str, turns: int, cycles: int
) -> tuple[list[float], list[float], dict[bool, float]]:
    """Chat turn latencies (ms) without, and with, an experiment running, and the server's
    CPU seconds a turn in each (steadier than latency on a busy machine)."""
    pid = benchlib.server_pid(base)
    cpu = {False: 0.0, True: 0.0}
    body = {"name": "Chat", "systemPrompt": "We open at nine on Saturdays."}
    async with session.post(f"{base}/api/v1/agents", json=body) as resp:
        agent_id = (await resp.json())["data"]["id"]
    change = {"systemPrompt": "We open at ten on Saturdays."}
    async with session.patch(f"{base}/api/v1/agents/{agent_id}", json=change) as resp:
        assert resp.status == 200
    variants = {"variants": [{"version": 1, "weight": 1}, {"version": 2, "weight": 1}]}
    without, with_ = [], []
    url = f"{base}/api/v1/agents/{agent_id}/experiments"
    for cycle in range(cycles):
        # Half the cycles measure with the experiment first: the database grows as they go.
        for running in (False, True) if cycle % 2 == 0 else (True, False):
            experiment_id = None
            if running:
                async with session.post(url, json=variants) as resp:
                    experiment_id = (await resp.json())["data"]["id"]
            times = with_ if running else without
            cpu0 = benchlib.cpu_seconds(pid)
            for i in range(turns):
                times.append(await _turn(session, base, agent_id, f"{running}-{cycle}-{i}"))
            cpu[running] += (benchlib.cpu_seconds(pid) - cpu0) / (turns * cycles)
            if experiment_id is not None:
                stop = f"{base}/api/v1/experiments/{experiment_id}/stop"
                async with session.post(stop, json={}):
                    pass
    return without[turns // 2 :], with_[turns // 2 :], cpu  # the first half cycle warms up


async def evaluation_seconds(session: aiohttp.ClientSession, base: str, cases: int) -> float:
    """Seconds from asking for a run of `cases` cases on the builtin model to its end."""
    body = {"name": "Eval", "systemPrompt": "We open at nine on Saturdays. Parcels ship fast."}
    async with session.post(f"{base}/api/v1/agents", json=body) as resp:
        agent_id = (await resp.json())["data"]["id"]
    async with session.post(f"{base}/api/v1/agents/{agent_id}/evalsets", json={"name": "E"}) as r:
        set_id = (await r.json())["data"]["id"]
    for i in range(cases):
        case = {"question": f"When do you open on Saturdays? ({i})", "mustInclude": ["nine"]}
        async with session.post(f"{base}/api/v1/evalsets/{set_id}/cases", json=case) as resp:
            assert resp.status == 201, await resp.text()
    started = time.perf_counter()
    async with session.post(f"{base}/api/v1/evalsets/{set_id}/runs", json={}) as resp:
        run_id = (await resp.json())["data"]["id"]
    while True:
        async with session.get(f"{base}/api/v1/eval-runs/{run_id}") as resp:
            run = (await resp.json())["data"]
        if run["status"] not in ("queued", "running"):
            break
        await asyncio.sleep(0.02)
    assert (run["status"], run["passed"]) == ("done", cases), run
    return time.perf_counter() - started


async def run(base: str, config: Path, hello: str, pairs: int, turns: int) -> int:
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
        without, with_, turn_cpu = await chat_with_and_without_experiment(session, base, turns, 6)
        eval_seconds = await evaluation_seconds(session, base, 200)
    assert newest == pairs + 21, newest
    plain_p50, versioned_p50 = statistics.median(plain), statistics.median(versioned)
    hello_p50 = statistics.median(hello_ms)
    extra = versioned_p50 - plain_p50
    chat_ratio = statistics.median(with_) / statistics.median(without)
    cpu_ratio = turn_cpu[True] / turn_cpu[False]
    backend = "PostgreSQL" if benchlib.DATABASE_URL else "SQLite"
    figures = {
        "backend": backend,
        "PATCH, no version made, p50 (ms)": f"{plain_p50:.2f} ({plain_p50 / hello_p50:.1f}x hello)",
        "PATCH, version made, p50 (ms)": f"{versioned_p50:.2f}"
        f" ({versioned_p50 / hello_p50:.1f}x hello)",
        "cost of versioning (ms)": f"{extra:.2f}",
        "hello-world request p50 (ms)": f"{hello_p50:.2f}",
        "chat turn p50, no experiment (ms)": f"{statistics.median(without):.2f}",
        "chat turn p50, experiment running (ms)": f"{statistics.median(with_):.2f}",
        "chat with / without experiment": f"{chat_ratio:.2f}",
        "server CPU a turn, without / with (ms)": f"{turn_cpu[False] * 1000:.2f} /"
        f" {turn_cpu[True] * 1000:.2f} ({cpu_ratio:.2f})",
        "200-case evaluation run, builtin (s)": f"{eval_seconds:.2f}",
    }
    benchlib.record("versions", f"PATCH extra ms ({backend})", extra, "ms", "<= 1")
    benchlib.record("versions", f"chat CPU with experiment ({backend})", cpu_ratio, "x", "<= 1.1")
    violations = [] if extra <= 1.0 else [f"versioning costs {extra:.2f} ms a PATCH (target <= 1)"]
    benchlib.record("versions", f"200-case eval run s ({backend})", eval_seconds, "s", "< 5")
    if eval_seconds >= 5:
        violations.append(f"a 200-case evaluation run took {eval_seconds:.1f} s (< 5)")
    if cpu_ratio > 1.1:
        violations.append(f"a running experiment costs {cpu_ratio:.2f}x the CPU a turn (<= 1.1)")
    return benchlib.print_report(figures, violations, "versioning target met")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--pairs", type=int, default=300)
    parser.add_argument("--turns", type=int, default=200, help="chat turns a cycle")
    args = parser.parse_args()
    with benchlib.service(EXTRA) as (base, _, config), benchlib.hello_world() as hello:
        sys.exit(asyncio.run(run(base, config, hello, args.pairs, args.turns)))


if __name__ == "__main__":
    main()
