"""How fast exports stream, and what they cost the server in memory.

Usage: python scripts/bench_export.py [--messages 100000] [--per-conversation 2]
                                      [--database postgresql://...] [--formats csv,jsonl]

A fresh `agentsvc serve` gets an agent over the API; then N messages (in conversations of
`--per-conversation` messages, visitor and agent in turn, some starting with `=` so the CSV
defuses them) are written straight into its database in a few large transactions, with the
columns the service writes (the triggers that keep the search index and the counters run as
they would). Each export is then downloaded over HTTP from the real server while another
thread samples the server's resident memory from /proc every 5 ms: rows per second (the
median of `--runs` downloads per format, formats interleaved), and the RSS growth (highest
sample minus the RSS before the download). Targets: at least 50,000 rows/s and less than
30 MB of growth for 100,000 messages.

For scale, the same number of CSV lines of the same size streamed by a raw aiohttp
StreamResponse (no database, no formatting) is measured in the same run: the ceiling of the
transport on this machine.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sqlite3
import statistics
import subprocess
import sys
import threading
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import aiohttp

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import benchlib  # noqa: E402

UNLIMITED = '[plans]\ndefault = "bench"\n[plans.bench]\n'
BATCH = 20_000
TARGET_ROWS_PER_SECOND = 50_000
TARGET_RSS_MB = 30.0

QUESTIONS = [
    "Do you ship to {n}? I ordered a blue jacket last week and it has not arrived yet.",
    "=SUM(A1:A{n}) is what my spreadsheet says, can you explain the invoice?",
    "How long do refunds take for order {n}, and can I get store credit instead?",
]
ANSWER = (
    "Parcels ship worldwide within a day; tracking arrives by e-mail. Refunds are paid within"
    " five days of the return reaching us (order {n})."
)

# A raw aiohttp StreamResponse sending `rows` CSV lines of `size` bytes in chunks of 1,000.
RAW_STREAM = """
import sys, uvloop
from aiohttp import web
ROWS, SIZE = int(sys.argv[2]), int(sys.argv[3])
LINE = (b"x" * (SIZE - 2)) + b"\\r\\n"
async def stream(request):
    response = web.StreamResponse(headers={"Content-Type": "text/csv"})
    await response.prepare(request)
    chunk = LINE * 1000
    for _ in range(ROWS // 1000):
        await response.write(chunk)
    await response.write_eof()
    return response
app = web.Application()
app.router.add_get("/", stream)
uvloop.install()
web.run_app(app, host="127.0.0.1", port=int(sys.argv[1]), print=None, access_log=None)
"""


def stamps(n: int) -> list[str]:
    start = datetime(2026, 1, 1, tzinfo=UTC)
    step = timedelta(milliseconds=1)
    return [
        (start + i * step).isoformat(timespec="milliseconds").replace("+00:00", "Z")
        for i in range(n)
    ]


def rows_to_write(agent_id: str, team_id: str, messages: int, per: int):
    """(conversation rows, message rows) in the service's columns."""
    conversations = (messages + per - 1) // per
    times = stamps(messages)
    convs = [
        (f"conv_x{c}", agent_id, team_id, f"Question {c}", times[c * per], times[c * per])
        for c in range(conversations)
    ]
    msgs = []
    for i in range(messages):
        c, k = divmod(i, per)
        if k % 2 == 0:
            role, text = "user", QUESTIONS[c % len(QUESTIONS)].format(n=c)
        else:
            role, text = "assistant", ANSWER.format(n=c)
        msgs.append((f"msg_x{i}", f"conv_x{c}", role, text, times[i]))
    return convs, msgs


def fill_sqlite(db_path: Path, agent_id: str, messages: int, per: int) -> float:
    started = time.monotonic()
    conn = sqlite3.connect(db_path, timeout=60, isolation_level=None)
    conn.execute("PRAGMA busy_timeout = 60000")
    (team_id,) = conn.execute("SELECT team_id FROM agents WHERE id = ?", (agent_id,)).fetchone()
    convs, msgs = rows_to_write(agent_id, team_id, messages, per)
    for first in range(0, len(convs), BATCH):
        conn.execute("BEGIN IMMEDIATE")
        conn.executemany(
            "INSERT INTO conversations (id, agent_id, team_id, title, created_at, updated_at)"
            " VALUES (?, ?, ?, ?, ?, ?)",
            convs[first : first + BATCH],
        )
        conn.execute("COMMIT")
    for first in range(0, len(msgs), BATCH):
        conn.execute("BEGIN IMMEDIATE")
        conn.executemany(
            "INSERT INTO messages (id, conversation_id, role, content, created_at)"
            " VALUES (?, ?, ?, ?, ?)",
            msgs[first : first + BATCH],
        )
        conn.execute("COMMIT")
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    return time.monotonic() - started


async def fill_postgres(url: str, agent_id: str, messages: int, per: int) -> float:
    import asyncpg

    started = time.monotonic()
    conn = await asyncpg.connect(url)
    try:
        team_id = await conn.fetchval("SELECT team_id FROM agents WHERE id = $1", agent_id)
        convs, msgs = rows_to_write(agent_id, team_id, messages, per)
        async with conn.transaction():
            await conn.copy_records_to_table(
                "conversations",
                records=convs,
                columns=["id", "agent_id", "team_id", "title", "created_at", "updated_at"],
            )
            await conn.copy_records_to_table(
                "messages",
                records=msgs,
                columns=["id", "conversation_id", "role", "content", "created_at"],
            )
        # As autovacuum leaves a table some time after a bulk load: hint bits and the
        # visibility map set, statistics taken (else the first read pays for all of it).
        await conn.execute("VACUUM (ANALYZE) conversations, messages")
    finally:
        await conn.close()
    return time.monotonic() - started


# (name, query) of the list filters timed after the exports.
SEARCHES = [
    ("q=refunds (a word in over half of the messages)", "q=refunds"),
    ("q=jacket blue (every word, a third)", "q=jacket%20blue"),
    ("q=ship 4242 (one conversation)", "q=ship%204242"),
    ("from/to (the day of every conversation)", "from=2026-01-01&to=2026-01-01"),
    ("rating=down (none rated)", "rating=down"),
    ("no filter, cursor-less first page", "limit=20"),
]


async def timed_get(url: str, headers: dict[str, str], samples: int) -> tuple[float, float]:
    """p50 and p99 in ms of sequential GETs (after two warm-ups)."""
    times = []
    async with aiohttp.ClientSession(headers=headers) as session:
        for n in range(samples + 2):
            started = time.perf_counter()
            async with session.get(url) as resp:
                if resp.status != 200:
                    raise RuntimeError(f"{url}: {resp.status} {await resp.text()}")
                await resp.read()
            if n >= 2:
                times.append((time.perf_counter() - started) * 1000)
    return benchlib.percentile(times, 50), benchlib.percentile(times, 99)


class RssSampler:
    """Samples a process's RSS every 5 ms on a thread; `peak` is the highest sample."""

    def __init__(self, pid: int | None):
        self.pid = pid
        self.peak = 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            self.peak = max(self.peak, benchlib.rss_mb(self.pid))
            time.sleep(0.005)

    def __enter__(self) -> RssSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, benchlib.rss_mb(self.pid))


