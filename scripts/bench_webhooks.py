"""Benchmark: what event webhooks cost chat, for teams without webhooks and with them.

1. In process: the work a chat turn does for events when its team has no webhook (two
   `Emitter.for_team` lookups and three `emit` calls), timed over many turns.
2. End to end: one `agentsvc serve` (pinned to core 0), two teams with the same agent:
   `quiet` (no webhook) and `hooked` (a webhook for every event type, answered by a local
   receiver). A closed loop of concurrent clients (pinned to core 1) sends complete /chat
   turns (builtin model) for each team in turn, cycles interleaved; medians of turns/s and
   latency, with a raw aiohttp hello-world measured in the same run for scale.
3. `--baseline DIR`: the `quiet` load also against `agentsvc serve` run from another
   checkout (e.g. the main branch before event webhooks), interleaved, for before/after.

    python scripts/bench_webhooks.py [--seconds 4] [--cycles 3] [--clients 16] \
        [--baseline /work/main]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import aiohttp
from aiohttp import web

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from scripts import benchlib  # noqa: E402

EXTRA = (
    '[plans]\ndefault = "bench"\n[plans.bench]\n'
    "[ratelimit]\npublic_chat_per_minute = 100000000\n"
    "[chat]\nmax_public_streams_per_ip = 100000\n"
    "[outbound]\nallow_private = true\n"
    "[webhooks]\nretry_schedule_seconds = [0]\ntimeout_seconds = 5\n"
)
EVENTS = [
    "conversation.created",
    "message.created",
    "feedback.created",
    "form.submitted",
    "conversation.handoff",
    "conversation.assigned",
    "conversation.released",
    "conversation.closed",
    "conversation.reopened",
]
QUESTION = "When do you open on Saturdays?"
PROMPT = "We open at nine on Saturdays and close at six. Parcels ship within a day."


# ── 1. in process ──────────────────────────────────────────────────────────────────────


async def emit_cost(turns: int) -> float:
    """Nanoseconds of event work per chat turn for a team without webhooks."""
    from agentsvc.db.sqlite import SqliteDatabase
    from agentsvc.services.events.emitter import Emitter

    with tempfile.TemporaryDirectory() as tmp:
        db = SqliteDatabase(Path(tmp) / "bench.db")
        await db.open()
        try:
            emitter = Emitter(db)
            await emitter.for_team("team_quiet")  # the first event of the team loads it

            def data() -> dict:
                return {}

            started = time.perf_counter_ns()
            for _ in range(turns):
                # prepare_turn: conversation.created and message.created; the reply: one more.
                emission = await emitter.for_team("team_quiet")
                await emission.emit(None, "conversation.created", data, conversation_id="c")
                await emission.emit(None, "message.created", data, conversation_id="c")
                emission.sent()
                emission = await emitter.for_team("team_quiet")
                await emission.emit(None, "message.created", data, conversation_id="c")
                emission.sent()
            return (time.perf_counter_ns() - started) / turns
        finally:
            await db.close()


# ── 2. end to end ──────────────────────────────────────────────────────────────────────


class Receiver:
    """A local webhook receiver that answers 200 and counts what it got."""

    def __init__(self) -> None:
        self.count = 0
        self.runner: web.AppRunner | None = None
        self.url = ""

    async def start(self) -> None:
        async def hook(request: web.Request) -> web.Response:
            await request.read()
            self.count += 1
            return web.Response(text="ok")

        app = web.Application()
        app.router.add_post("/{tail:.*}", hook)
        self.runner = web.AppRunner(app, access_log=None)
        await self.runner.setup()
        site = web.TCPSite(self.runner, "127.0.0.1", 0)
        await site.start()
        self.url = f"http://127.0.0.1:{self.runner.addresses[0][1]}/events"

    async def close(self) -> None:
        if self.runner is not None:
            await self.runner.cleanup()


async def _call(session, method, url, key, body=None) -> dict:
    headers = {"Authorization": f"Bearer {key}"}
    async with session.request(method, url, json=body, headers=headers) as resp:
        data = await resp.json()
        if resp.status >= 300:
            raise RuntimeError(f"{method} {url}: {resp.status} {data}")
        return data


async def chat_load(base: str, key: str, agent_id: str, seconds: float, clients: int):
    """Complete /chat turns per second and (p50, p99) ms, closed loop."""
    latencies: list[float] = []
    errors = 0
    deadline = time.monotonic() + seconds
    body = {"agentId": agent_id, "messages": [{"role": "user", "content": QUESTION}]}
    headers = {"Authorization": f"Bearer {key}"}

    async def worker(session) -> None:
        nonlocal errors
        while time.monotonic() < deadline:
            started = time.perf_counter()
            async with session.post(f"{base}/api/v1/chat", json=body, headers=headers) as resp:
                raw = await resp.read()
                if resp.status != 200 or b"message_stop" not in raw:
                    errors += 1
            latencies.append(time.perf_counter() - started)

    connector = aiohttp.TCPConnector(limit=0)
    async with aiohttp.ClientSession(connector=connector) as session:
        await asyncio.gather(*(worker(session) for _ in range(clients)))
    latencies.sort()
    n = len(latencies)
    return n / seconds, latencies[n // 2] * 1000, latencies[int(n * 0.99)] * 1000, errors


async def setup_team(base: str, config: Path, email: str, hook_url: str | None):
    key = benchlib.api_key(config, email)
    async with aiohttp.ClientSession() as session:
        agent = await _call(
            session, "POST", f"{base}/api/v1/agents", key, {"name": "Shop", "systemPrompt": PROMPT}
        )
        if hook_url:
            await _call(
                session, "POST", f"{base}/api/v1/webhooks", key, {"url": hook_url, "events": EVENTS}
            )
    return key, agent["data"]["id"]


def baseline_service(checkout: Path):
    """`agentsvc serve` of another checkout on a temporary data directory."""
    tmp = tempfile.TemporaryDirectory()
    port = benchlib.free_port()
    config = Path(tmp.name) / "bench.toml"
    config.write_text(
        f'[server]\ndata_dir = "{tmp.name}/data"\nport = {port}\ncpu_affinity = [0]\n' + EXTRA
    )
    env = {
        **os.environ,
        "AGENTSVC_CONFIG": str(config),
        "AGENTSVC_LOG_LEVEL": "WARNING",
        "PYTHONPATH": str(checkout),
    }
    proc = subprocess.Popen([sys.executable, "-m", "agentsvc", "serve"], env=env, cwd=checkout)
    benchlib.wait_http(f"http://127.0.0.1:{port}/healthz")
    key = subprocess.run(
        [sys.executable, "-m", "agentsvc", "apikey", "create", "--email", "base@example.com"],
        env=env,
        cwd=checkout,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    return tmp, proc, f"http://127.0.0.1:{port}", key


async def agent_of(base: str, key: str) -> str:
    async with aiohttp.ClientSession() as session:
        agent = await _call(
            session, "POST", f"{base}/api/v1/agents", key, {"name": "Shop", "systemPrompt": PROMPT}
        )
    return agent["data"]["id"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=4.0)
    parser.add_argument("--cycles", type=int, default=3)
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--turns", type=int, default=200_000, help="in-process turns")
    parser.add_argument("--baseline", type=Path, help="another checkout to compare with")
    parser.add_argument("--no-hooked", action="store_true", help="only the team without")
    args = parser.parse_args()

    per_turn_ns = asyncio.run(emit_cost(args.turns))
    print(f"in process: event work per chat turn, team without webhooks: {per_turn_ns:.0f} ns")
    benchlib.record("webhooks", "event work per chat turn without webhooks", per_turn_ns, "ns")

    if hasattr(os, "sched_setaffinity") and (os.cpu_count() or 1) > 1:
        os.sched_setaffinity(0, {1})  # the load on the other core than the server
    with benchlib.hello_world() as hello_url:
        hello = benchlib.load(hello_url, seconds=3, connections=64)
    print(f"hello-world: {hello.rps:.0f} req/s (GET, for scale)")

    loop = asyncio.new_event_loop()
    receiver = Receiver()
    loop.run_until_complete(receiver.start())
    results: dict[str, list[tuple[float, float, float, int]]] = {}
    baseline = None
    try:
        with benchlib.service(EXTRA) as (base, data_dir, config):
            quiet = loop.run_until_complete(setup_team(base, config, "quiet@example.com", None))
            hooked = loop.run_until_complete(
                setup_team(base, config, "hooked@example.com", receiver.url)
            )
            targets = {"quiet (no webhook)": (base, *quiet), "hooked (9 events)": (base, *hooked)}
            if args.no_hooked:
                del targets["hooked (9 events)"]
            if args.baseline:
                baseline = baseline_service(args.baseline)
                _tmp, _proc, bbase, bkey = baseline
                agent_id = loop.run_until_complete(agent_of(bbase, bkey))
                targets["baseline checkout"] = (bbase, bkey, agent_id)
            # Warm-up: caches, the first connection of each team.
            for target in targets.values():
                loop.run_until_complete(chat_load(*target, 1.0, args.clients))
            outbox = benchlib.BenchDatabase(data_dir / "data", config.read_text())

            def drain() -> None:
                """Let the hooked team's deliveries finish: the next cycle starts idle."""
                deadline = time.monotonic() + 120
                while outbox.execute(
                    "SELECT COUNT(*) FROM webhook_deliveries WHERE status = 'pending'"
                )[0][0]:
                    if time.monotonic() > deadline:
                        raise RuntimeError("deliveries did not finish in 120 s")
                    loop.run_until_complete(asyncio.sleep(0.2))

            names = list(targets)
            drain()
            for cycle in range(args.cycles):
                order = names if cycle % 2 == 0 else names[::-1]
                for name in order:
                    # The server's CPU time per turn holds steady on a busy machine where
                    # turns/s does not (both servers are pinned to the same core).
                    pid = benchlib.server_pid(targets[name][0])
                    cpu_before = benchlib.cpu_seconds(pid)
                    result = loop.run_until_complete(
                        chat_load(*targets[name], args.seconds, args.clients)
                    )
                    turns = result[0] * args.seconds
                    cpu_us = (benchlib.cpu_seconds(pid) - cpu_before) / max(turns, 1) * 1e6
                    results.setdefault(name, []).append((*result, cpu_us))
                    drain()
    finally:
        if baseline is not None:
            tmp, proc, _, _ = baseline
            proc.terminate()
            proc.wait(30)
            tmp.cleanup()
        loop.run_until_complete(receiver.close())
        loop.close()

    print(
        f"\n{'team':24} {'turns/s':>9} {'p50 ms':>8} {'p99 ms':>8} {'errors':>7}"
        f" {'CPU µs/turn':>12} {'vs quiet':>9} {'CPU vs quiet':>13}"
    )
    quiet = results["quiet (no webhook)"]
    quiet_rps = statistics.median(r[0] for r in quiet)
    quiet_cpu = statistics.median(r[4] for r in quiet)
    for name, runs in results.items():
        rps = statistics.median(r[0] for r in runs)
        p50 = statistics.median(r[1] for r in runs)
        p99 = statistics.median(r[2] for r in runs)
        errors = sum(r[3] for r in runs)
        cpu = statistics.median(r[4] for r in runs)
        print(
            f"{name:24} {rps:9.0f} {p50:8.2f} {p99:8.2f} {errors:7d} {cpu:12.0f}"
            f" {rps / quiet_rps:9.0%} {cpu / quiet_cpu:13.0%}"
        )
        benchlib.record("webhooks", f"chat turns/s, {name}", rps, "turns/s")
        benchlib.record("webhooks", f"server CPU per chat turn, {name}", cpu, "µs")
    print(f"events received by the hooked team's receiver: {receiver.count}")


if __name__ == "__main__":
    main()
