"""Benchmark: one team's chat while two other teams loop a hostile tool update.

Usage: python scripts/bench_write_hold.py [--seconds 10] [--chats 300] [--hostile 2]

Starts `agentsvc serve` (temporary data directory, free port, pinned to core 0 when
possible) and a raw aiohttp hello-world pinned to the same core. Teams A and B each own a
mock tool and loop `PUT /tools/:id` with a 60 KB inputSchema (`{"type": "object",
"anyOf": [{}, {}, ... 20,000 times]}`) as fast as they are answered; team C meanwhile
sends one `POST /chat` (builtin model, the whole streamed reply read) after another. The
report: team C's chat p50/p99 alone and under the hostile loops, the hostile requests'
status and latency, the longest write transaction the service held (from its
`[database] slow_write_ms` warnings, set to 20 ms for the run) and the hello-world's
p50/p99 measured in the same run (their ratio holds on a busy machine where absolute
milliseconds do not). Target: team C's chat p99 < 50 ms under the hostile loops.
Loopback only; bounded in count and time.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import aiohttp

sys.path.insert(0, str(Path(__file__).resolve().parent))
import benchlib  # noqa: E402

HOSTILE_SCHEMA = {"type": "object", "anyOf": [{}] * 20_000}
QUESTION = "What are your opening hours?"
PROMPT = "We are open from nine to five on weekdays. Our opening hours on Saturday are 10-2."
SLOW_WRITE_MS = 20
EXTRA = (
    f"[database]\nslow_write_ms = {SLOW_WRITE_MS}\n"
    '[plans]\ndefault = "bench"\n[plans.bench]\n'
    "[ratelimit]\npublic_chat_per_minute = 1000000\n"
)
TARGET_P99_MS = 50.0


def post(base: str, path: str, key: str, body: dict) -> dict:
    request = urllib.request.Request(
        f"{base}/api/v1{path}",
        data=json.dumps(body).encode(),
        headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request) as resp:
        return json.loads(resp.read())


def setup_team(base: str, config: Path, email: str, with_tool: bool) -> tuple[str, str, str]:
    """A team (its owner's API key), an agent and, if asked, a mock tool: (key, agent, tool)."""
    key = benchlib.api_key(config, email)
    agent = post(base, "/agents", key, {"name": "Bench", "systemPrompt": PROMPT})["data"]["id"]
    tool = ""
    if with_tool:
        tool = post(
            base,
            "/tools",
            key,
            {
                "agentId": agent,
                "name": "lookup",
                "description": "Look something up",
                "executionType": "mock",
                "inputSchema": {"type": "object", "properties": {}},
                "mockResponse": "ok",
            },
        )["id"]
    return key, agent, tool


class Hostile:
    def __init__(self) -> None:
        self.statuses: dict[int, int] = {}
        self.latencies: list[float] = []


async def hostile_loop(base: str, key: str, tool: str, stop: asyncio.Event, h: Hostile) -> None:
    body = json.dumps({"inputSchema": HOSTILE_SCHEMA}).encode()
    headers = {"Authorization": f"Bearer {key}", "Content-Type": "application/json"}
    async with aiohttp.ClientSession() as http:
        while not stop.is_set():
            started = time.perf_counter()
            async with http.put(f"{base}/api/v1/tools/{tool}", data=body, headers=headers) as r:
                await r.read()
                h.statuses[r.status] = h.statuses.get(r.status, 0) + 1
            h.latencies.append((time.perf_counter() - started) * 1000)


async def chats(base: str, key: str, agent: str, count: int) -> list[float]:
    """`count` chats one after another (the whole reply read); latencies in ms."""
    body = {"agentId": agent, "messages": [{"role": "user", "content": QUESTION}]}
    headers = {"Authorization": f"Bearer {key}"}
    latencies = []
    async with aiohttp.ClientSession() as http:
        for _ in range(count):
            started = time.perf_counter()
            async with http.post(f"{base}/api/v1/chat", json=body, headers=headers) as resp:
                text = await resp.text()
                if resp.status != 200 or "message_stop" not in text:
                    raise RuntimeError(f"chat failed: {resp.status} {text[:200]}")
            latencies.append((time.perf_counter() - started) * 1000)
            await asyncio.sleep(0.005)
    return latencies


async def hellos(url: str, count: int) -> list[float]:
    latencies = []
    async with aiohttp.ClientSession() as http:
        for _ in range(count):
            started = time.perf_counter()
            async with http.get(url) as resp:
                await resp.read()
            latencies.append((time.perf_counter() - started) * 1000)
            await asyncio.sleep(0.005)
    return latencies


async def under_attack(base, hostile_teams, chat_team, chats_n, warmup) -> tuple[list, Hostile]:
    stop = asyncio.Event()
    h = Hostile()
    loops = [
        asyncio.create_task(hostile_loop(base, key, tool, stop, h))
        for key, _, tool in hostile_teams
    ]
    await asyncio.sleep(warmup)  # the hostile loops are under way
    try:
        latencies = await chats(base, chat_team[0], chat_team[1], chats_n)
    finally:
        stop.set()
        await asyncio.wait_for(asyncio.gather(*loops), 120)
    return latencies, h


def summary(latencies: list[float]) -> str:
    p50 = benchlib.percentile(latencies, 50)
    p99 = benchlib.percentile(latencies, 99)
    return f"p50 {p50:7.1f} ms  p99 {p99:7.1f} ms  max {max(latencies):7.1f} ms"


def longest_write(log_path: Path) -> tuple[float, int, str]:
    """(longest hold in ms, slow transactions, where the longest was opened) from the log."""
    found = re.findall(
        r"write transaction held the writer for (\d+) ms \(opened at ([^)]*)\)",
        log_path.read_text(errors="replace"),
    )
    if not found:
        return 0.0, 0, "-"
    ms, where = max(((int(m), w) for m, w in found), key=lambda f: f[0])
    return float(ms), len(found), where


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--chats", type=int, default=300, help="chats measured per phase")
    parser.add_argument("--hostile", type=int, default=2, help="teams looping the update")
    parser.add_argument("--warmup", type=float, default=2.0, help="seconds of loops first")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as logs:
        log_path = Path(logs) / "service.log"
        with (
            open(log_path, "w") as log_file,
            _service_logging_to(log_file),
            benchlib.service(EXTRA) as (base, _, config),
            benchlib.hello_world() as hello,
        ):
            teams = [
                setup_team(base, config, f"hostile{i}@example.com", True)
                for i in range(args.hostile)
            ]
            chat_team = setup_team(base, config, "chat@example.com", False)
            asyncio.run(chats(base, chat_team[0], chat_team[1], 20))  # warm up
            hello_alone = asyncio.run(hellos(hello + "/", args.chats))
            alone = asyncio.run(chats(base, chat_team[0], chat_team[1], args.chats))
            attacked, h = asyncio.run(under_attack(base, teams, chat_team, args.chats, args.warmup))
        held_ms, slow, where = longest_write(log_path)

    print(f"{'hello-world GET / (alone)':44} {summary(hello_alone)}")
    print(f"{'team C POST /chat alone':44} {summary(alone)}")
    print(f"{f'team C POST /chat, {args.hostile} teams looping the update':44} {summary(attacked)}")
    print(
        f"{'hostile PUT /tools/:id (60 KB anyOf)':44} {summary(h.latencies)}"
        f"  answers {dict(sorted(h.statuses.items()))}"
    )
    print(
        f"longest write transaction: {held_ms:.0f} ms ({slow} over {SLOW_WRITE_MS} ms;"
        f" opened at {where})"
    )
    p99 = benchlib.percentile(attacked, 99)
    hello_p99 = benchlib.percentile(hello_alone, 99)
    print(f"chat p99 under the loops / hello-world p99 alone: {p99 / hello_p99:.1f} x")
    benchlib.record("write hold", "chat p99 under hostile schema updates", p99, "ms", "< 50")
    benchlib.record("write hold", "longest write transaction", held_ms, "ms", "< 100")
    verdict = "ok" if p99 < TARGET_P99_MS else "OVER TARGET"
    print(f"target: chat p99 < {TARGET_P99_MS:.0f} ms under the loops: {verdict}")


class _service_logging_to:
    """Send the service's stderr (its log) to a file for the run (benchlib.service inherits
    this process's stderr)."""

    def __init__(self, file) -> None:
        self.file = file

    def __enter__(self):
        self.saved = os.dup(2)
        os.dup2(self.file.fileno(), 2)
        return self

    def __exit__(self, *exc) -> None:
        os.dup2(self.saved, 2)
        os.close(self.saved)


if __name__ == "__main__":
    main()
