"""Benchmark: many concurrent /chat streams of the builtin model held by one process.

Starts `agentsvc serve` (temporary data directory, free port, pinned to core 0 when
possible), opens up to N concurrent public /chat streams (default 2,000) from this process
(pinned to core 1), arriving as a Poisson process over the ramp, and reports: peak open
streams and how many received deltas, the server's peak RSS, time to first delta p50/p99
against a /healthz round trip measured in the same run (target ratio <= 3), and deltas
per second. `--burst N` opens N streams at each arrival instead of one.

The builtin model is paced with `[chat] builtin_chunk_delay_ms` so streams stay open; the
public chat rate limit is raised for the run. Loopback only; bounded in count and time.

    python scripts/bench_chat.py [--streams 2000] [--delay-ms 300] [--ramp-seconds 8] [--burst 1]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import aiohttp
import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from agentsvc.llm.sse import SseParser  # noqa: E402
from scripts import benchlib  # noqa: E402
from scripts.benchlib import api_key, free_port, wait_http  # noqa: E402

TIME_LIMIT_SECONDS = 120.0
# Three long sentences that all share words with the question: a ~40-chunk answer.
PROMPT = " ".join(
    f"Bicycle fact {n}: our bicycle repair workshop fixes every bicycle brake, bicycle chain, "
    f"bicycle wheel, bicycle light and bicycle saddle quickly, carefully and affordably "
    f"for every rider in the city, whatever the weather and whatever the season."
    for n in range(1, 4)
)
QUESTION = "Can your workshop repair my bicycle brake, chain and wheel?"


def runqueue_wait_seconds(pid: int) -> float:
    """Time the process's threads spent runnable but waiting for a CPU (schedstat)."""
    total = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            total += int((task / "schedstat").read_text().split()[1])
        except (OSError, IndexError, ValueError):
            continue
    return total / 1e9


class Stats:
    def __init__(self) -> None:
        self.ttfd: list[float] = []
        self.open = 0
        self.peak_open = 0
        self.with_deltas = 0
        self.deltas = 0
        self.completed = 0
        self.failed = 0
        self.first_delta_at: float | None = None
        self.last_delta_at = 0.0
        self.healthz: list[float] = []
        self.healthz_fresh: list[float] = []


async def one_stream(session: aiohttp.ClientSession, url: str, agent_id: str, s: Stats) -> None:
    body = {"agentId": agent_id, "messages": [{"role": "user", "content": QUESTION}]}
    started = time.perf_counter()
    counted_open = False
    deltas = 0
    try:
        async with session.post(url, json=body) as resp:
            if resp.status != 200:
                s.failed += 1
                return
            parser = SseParser()
            async for chunk in resp.content.iter_any():
                for event in parser.feed(chunk):
                    if event.event == "message_start":
                        counted_open = True
                        s.open += 1
                        s.peak_open = max(s.peak_open, s.open)
                    elif event.event == "content_block_delta":
                        now = time.perf_counter()
                        if deltas == 0:
                            s.ttfd.append(now - started)
                            s.with_deltas += 1
                            s.first_delta_at = s.first_delta_at or now
                        deltas += 1
                        s.deltas += 1
                        s.last_delta_at = now
                    elif event.event == "message_stop":
                        s.completed += 1
                    elif event.event == "error":
                        s.failed += 1
    except aiohttp.ClientError:
        s.failed += 1
    finally:
        if counted_open:
            s.open -= 1


async def probe_healthz(session: aiohttp.ClientSession, url: str, s: Stats, stop: asyncio.Event):
    """GET /healthz every 20 ms: on one kept-alive connection, and on a new one each time
    (like a chat stream, which always needs a connection of its own)."""
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(force_close=True)) as fresh:
        while not stop.is_set():
            for client, samples in ((session, s.healthz), (fresh, s.healthz_fresh)):
                started = time.perf_counter()
                async with client.get(url) as resp:
                    await resp.read()
                samples.append(time.perf_counter() - started)
            await asyncio.sleep(0.02)


