"""Benchmark form submissions with webhook delivery, and the outbox drain rate.

Starts a loopback webhook receiver (its own process, on core 1) and `agentsvc serve`
(core 0, temporary data directory, limits raised), then:

1. submissions/s: a closed-loop asyncio client (core 1) posts form submissions for
   `--seconds`; each submission is stored with its outbox row and its webhook is delivered
   (signed) to the receiver before the answer. Reports req/s, p50/p99 latency, and checks
   that the receiver got every delivery.
2. outbox drain: with the receiver answering 503, `--backlog` submissions are made (their
   first attempt fails; the retry is an hour away). The server is stopped, the backlog is
   made due (as if the hour had passed), the receiver is fixed and a new server starts on
   the same database: start-up reschedules the backlog and the worker drains it. Reports
   deliveries/s from the new server being ready to the last delivery, and checks that
   every submission ended `webhook_success`.

Usage: python scripts/bench_forms.py [--seconds 5] [--connections 32] [--backlog 2000]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import benchlib  # noqa: E402

RECEIVER = """
import sys, time, uvloop
from aiohttp import web
state = {"ok": 0, "gate_refused": 0, "gate_ok": 0, "open": False, "last": 0.0}
async def ok(request):
    await request.read()
    state["ok"] += 1
    state["last"] = time.time()
    return web.json_response({"received": True})
async def gate(request):
    await request.read()
    if not state["open"]:
        state["gate_refused"] += 1
        return web.Response(status=503, text="down")
    state["gate_ok"] += 1
    state["last"] = time.time()
    return web.json_response({"received": True})
async def open_gate(request):
    state["open"] = True
    return web.json_response(state)
async def stats(request):
    return web.json_response(state)