async def download(url: str, headers: dict[str, str]) -> tuple[int, int, float]:
    """(lines, bytes, seconds) of a streamed download read chunk by chunk."""
    lines = size = 0
    started = time.perf_counter()
    timeout = aiohttp.ClientTimeout(total=600)
    async with aiohttp.ClientSession(headers=headers, timeout=timeout) as session:
        async with session.get(url) as resp:
            if resp.status != 200:
                raise RuntimeError(f"{url}: {resp.status} {await resp.text()}")
            async for chunk in resp.content.iter_chunked(1 << 16):
                lines += chunk.count(b"\n")
                size += len(chunk)
    return lines, size, time.perf_counter() - started


def raw_stream_rate(rows: int, line_bytes: int) -> float:
    """Rows per second of a raw aiohttp StreamResponse sending the same volume."""
    port = benchlib.free_port()
    proc = subprocess.Popen(
        [*benchlib._pin(0), sys.executable, "-c", RAW_STREAM, str(port), str(rows), str(line_bytes)]
    )
    try:
        benchlib.wait_http(f"http://127.0.0.1:{port}/")
        lines, _, seconds = asyncio.run(download(f"http://127.0.0.1:{port}/", {}))
        return lines / seconds
    finally:
        proc.terminate()
        proc.wait(10)