async def sample_rss(pid: int, peak: list[float], stop: asyncio.Event) -> None:
    while not stop.is_set():
        peak[0] = max(peak[0], benchlib.rss_mb(pid))
        await asyncio.sleep(0.1)


async def run(base: str, agent_id: str, pid: int, streams: int, ramp: float, burst: int) -> None:
    stats = Stats()
    stop = asyncio.Event()
    peak_rss = [benchlib.rss_mb(pid)]
    idle_rss = peak_rss[0]
    connector = aiohttp.TCPConnector(limit=0, force_close=False)
    timeout = aiohttp.ClientTimeout(total=TIME_LIMIT_SECONDS)
    async with aiohttp.ClientSession(connector=connector, timeout=timeout) as session:
        # A baseline healthz round trip with nothing else going on.
        idle = Stats()
        idle_stop = asyncio.Event()
        probe = asyncio.create_task(probe_healthz(session, f"{base}/healthz", idle, idle_stop))
        await asyncio.sleep(1.0)
        idle_stop.set()
        await probe

        probes = [
            asyncio.create_task(probe_healthz(session, f"{base}/healthz", stats, stop)),
            asyncio.create_task(sample_rss(pid, peak_rss, stop)),
        ]
        started = time.perf_counter()
        server_cpu0, client_cpu0 = benchlib.cpu_seconds(pid), time.process_time()
        server_wait0 = runqueue_wait_seconds(pid)
        tasks = []
        arrivals = random.Random(20261122)
        for i in range(streams):
            tasks.append(
                asyncio.create_task(one_stream(session, f"{base}/api/v1/chat", agent_id, stats))
            )
            if ramp and i % burst == burst - 1:
                # Poisson arrivals at streams/ramp per second, as independent visitors
                # arrive (or groups of `burst` visitors arriving at the same instant).
                await asyncio.sleep(arrivals.expovariate(streams / ramp / burst))
        await asyncio.wait(tasks, timeout=TIME_LIMIT_SECONDS)
        elapsed = time.perf_counter() - started
        server_cpu = benchlib.cpu_seconds(pid) - server_cpu0
        server_wait = runqueue_wait_seconds(pid) - server_wait0
        client_cpu = time.process_time() - client_cpu0
        stop.set()
        await asyncio.gather(*probes, return_exceptions=True)

    stream_window = (stats.last_delta_at - (stats.first_delta_at or 0)) or 1.0
    h50, h99 = benchlib.percentile(stats.healthz, 50), benchlib.percentile(stats.healthz, 99)
    fresh = stats.healthz_fresh
    f50, f99 = benchlib.percentile(fresh, 50), benchlib.percentile(fresh, 99)
    t50, t99 = benchlib.percentile(stats.ttfd, 50), benchlib.percentile(stats.ttfd, 99)
    per_stream_kb = (peak_rss[0] - idle_rss) * 1024 / max(stats.peak_open, 1)
    print(f"streams requested            {streams}")
    print(f"peak open streams            {stats.peak_open}")
    print(f"streams that received deltas {stats.with_deltas}")
    print(f"completed / failed           {stats.completed} / {stats.failed}")
    print(
        f"server RSS idle / peak       {idle_rss:.1f} MB / {peak_rss[0]:.1f} MB "
        f"(~{per_stream_kb:.0f} KB per open stream)"
    )
    print(f"/healthz idle p50            {statistics.median(idle.healthz) * 1000:.2f} ms")
    print(f"/healthz kept-alive p50/p99  {h50 * 1000:.2f} / {h99 * 1000:.2f} ms (same run)")
    print(f"/healthz new conn. p50/p99   {f50 * 1000:.2f} / {f99 * 1000:.2f} ms (same run)")
    print(f"first delta p50/p99          {t50 * 1000:.2f} / {t99 * 1000:.2f} ms")
    print(f"ratio to kept-alive healthz  p50 {t50 / h50:.2f}   p99 {t99 / h99:.2f}")
    print(f"ratio to new-conn. healthz   p50 {t50 / f50:.2f}   p99 {t99 / f99:.2f}")
    print(
        f"deltas received              {stats.deltas} in {stream_window:.1f} s = "
        f"{stats.deltas / stream_window:.0f} deltas/s"
    )
    print(f"wall time                    {elapsed:.1f} s")
    benchlib.record(
        "chat",
        "streams open at once, all receiving deltas",
        min(stats.peak_open, stats.with_deltas),
        "streams",
        ">= 2000",
    )
    benchlib.record("chat", "server RSS at peak", peak_rss[0], "MB")
    benchlib.record("chat", "first delta / kept-alive /healthz, p50", t50 / h50, "x", "<= 3")
    benchlib.record("chat", "deltas per second", stats.deltas / stream_window, "deltas/s")
    print(
        f"CPU busy                     server {server_cpu / elapsed:.0%} of a core, "
        f"this client {client_cpu / elapsed:.0%} "
        f"(machine load average {os.getloadavg()[0]:.1f})"
    )
    print(
        f"server waiting for a CPU     {server_wait:.1f} s over the run "
        f"({server_wait / max(server_cpu, 1e-9):.1f} s per CPU second used)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--streams", type=int, default=2000)
    parser.add_argument("--delay-ms", type=float, default=300.0, help="builtin chunk delay")
    parser.add_argument("--ramp-seconds", type=float, default=8.0)
    parser.add_argument(
        "--burst", type=int, default=1, help="streams opened at the same instant (default 1)"
    )
    parser.add_argument("--no-pin", action="store_true", help="let both processes float")
    args = parser.parse_args()
    streams = max(1, min(args.streams, 5000))
    pin = not args.no_pin and hasattr(os, "sched_setaffinity") and (os.cpu_count() or 1) > 1
    if pin:
        os.sched_setaffinity(0, {1})
    with tempfile.TemporaryDirectory() as tmp:
        port = free_port()
        config = Path(tmp) / "bench.toml"
        affinity = "cpu_affinity = [0]" if pin else ""
        config.write_text(
            f'[server]\ndata_dir = "{tmp}/data"\nport = {port}\n{affinity}\n'
            f"[ratelimit]\npublic_chat_per_minute = 10000000\n"
            f"[chat]\nbuiltin_chunk_delay_ms = {args.delay_ms}\n"
            # Every stream comes from this one client address.
            f"max_public_streams_per_ip = {args.streams + 100}\n" + benchlib.database_toml()
        )
        env = {**os.environ, "AGENTSVC_CONFIG": str(config), "AGENTSVC_LOG_LEVEL": "WARNING"}
        proc = subprocess.Popen([sys.executable, "-m", "agentsvc", "serve"], env=env)
        try:
            base = f"http://127.0.0.1:{port}"
            wait_http(f"{base}/healthz")
            key = api_key(config)
            req = urllib.request.Request(
                f"{base}/api/v1/agents",
                data=orjson.dumps({"name": "Bench", "systemPrompt": PROMPT}),
                headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json"},
                method="POST",
            )
            agent_id = orjson.loads(urllib.request.urlopen(req, timeout=10).read())["data"]["id"]
            print(
                f"builtin chunk delay {args.delay_ms:g} ms, ramp {args.ramp_seconds:g} s "
                f"(Poisson arrivals, {args.burst} at a time)"
            )
            # The client's own collector pauses would show up as server latency.
            gc.collect()
            gc.freeze()
            gc.set_threshold(50_000, 20, 10)
            asyncio.run(run(base, agent_id, proc.pid, streams, args.ramp_seconds, args.burst))
        finally:
            proc.terminate()
            proc.wait(30)


if __name__ == "__main__":
    main()
