"""Abrupt client disconnects on POST /chat: measured from outside, nothing may leak.

Starts `agentsvc serve` (temporary data directory; the builtin model paced so a reply
streams for about a second) and opens `--disconnects` public chat streams over raw TCP,
`--concurrency` at a time; each client reads until the first text delta and then drops
the connection (alternately a reset, SO_LINGER 0, and a plain close). The per-IP cap of
public streams is set to the concurrency, so a leaked slot would show up as 429s.

Measured from outside the server: open file descriptors (/proc/PID/fd), resident memory
(/proc/PID/status) and the `agentsvc_open_streams` gauge of `GET /metrics`, before, at
peak and after. Passes when, within `--settle` seconds, the gauge is back to 0, the
descriptors are back to the baseline, every client saw the stream start, and a full
chat still completes. Exits 1 otherwise.

Usage: python scripts/bench_disconnects.py [--disconnects 1000] [--concurrency 50]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import socket
import struct
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent))
import benchlib  # noqa: E402

PROMPT = "Bikes " + "bikes are great and bikes are fast. " * 60


def chat_body(agent_id: str, session: str) -> bytes:
    messages = [{"role": "user", "content": "bikes"}]
    return orjson.dumps({"agentId": agent_id, "sessionId": session, "messages": messages})


async def drop_mid_stream(
    host: str, port: int, body: bytes, reset: bool, hold: asyncio.Barrier | None = None
) -> int:
    """POST /chat over raw TCP, read until the first text delta, then drop the connection.

    Returns the HTTP status (-1: a 200 cut before its first delta). With `hold`, the
    stream stays open until every party of the barrier has got this far.
    """
    reader, writer = await asyncio.open_connection(host, port)
    head = (
        f"POST /api/v1/chat HTTP/1.1\r\nHost: {host}:{port}\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
    )
    writer.write(head.encode() + body)
    seen = b""
    try:
        while True:
            chunk = await reader.read(65536)
            if not chunk:
                break
            seen += chunk
            if not seen.startswith(b"HTTP/1.1 200") and b"\r\n\r\n" in seen:
                break
            if b"content_block_delta" in seen:
                break
        if hold is not None:
            await hold.wait()
    finally:
        if reset:
            sock = writer.get_extra_info("socket")
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        writer.transport.abort()
    match = re.match(rb"HTTP/1.1 (\d+)", seen)
    status = int(match.group(1)) if match else 0
    return status if status != 200 or b"content_block_delta" in seen else -1


def open_streams_gauge(base: str) -> float:
    """The agentsvc_open_streams gauge from GET /metrics."""
    text = urllib.request.urlopen(f"{base}/metrics", timeout=5).read().decode()
    match = re.search(r"^agentsvc_open_streams (\S+)$", text, re.MULTILINE)
    return float(match.group(1)) if match else float("nan")


def fd_count(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


async def full_chat(base: str, agent_id: str) -> bool:
    """A complete public chat: True when it ends with message_stop."""
    import aiohttp

    async with aiohttp.ClientSession() as s:
        async with s.post(f"{base}/api/v1/chat", data=chat_body(agent_id, "final")) as resp:
            text = await resp.text()
    return resp.status == 200 and "event: message_stop" in text


async def run(disconnects: int, concurrency: int, settle: float) -> tuple[dict, list[str]]:
    """Drive the disconnects against a fresh server; return (figures, violations)."""
    with tempfile.TemporaryDirectory() as tmp:
        port = benchlib.free_port()
        config = Path(tmp) / "bench.toml"
        config.write_text(
            f'[server]\ndata_dir = "{tmp}/data"\nport = {port}\n'
            "[ratelimit]\npublic_chat_per_minute = 1000000000\n"
            f"[chat]\nbuiltin_chunk_delay_ms = 20\nmax_public_streams_per_ip = {concurrency}\n"
        )
        server = benchlib.ServerProcess(config, port)
        server.start()
        try:
            return await _measure(server, config, disconnects, concurrency, settle)
        finally:
            server.stop()


async def _measure(server, config, disconnects, concurrency, settle):
    import aiohttp

    base, pid = server.base, server.proc.pid
    key = benchlib.api_key(config, "disconnects@example.com")
    async with aiohttp.ClientSession(headers={"Authorization": f"Bearer {key}"}) as s:
        async with s.post(
            f"{base}/api/v1/agents", json={"name": "Bikes", "systemPrompt": PROMPT}
        ) as resp:
            agent_id = (await resp.json())["data"]["id"]
    port = int(base.rsplit(":", 1)[1])

    # Warm-up: lazily created resources (threads, pools) exist before the baseline.
    for i in range(concurrency):
        await drop_mid_stream("127.0.0.1", port, chat_body(agent_id, f"warm{i}"), i % 2 == 0)
    await full_chat(base, agent_id)
    await _settled(base, pid, None, settle)
    fds_before, rss_before = fd_count(pid), benchlib.rss_mb(pid)

    statuses: dict[int, int] = {}
    peak = {"fds": fds_before, "streams": 0.0}
    done = asyncio.Event()

    async def sample() -> None:
        while not done.is_set():
            peak["fds"] = max(peak["fds"], fd_count(pid))
            streams = await asyncio.to_thread(open_streams_gauge, base)
            peak["streams"] = max(peak["streams"], streams)
            await asyncio.sleep(0.05)

    gate = asyncio.Semaphore(concurrency)

    async def one(i: int) -> None:
        async with gate:
            # The server frees a slot when it notices the drop (at its next write), so a
            # client reconnecting at once may briefly find the cap full: it retries.
            while True:
                status = await drop_mid_stream(
                    "127.0.0.1", port, chat_body(agent_id, f"s{i}"), i % 2 == 0
                )
                statuses[status] = statuses.get(status, 0) + 1
                if status != 429:
                    return
                await asyncio.sleep(0.02)

    sampler = asyncio.ensure_future(sample())
    started = time.perf_counter()
    await asyncio.gather(*(one(i) for i in range(disconnects)))
    elapsed = time.perf_counter() - started
    done.set()
    await sampler
    settled_in = await _settled(base, pid, fds_before, settle)
    fds_after, rss_after = fd_count(pid), benchlib.rss_mb(pid)
    gauge_after = open_streams_gauge(base)
    final_ok = await full_chat(base, agent_id)
    # No leaked slot: the IP can again hold as many streams at once as the cap allows.
    barrier = asyncio.Barrier(concurrency)
    slots = await asyncio.gather(
        *(
            drop_mid_stream("127.0.0.1", port, chat_body(agent_id, f"c{i}"), True, barrier)
            for i in range(concurrency)
        )
    )
    await _settled(base, pid, fds_before, settle)

    figures = {
        "disconnects": disconnects,
        "concurrency": concurrency,
        "client statuses (-1: cut before first delta)": dict(sorted(statuses.items())),
        "wall time, s": round(elapsed, 2),
        "disconnects/s": round(disconnects / elapsed),
        "open streams gauge (peak / after)": f"{peak['streams']:g} / {gauge_after:g}",
        "server fds (before / peak / after)": f"{fds_before} / {peak['fds']} / {fds_after}",
        "server RSS MB (before / after)": f"{rss_before:.1f} / {rss_after:.1f}",
        "settled in, s": "-" if settled_in is None else round(settled_in, 2),
        "full chat afterwards": "ok" if final_ok else "FAILED",
        f"{concurrency} streams at once afterwards (cap)": f"{slots.count(200)} opened",
    }
    violations = []
    if slots.count(200) != concurrency:
        violations.append(f"only {slots.count(200)}/{concurrency} slots free afterwards")
    if statuses.get(200, 0) != disconnects:
        violations.append(f"not every client saw its stream start: {statuses}")
    if gauge_after != 0:
        violations.append(f"open streams gauge is {gauge_after:g} after the disconnects")
    if fds_after > fds_before:
        violations.append(f"server fds {fds_after} > baseline {fds_before}: leaked connections")
    if not final_ok:
        violations.append("a full chat after the disconnects did not complete")
    return figures, violations


async def _settled(base: str, pid: int, fds: int | None, timeout: float) -> float | None:
    """Wait until no stream is open (and the fds are at most `fds`); return the seconds."""
    started = time.monotonic()
    while time.monotonic() - started < timeout:
        gauge = await asyncio.to_thread(open_streams_gauge, base)
        if gauge == 0 and (fds is None or fd_count(pid) <= fds):
            return time.monotonic() - started
        await asyncio.sleep(0.05)
    return None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--disconnects", type=int, default=1000)
    parser.add_argument("--concurrency", type=int, default=50)
    parser.add_argument("--settle", type=float, default=10.0)
    args = parser.parse_args()
    figures, violations = asyncio.run(
        asyncio.wait_for(run(args.disconnects, args.concurrency, args.settle), timeout=300)
    )
    return benchlib.print_report(figures, violations, "no stream, slot or connection left behind")


if __name__ == "__main__":
    sys.exit(main())
