"""How reads cost as the data grows: lists, analytics, stats and single reads at 1k, 100k
and 1M stored rows, and a chat turn's p99 while another client loops the heaviest read.

Usage: python scripts/bench_growth.py [--sizes 1000,100000,1000000] [--samples 200]

For each size a fresh `agentsvc serve` gets an agent with a form tool and a trigger over
the API; then N conversations (one message each), N form submissions and N form events
are written straight into its SQLite file in a few large transactions, with the same
columns the service writes (the triggers that keep the counters run as they would). Every
read then goes through the API with an API key, one request at a time. Targets at the
largest size: first list page and cursor pages <= 2 ms p50, analytics <= 5 ms p50 whatever
the agent's volume, a chat turn's p99 <= 20 ms while the heaviest read loops.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sqlite3
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import aiohttp

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import benchlib  # noqa: E402

from agentsvc.api.cursors import encode_cursor  # noqa: E402

# A plan without limits: the benchmark sends thousands of requests a minute.
UNLIMITED = '[plans]\ndefault = "bench"\n[plans.bench]\n'
FORM = {"fields": [{"name": "email", "label": "E-mail", "type": "email"}]}
BATCH = 50_000


def stamps(n: int) -> list[str]:
    """n increasing timestamps in the service's format, one a millisecond."""
    start = datetime(2026, 1, 1, tzinfo=UTC)
    step = timedelta(milliseconds=1)
    return [
        (start + i * step).isoformat(timespec="milliseconds").replace("+00:00", "Z")
        for i in range(n)
    ]


def fill(db_path: Path, n: int, agent_id: str, tool_id: str) -> float:
    """Write n conversations (a message each), n submissions and n form events."""
    started = time.monotonic()
    conn = sqlite3.connect(db_path, timeout=60, isolation_level=None)
    conn.execute("PRAGMA busy_timeout = 60000")
    (team_id,) = conn.execute("SELECT team_id FROM agents WHERE id = ?", (agent_id,)).fetchone()
    times = stamps(n)
    for first in range(0, n, BATCH):
        part = range(first, min(n, first + BATCH))
        conn.execute("BEGIN IMMEDIATE")
        conn.executemany(
            "INSERT INTO conversations (id, agent_id, team_id, title, created_at, updated_at)"
            " VALUES (?, ?, ?, ?, ?, ?)",
            ((f"conv_g{i}", agent_id, team_id, f"question {i}", times[i], times[i]) for i in part),
        )
        conn.executemany(
            "INSERT INTO messages (id, conversation_id, role, content, created_at)"
            " VALUES (?, ?, 'user', ?, ?)",
            ((f"msg_g{i}", f"conv_g{i}", f"Do you ship to country {i}?", times[i]) for i in part),
        )
        conn.executemany(
            "INSERT INTO form_submissions (id, team_id, agent_id, tool_id, tool_name, form_data,"
            " fields_completed, execution_mode, status, webhook_attempts, impression_at,"
            " started_at, created_at, updated_at) VALUES (?, ?, ?, ?, 'contact',"
            " '{\"email\":\"a@example.com\"}', '[\"email\"]', 'webhook', ?, 1, ?, ?, ?, ?)",
            (
                (
                    f"sub_g{i}",
                    team_id,
                    agent_id,
                    tool_id,
                    "webhook_failed" if i % 50 == 0 else "webhook_success",
                    times[i],
                    times[i],
                    times[i],
                    times[i],
                )
                for i in part
            ),
        )
        conn.executemany(
            "INSERT INTO form_events (tool_id, agent_id, event_type, created_at)"
            " VALUES (?, ?, ?, ?)",
            ((tool_id, agent_id, "impression" if i % 2 else "started", times[i]) for i in part),
        )
        conn.execute("COMMIT")
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    return time.monotonic() - started


async def call(session: aiohttp.ClientSession, method: str, url: str, **kw) -> dict:
    async with session.request(method, url, **kw) as resp:
        body = await resp.json()
        if resp.status >= 400:
            raise RuntimeError(f"{method} {url}: {resp.status} {body}")
        return body


async def timed(session: aiohttp.ClientSession, url: str, samples: int) -> tuple[float, float]:
    """p50 and p99 in ms of `samples` sequential GETs (after a short warm-up)."""
    for _ in range(5):
        async with session.get(url) as resp:
            assert resp.status == 200, (url, resp.status, await resp.text())
            await resp.read()
    times = []
    for _ in range(samples):
        started = time.perf_counter()
        async with session.get(url) as resp:
            await resp.read()
        times.append((time.perf_counter() - started) * 1000)
    return benchlib.percentile(times, 50), benchlib.percentile(times, 99)


async def chat_turn(session: aiohttp.ClientSession, base: str, agent_id: str, n: int) -> float:
    started = time.perf_counter()
    body = {"agentId": agent_id, "messages": [{"role": "user", "content": f"hello {n}"}]}
    async with session.post(f"{base}/api/v1/chat", json=body) as resp:
        await resp.read()
        assert resp.status == 200
    return (time.perf_counter() - started) * 1000