async def create_agent(base: str, key: str) -> str:
    headers = {"Authorization": f"Bearer {key}"}
    async with aiohttp.ClientSession(headers=headers) as session:
        async with session.post(f"{base}/api/v1/agents", json={"name": "Export bench"}) as resp:
            return (await resp.json())["data"]["id"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=int, default=100_000)
    parser.add_argument("--per-conversation", type=int, default=2)
    parser.add_argument("--formats", default="csv,jsonl")
    parser.add_argument("--runs", type=int, default=3, help="downloads per format")
    parser.add_argument("--samples", type=int, default=30, help="requests per list filter")
    parser.add_argument("--database", default="", help="a PostgreSQL URL (default: SQLite)")
    args = parser.parse_args()
    if args.database:
        os.environ["BENCH_DATABASE_URL"] = args.database
        os.environ.setdefault("AGENTSVC_SERVER_SECRET_KEY", "bench")  # as bench_all does
        benchlib.DATABASE_URL = args.database
    figures: dict[str, object] = {}
    violations: list[str] = []
    backend = "PostgreSQL" if benchlib.DATABASE_URL else "SQLite"
    with benchlib.service(UNLIMITED) as (base, tmp, config):
        key = benchlib.api_key(config)
        agent_id = asyncio.run(create_agent(base, key))
        database = benchlib.BenchDatabase(tmp / "data", config.read_text())
        if database.url:
            seconds = asyncio.run(
                fill_postgres(database.url, agent_id, args.messages, args.per_conversation)
            )
        else:
            seconds = fill_sqlite(
                tmp / "data" / "agentsvc.db", agent_id, args.messages, args.per_conversation
            )
        figures["backend"] = backend
        figures["messages written"] = f"{args.messages:,} in {seconds:.1f} s"
        pid = benchlib.server_pid(base)
        headers = {"Authorization": f"Bearer {key}"}
        formats = args.formats.split(",")
        runs: dict[str, list[tuple[int, int, float, float]]] = {fmt: [] for fmt in formats}
        base_url = f"{base}/api/v1/conversations/export?agentId={agent_id}"
        asyncio.run(download(base_url + "&q=nothingmatchesthisword", headers))  # warm the path
        # Formats interleaved, `--runs` cycles: the median rate is the figure (the machine is
        # shared; single runs swing), the highest RSS growth the memory figure.
        for _ in range(args.runs):
            for fmt in formats:
                before = benchlib.rss_mb(pid)
                with RssSampler(pid) as sampler:
                    lines, size, seconds = asyncio.run(
                        download(f"{base_url}&format={fmt}", headers)
                    )
                rows = lines - (1 if fmt == "csv" else 0)
                runs[fmt].append((rows, size, rows / seconds, sampler.peak - before))
        line_bytes = 0
        for fmt in formats:
            rows, size = runs[fmt][0][0], runs[fmt][0][1]
            rate = statistics.median(r[2] for r in runs[fmt])
            growth = max(r[3] for r in runs[fmt])
            line_bytes = line_bytes or size // max(1, rows)
            figures[f"{fmt}: rows"] = f"{rows:,} ({size / 2**20:.1f} MB)"
            figures[f"{fmt}: rows/s"] = (
                f"{rate:,.0f} median of {args.runs} (runs: "
                + ", ".join(f"{r[2]:,.0f}" for r in runs[fmt])
                + f"; target >= {TARGET_ROWS_PER_SECOND:,})"
            )
            figures[f"{fmt}: server RSS growth"] = (
                f"{growth:.1f} MB at most (target < {TARGET_RSS_MB:g})"
            )
            benchlib.record("export", f"{fmt} rows/s ({backend})", rate, "rows/s", ">= 50000")
            benchlib.record("export", f"{fmt} RSS growth ({backend})", growth, "MB", "< 30")
            if any(r[0] != args.messages for r in runs[fmt]):
                violations.append(f"{fmt}: {rows} rows exported, {args.messages} expected")
            if rate < TARGET_ROWS_PER_SECOND:
                violations.append(f"{fmt}: {rate:,.0f} rows/s")
            if growth >= TARGET_RSS_MB:
                violations.append(f"{fmt}: RSS grew {growth:.1f} MB")
        figures["server RSS"] = f"{benchlib.rss_mb(pid):.0f} MB after the exports"
        # The list's filters on the same data, one request at a time.
        lists = f"{base}/api/v1/conversations?agentId={agent_id}"
        for name, query in SEARCHES:
            p50, p99 = asyncio.run(timed_get(f"{lists}&{query}", headers, args.samples))
            figures[f"list {name}"] = f"p50 {p50:.1f} ms, p99 {p99:.1f} ms"
        figures["load average"] = " ".join(f"{x:.1f}" for x in os.getloadavg())
        raw = raw_stream_rate(args.messages, line_bytes)
        figures["raw aiohttp stream, same lines"] = f"{raw:,.0f} rows/s (the transport's ceiling)"
    return benchlib.print_report(
        figures,
        violations,
        f"{args.messages:,} messages exported at >= 50,000 rows/s with < 30 MB of RSS growth",
    )


if __name__ == "__main__":
    sys.exit(main())