app = web.Application()
app.router.add_post("/ok", ok)
app.router.add_post("/gate", gate)
app.router.add_post("/open", open_gate)
app.router.add_get("/stats", stats)
uvloop.install()
web.run_app(app, host="127.0.0.1", port=int(sys.argv[1]), print=None, access_log=None)
"""

CONFIG = """
[outbound]
allow_private = true
[ratelimit]
trigger_events_per_minute = 1000000000
form_submits_per_minute = 1000000000
[webhooks]
retry_schedule_seconds = [0, 3600]
timeout_seconds = 10
"""

FORM = {
    "fields": [
        {"name": "email", "label": "E-mail", "type": "email"},
        {"name": "name", "label": "Name", "type": "text"},
        {"name": "seats", "label": "Seats", "type": "number"},
    ]
}
FORM_DATA = {"email": "ada@example.com", "name": "Ada Lovelace", "seats": 3}


async def _json(session, method: str, url: str, **kw):
    async with session.request(method, url, **kw) as resp:
        body = await resp.json()
        if resp.status >= 400:
            raise RuntimeError(f"{method} {url}: {resp.status} {body}")
        return body


async def setup(base: str, key: str, receiver: str) -> dict[str, str]:
    """An agent with two webhook form tools: one to /ok, one to /gate."""
    import aiohttp

    auth = {"Authorization": f"Bearer {key}"}
    async with aiohttp.ClientSession() as s:
        agent = await _json(s, "POST", f"{base}/api/v1/agents", json={"name": "B"}, headers=auth)
        tools = {}
        for name in ("ok", "gate"):
            body = {
                "agentId": agent["data"]["id"],
                "name": f"form_{name}",
                "description": "bench form",
                "executionType": "form",
                "formSchema": FORM,
                "formWebhookUrl": f"{receiver}/{name}",
            }
            tool = await _json(s, "POST", f"{base}/api/v1/tools", json=body, headers=auth)
            tools[name] = tool["id"]
    return tools


async def submit_load(base: str, tool_id: str, seconds: float, connections: int, limit: int):
    """Closed loop: each worker submits, waits for the answer, submits again."""
    import aiohttp

    url = f"{base}/api/v1/form-submissions/submit"
    body = {"toolId": tool_id, "formData": FORM_DATA, "fieldsCompleted": list(FORM_DATA)}
    latencies: list[float] = []
    failures = 0
    deadline = time.monotonic() + seconds

    async def worker(session):
        nonlocal failures
        while time.monotonic() < deadline and len(latencies) < limit:
            start = time.perf_counter()
            async with session.post(url, json=body) as resp:
                result = await resp.json()
            latencies.append(time.perf_counter() - start)
            if resp.status != 200 or result["submissionId"] is None:
                failures += 1

    connector = aiohttp.TCPConnector(limit=connections)
    started = time.monotonic()
    async with aiohttp.ClientSession(connector=connector) as session:
        await asyncio.gather(*(worker(session) for _ in range(connections)))
    elapsed = time.monotonic() - started
    latencies.sort()
    n = len(latencies)
    return n / elapsed, latencies[n // 2] * 1000, latencies[int(n * 0.99)] * 1000, n, failures


def receiver_stats(receiver: str) -> dict:
    import json
    import urllib.request

    with urllib.request.urlopen(f"{receiver}/stats", timeout=5) as resp:
        return json.loads(resp.read())


def open_gate(receiver: str) -> None:
    import urllib.request

    urllib.request.urlopen(urllib.request.Request(f"{receiver}/open", method="POST"), timeout=5)


def serve(config: Path) -> subprocess.Popen:
    env = {**os.environ, "AGENTSVC_CONFIG": str(config), "AGENTSVC_LOG_LEVEL": "WARNING"}
    return subprocess.Popen([sys.executable, "-m", "agentsvc", "serve"], env=env)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=5)
    parser.add_argument("--connections", type=int, default=32)
    parser.add_argument("--backlog", type=int, default=2000)
    args = parser.parse_args()

    rport = benchlib.free_port()
    receiver_proc = subprocess.Popen(
        [*benchlib._pin(1), sys.executable, "-c", RECEIVER, str(rport)]
    )
    receiver = f"http://127.0.0.1:{rport}"
    with tempfile.TemporaryDirectory() as tmp:
        port = benchlib.free_port()
        base = f"http://127.0.0.1:{port}"
        config = Path(tmp) / "bench.toml"
        config.write_text(
            f'[server]\ndata_dir = "{tmp}/data"\nport = {port}\ncpu_affinity = [0]\n{CONFIG}'
            + benchlib.database_toml()
        )
        database = benchlib.BenchDatabase(Path(tmp) / "data", config.read_text())
        server = serve(config)
        try:
            benchlib.wait_http(f"{receiver}/stats")
            benchlib.wait_http(f"{base}/healthz")
            key = benchlib.api_key(config)
            tools = asyncio.run(setup(base, key, receiver))

            # 1. Submissions per second, each delivered during its request.
            rps, p50, p99, n, failures = asyncio.run(
                submit_load(base, tools["ok"], args.seconds, args.connections, 10**9)
            )
            delivered = receiver_stats(receiver)["ok"]
            print(f"{'submit + webhook delivery':34} {'req/s':>9} {'p50 ms':>8} {'p99 ms':>8}")
            print(f"{'':34} {rps:9.0f} {p50:8.2f} {p99:8.2f}")
            print(f"  {n} submissions, {failures} failed, {delivered} webhooks received")
            benchlib.record("forms", "submissions/s, webhook delivered in-request", rps, "req/s")

            # 2. The backlog: first attempts refused, then drained by a restarted server.
            b_rps, _, _, backlog, b_fail = asyncio.run(
                submit_load(base, tools["gate"], 600, args.connections, args.backlog)
            )
            refused = receiver_stats(receiver)["gate_refused"]
            print(
                f"backlog: {backlog} submissions at {b_rps:.0f}/s, {refused} first attempts refused"
            )
            server.terminate()
            server.wait(30)
            database.execute(
                "UPDATE form_deliveries SET next_attempt_at = '2000-01-01T00:00:00.000Z'"
                " WHERE status = 'pending'"
            )
            pending = database.execute(
                "SELECT COUNT(*) FROM form_deliveries WHERE status = 'pending'"
            )[0][0]
            open_gate(receiver)
            server = serve(config)
            benchlib.wait_http(f"{base}/healthz")
            ready = time.monotonic()
            deadline = ready + 300

            def still_pending() -> int:
                return database.execute(
                    "SELECT COUNT(*) FROM form_deliveries WHERE status = 'pending'"
                )[0][0]

            # Drained when every delivery is recorded as done in the database.
            while still_pending() and time.monotonic() < deadline:
                time.sleep(0.02)
            drain_seconds = time.monotonic() - ready
            stats = receiver_stats(receiver)
            done = database.execute(
                "SELECT COUNT(*) FROM form_submissions WHERE status = 'webhook_success'"
            )[0][0]
            print(
                f"outbox drain: {pending} pending deliveries recorded delivered "
                f"({stats['gate_ok']} received) {drain_seconds:.2f} s after the restarted "
                f"server was ready = {pending / drain_seconds:.0f}/s"
            )
            print(f"  submissions webhook_success: {done} of {n + backlog}; failures {b_fail}")
            benchlib.record("forms", "outbox drain after restart", pending / drain_seconds, "/s")
        finally:
            server.terminate()
            server.wait(30)
            receiver_proc.terminate()
            receiver_proc.wait(10)


if __name__ == "__main__":
    main()