async def measure(base: str, key: str, db_path: Path, n: int, samples: int) -> dict:
    headers = {"Authorization": f"Bearer {key}"}
    api = f"{base}/api/v1"
    async with aiohttp.ClientSession(headers=headers) as s:
        agent = (await call(s, "POST", f"{api}/agents", json={"name": "Big"}))["data"]
        empty = (await call(s, "POST", f"{api}/agents", json={"name": "Quiet"}))["data"]
        tool = await call(
            s,
            "POST",
            f"{api}/tools",
            json={
                "agentId": agent["id"],
                "name": "contact",
                "description": "contact form",
                "executionType": "form",
                "formSchema": FORM,
            },
        )
        await call(
            s,
            "POST",
            f"{api}/tools",
            json={
                "agentId": empty["id"],
                "name": "contact",
                "description": "contact form",
                "executionType": "form",
                "formSchema": FORM,
            },
        )
        await call(
            s,
            "POST",
            f"{api}/triggers?agentId={agent['id']}",
            json={
                "name": "Pricing",
                "triggerType": "time_on_page",
                "conditions": {"timeOnPage": 5},
                "actionType": "open_chat",
                "actionConfig": {},
            },
        )
        filled = await asyncio.to_thread(fill, db_path, n, agent["id"], tool["id"])
        size_mb = sum(p.stat().st_size for p in db_path.parent.glob("agentsvc.db*")) / 2**20
        stamp = stamps(n)
        deep = max(0, n - 30)
        conv_cursor = encode_cursor(stamp[deep], f"conv_g{deep}")
        sub_cursor = encode_cursor(stamp[deep], f"sub_g{deep}")
        a, e = agent["id"], empty["id"]
        reads = {
            "GET /conversations, first page": f"{api}/conversations?agentId={a}",
            "GET /conversations, cursor page at the end": (
                f"{api}/conversations?agentId={a}&cursor={conv_cursor}"
            ),
            "GET /conversations, offset near the end": (
                f"{api}/conversations?agentId={a}&offset={deep}"
            ),
            "GET /conversations/:id": f"{api}/conversations/conv_g{n // 2}",
            "GET /form-submissions, first page": f"{api}/form-submissions",
            "GET /form-submissions, cursor page at the end": (
                f"{api}/form-submissions?cursor={sub_cursor}"
            ),
            "GET /form-submissions?status=webhook_failed": (
                f"{api}/form-submissions?status=webhook_failed"
            ),
            "GET /form-submissions/analytics (the agent)": (
                f"{api}/form-submissions/analytics?agentId={a}"
            ),
            "GET /form-submissions/analytics (an agent with none)": (
                f"{api}/form-submissions/analytics?agentId={e}"
            ),
            "GET /triggers/stats": f"{api}/triggers/stats?agentId={a}",
            "GET /agents/:id": f"{api}/agents/{a}",
        }
        # An offset walks every row before it (1-2 s at 1M): a few samples show it.
        results = {
            name: await timed(s, url, min(samples, 10) if "offset" in name else samples)
            for name, url in reads.items()
        }
        heaviest = max(
            (name for name in reads if "offset" not in name), key=lambda k: results[k][0]
        )
        stop = asyncio.Event()

        async def loop_heaviest() -> None:
            async with aiohttp.ClientSession(headers=headers) as other:
                while not stop.is_set():
                    async with other.get(reads[heaviest]) as resp:
                        await resp.read()

        looper = asyncio.ensure_future(loop_heaviest())
        await asyncio.sleep(0.2)
        turns = [await chat_turn(s, base, a, i) for i in range(samples)]
        stop.set()
        await looper
        results["POST /chat turn while another client loops the heaviest read"] = (
            benchlib.percentile(turns, 50),
            benchlib.percentile(turns, 99),
        )
    return {"results": results, "fill_seconds": filled, "size_mb": size_mb, "heaviest": heaviest}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,100000,1000000")
    parser.add_argument("--samples", type=int, default=200)
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    runs = {}
    for n in sizes:
        with benchlib.service(UNLIMITED) as (base, tmp, config):
            key = benchlib.api_key(config)
            runs[n] = asyncio.run(measure(base, key, tmp / "data" / "agentsvc.db", n, args.samples))
        print(
            f"{n:>9,} rows each: written in {runs[n]['fill_seconds']:.1f} s, "
            f"database {runs[n]['size_mb']:.0f} MB; heaviest read: {runs[n]['heaviest']}",
            flush=True,
        )
    names = list(runs[sizes[0]]["results"])
    width = max(len(name) for name in names)
    print()
    print("p50 / p99 ms".ljust(width), *(f"{n:>16,}" for n in sizes))
    for name in names:
        cells = [
            f"{runs[n]['results'][name][0]:7.2f} /{runs[n]['results'][name][1]:7.2f}" for n in sizes
        ]
        print(name.ljust(width), *(f"{c:>16}" for c in cells))
    largest = runs[sizes[-1]]["results"]
    violations = []
    for name, (p50, p99) in largest.items():
        if ("first page" in name or "cursor page" in name) and p50 > 2:
            violations.append(f"{name}: p50 {p50:.2f} ms > 2 ms")
        if "analytics" in name and p50 > 5:
            violations.append(f"{name}: p50 {p50:.2f} ms > 5 ms")
        if name.startswith("POST /chat") and p99 > 20:
            violations.append(f"{name}: p99 {p99:.2f} ms > 20 ms")
    mb_per_million = runs[sizes[-1]]["size_mb"] / sizes[-1] * 1_000_000
    print(
        f"\nfile: {mb_per_million:.0f} MB per 1M rows of each kind"
        f" (conversation + message + submission + form event); load average "
        f"{' '.join(f'{x:.1f}' for x in os.getloadavg())}"
    )
    for v in violations:
        print("MISSED:", v)
    if not violations:
        print(f"targets met at {sizes[-1]:,} rows")
    return 1 if violations else 0


if __name__ == "__main__":
    sys.exit(main())
