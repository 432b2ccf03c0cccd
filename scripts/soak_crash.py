"""Crash-safety soak: SIGKILL the server again and again under form submissions and events.

Starts `agentsvc serve` on a temporary data directory and a flaky webhook receiver on
127.0.0.1 (it answers 500 to a fraction of deliveries, answers after a random pause of up
to `--receiver-delay-ms` so that kills cut some answers, and records every delivery with
its `webhook-id` on receipt). An agent gets a form tool delivering to the receiver
(short retry schedule) and a trigger. Then, at the same time:

- `--submissions` logical form submissions are posted (bounded concurrency, paced over
  `--seconds`); each is retried until the server answers 2xx (a request cut by a kill may
  still have been stored: that copy must be delivered too);
- trigger events are posted to `/triggers/event`, every 202 counted;
- every 1-3 s (random) the server is killed with SIGKILL and started again on the same
  database.

Then it waits (bounded) until every stored submission has been delivered and checks, from
the receiver's point of view: every accepted submission delivered at least once; all
deliveries of one `webhook-id` carry the same body, so dedupe by `webhook-id` leaves
exactly one per submission (duplicates are counted: delivery is at-least-once); no
delivery of an id the server never stored; every submission ends `webhook_success`; and
`GET /triggers/stats` counts at least every accepted (202) event and at most every event
sent. Prints a summary; exits 1 on any violation.

Usage: python scripts/soak_crash.py [--submissions 1000] [--seconds 40] [--concurrency 16]
"""

from __future__ import annotations

import argparse
import asyncio
import random
import sys
import tempfile
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import aiohttp
import orjson
from aiohttp import web

sys.path.insert(0, str(Path(__file__).resolve().parent))
import benchlib  # noqa: E402

FORM = {"fields": [{"name": "ref", "label": "Reference", "type": "text"}]}
# Many quick attempts: with a receiver failing 20% of the time, exhausting them is a
# one-in-millions event, so an undelivered submission means a lost one.
RETRY_SCHEDULE = [0, 0.5, 1, 1, 1, 2, 2, 2, 2, 2]
CONFIG = f"""
[outbound]
allow_private = true
[ratelimit]
trigger_events_per_minute = 1000000000
form_submits_per_minute = 1000000000
[webhooks]
retry_schedule_seconds = {RETRY_SCHEDULE}
timeout_seconds = 5
"""


@dataclass
class Receiver:
    """A webhook receiver that fails a fraction of deliveries and records all of them."""

    fail_rate: float
    rng: random.Random
    delay: float = 0.0  # answer after up to this many seconds: a kill may cut the answer
    # webhook-id -> list of (answered status, body bytes)
    seen: dict[str, list[tuple[int, bytes]]] = field(default_factory=lambda: defaultdict(list))
    mismatched: int = 0  # webhook-id header different from the body's submissionId
    missing_id: int = 0

    async def handle(self, request: web.Request) -> web.Response:
        body = await request.read()
        webhook_id = request.headers.get("webhook-id")
        if not webhook_id:
            self.missing_id += 1
            return web.Response(status=400)
        if orjson.loads(body).get("submissionId") != webhook_id:
            self.mismatched += 1
        status = 500 if self.rng.random() < self.fail_rate else 200
        # Recorded on receipt: a server killed before it reads the answer must send again.
        self.seen[webhook_id].append((status, body))
        if self.delay:
            await asyncio.sleep(self.rng.uniform(0, self.delay))
        return web.Response(status=status)

    def delivered(self) -> set[str]:
        return {wid for wid, hits in self.seen.items() if any(s == 200 for s, _ in hits)}


@dataclass
class Figures:
    accepted: dict[int, str] = field(default_factory=dict)  # logical seq -> submissionId
    submit_statuses: Counter = field(default_factory=Counter)
    submit_cut: int = 0  # requests with no answer (refused or cut by a kill)
    refusals: list[str] = field(default_factory=list)  # 4xx answers: stop that submission
    events_sent: int = 0
    events_accepted: int = 0
    event_statuses: Counter = field(default_factory=Counter)
    kills: int = 0
    restart_seconds: list[float] = field(default_factory=list)


async def _json(session, method, url, **kw):
    async with session.request(method, url, **kw) as resp:
        body = await resp.json()
        if resp.status >= 400:
            raise RuntimeError(f"{method} {url}: {resp.status} {body}")
        return body


async def _setup(base: str, key: str, receiver_url: str) -> tuple[str, str, dict]:
    auth = {"Authorization": f"Bearer {key}"}
    async with aiohttp.ClientSession(headers=auth) as s:
        agent = await _json(s, "POST", f"{base}/api/v1/agents", json={"name": "Soak"})
        agent_id = agent["data"]["id"]
        tool = await _json(
            s,
            "POST",
            f"{base}/api/v1/tools",
            json={
                "agentId": agent_id,
                "name": "soak_form",
                "description": "crash soak form",
                "executionType": "form",
                "formSchema": FORM,
                "formWebhookUrl": receiver_url,
            },
        )
        trigger = await _json(
            s,
            "POST",
            f"{base}/api/v1/triggers?agentId={agent_id}",
            json={
                "name": "Soak",
                "triggerType": "time_on_page",
                "conditions": {"timeOnPage": 5},
                "actionType": "open_chat",
                "actionConfig": {"message": "Hi"},
            },
        )
    return agent_id, tool["id"], trigger


async def _submit_all(base, tool_id, n, seconds, concurrency, figures: Figures) -> None:
    """Post n logical submissions paced over `seconds`; retry each until a 2xx answer."""
    url = f"{base}/api/v1/form-submissions/submit"
    gate = asyncio.Semaphore(concurrency)
    started = time.monotonic()

    async def one(session, seq: int) -> None:
        await asyncio.sleep(max(0.0, started + seconds * seq / n - time.monotonic()))
        async with gate:
            for attempt in range(10_000):
                payload = {
                    "toolId": tool_id,
                    "formData": {"ref": f"{seq}.{attempt}"},
                    "fieldsCompleted": ["ref"],
                }
                try:
                    async with session.post(url, json=payload) as resp:
                        figures.submit_statuses[resp.status] += 1
                        if resp.status < 300:
                            figures.accepted[seq] = (await resp.json())["submissionId"]
                            return
                        if resp.status < 500 and resp.status != 429:
                            figures.refusals.append(f"{resp.status} {await resp.text()}"[:300])
                            return  # the server refused this input: a bug of the soak
                        await resp.read()
                except (TimeoutError, aiohttp.ClientError):
                    figures.submit_cut += 1
                await asyncio.sleep(0.05)

    timeout = aiohttp.ClientTimeout(total=30)
    async with aiohttp.ClientSession(timeout=timeout) as session:
        await asyncio.gather(*(one(session, i) for i in range(n)))


async def _send_events(base, agent_id, trigger, stop: asyncio.Event, figures: Figures) -> None:
    """Post trigger events until told to stop, counting every 202."""
    url = f"{base}/api/v1/triggers/event"
    payload = {
        "agentId": agent_id,
        "triggerId": trigger["id"],
        "triggerName": trigger["name"],
        "triggerType": trigger["triggerType"],
        "actionType": trigger["actionType"],
        "eventType": "fired",
        "sessionId": "soak",
    }

    async def worker(session) -> None:
        while not stop.is_set():
            figures.events_sent += 1
            try:
                async with session.post(url, json=payload) as resp:
                    await resp.read()
                    figures.event_statuses[resp.status] += 1
                    if resp.status == 202:
                        figures.events_accepted += 1
            except (TimeoutError, aiohttp.ClientError):
                await asyncio.sleep(0.05)
            await asyncio.sleep(0.01)

    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=30)) as session:
        await asyncio.gather(*(worker(session) for _ in range(4)))


async def _killer(server, stop: asyncio.Event, rng, gap, max_kills, figures: Figures) -> None:
    """SIGKILL the server at random moments and start it again on the same database."""
    while not stop.is_set() and figures.kills < max_kills:
        try:
            await asyncio.wait_for(stop.wait(), rng.uniform(*gap))
            return
        except TimeoutError:
            pass
        server.kill()
        figures.kills += 1
        figures.restart_seconds.append(await asyncio.to_thread(server.start))


async def _stored(base: str, key: str, tool_id: str) -> dict[str, str]:
    """Every submission the server stored for the tool: id -> status."""
    out: dict[str, str] = {}
    auth = {"Authorization": f"Bearer {key}"}
    async with aiohttp.ClientSession(headers=auth) as s:
        offset = 0
        while True:
            url = f"{base}/api/v1/form-submissions?toolId={tool_id}&limit=100&offset={offset}"
            page = await _json(s, "GET", url)
            for sub in page["submissions"]:
                out[sub["id"]] = sub["status"]
            offset += len(page["submissions"])
            if not page["submissions"] or offset >= page["pagination"]["total"]:
                return out


async def soak(
    *,
    submissions: int = 1000,
    seconds: float = 40.0,
    concurrency: int = 16,
    kill_gap: tuple[float, float] = (1.0, 3.0),
    max_kills: int = 1000,
    min_kills: int = 1,
    fail_rate: float = 0.2,
    receiver_delay: float = 0.03,
    drain_timeout: float = 60.0,
    seed: int | None = None,
    spawn=None,
) -> tuple[dict, list[str]]:
    """Run the soak; return (figures, violations). `spawn` starts the server's processes
    (subprocess.Popen unless given: benchlib.ServerProcess)."""
    rng = random.Random(seed)
    receiver = Receiver(fail_rate, rng, receiver_delay)
    recv_app = web.Application()
    recv_app.router.add_post("/hook", receiver.handle)
    runner = web.AppRunner(recv_app, access_log=None)
    await runner.setup()
    recv_port = benchlib.free_port()
    await web.TCPSite(runner, "127.0.0.1", recv_port).start()
    figures = Figures()
    violations: list[str] = []
    started = time.monotonic()
    with tempfile.TemporaryDirectory() as tmp:
        port = benchlib.free_port()
        config = Path(tmp) / "soak.toml"
        config.write_text(f'[server]\ndata_dir = "{tmp}/data"\nport = {port}\n{CONFIG}')
        server = benchlib.ServerProcess(config, port, spawn=spawn)
        try:
            await asyncio.to_thread(server.start)
            key = await asyncio.to_thread(benchlib.api_key, config, "soak@example.com", spawn)
            base = server.base
            agent_id, tool_id, trigger = await _setup(
                base, key, f"http://127.0.0.1:{recv_port}/hook"
            )
            stop = asyncio.Event()
            killer = asyncio.ensure_future(_killer(server, stop, rng, kill_gap, max_kills, figures))
            events = asyncio.ensure_future(_send_events(base, agent_id, trigger, stop, figures))
            await _submit_all(base, tool_id, submissions, seconds, concurrency, figures)
            while figures.kills < min(min_kills, max_kills) and not killer.done():
                await asyncio.sleep(0.1)  # events keep flowing until the kills are done
            stop.set()
            await killer
            await events
            load_seconds = time.monotonic() - started

            # Drain: every stored submission (answered or not) must reach the receiver.
            deadline = time.monotonic() + drain_timeout
            while True:
                stored = await _stored(base, key, tool_id)
                pending = [sid for sid, st in stored.items() if st == "pending"]
                if not pending or time.monotonic() > deadline:
                    break
                await asyncio.sleep(0.25)
            async with aiohttp.ClientSession() as s:
                stats = await _json(
                    s,
                    "GET",
                    f"{base}/api/v1/triggers/stats?agentId={agent_id}",
                    headers={"Authorization": f"Bearer {key}"},
                )
        finally:
            server.stop()
            await runner.cleanup()

    accepted = set(figures.accepted.values())
    delivered = receiver.delivered()
    unanswered_stored = set(stored) - accepted
    duplicates = sum(
        max(0, sum(1 for s, _ in hits if s == 200) - 1) for hits in receiver.seen.values()
    )
    deliveries = sum(len(hits) for hits in receiver.seen.values())
    refused_by_receiver = sum(1 for h in receiver.seen.values() for s, _ in h if s != 200)
    inconsistent = [wid for wid, hits in receiver.seen.items() if len({b for _, b in hits}) > 1]
    counted = stats.get(trigger["id"], {}).get("firedCount", 0)

    if figures.refusals:
        violations.append(f"{len(figures.refusals)} submissions refused: {figures.refusals[:3]}")
    if len(figures.accepted) != submissions:
        violations.append(f"only {len(figures.accepted)}/{submissions} submissions accepted")
    if missing := accepted - set(stored):
        violations.append(f"{len(missing)} accepted submissions not stored: {sorted(missing)[:5]}")
    if undelivered := accepted - delivered:
        violations.append(
            f"{len(undelivered)} accepted submissions never delivered: {sorted(undelivered)[:5]}"
        )
    if unknown := set(receiver.seen) - set(stored):
        violations.append(f"{len(unknown)} deliveries of unknown ids: {sorted(unknown)[:5]}")
    if lost := set(stored) - delivered:
        violations.append(f"{len(lost)} stored submissions never delivered: {sorted(lost)[:5]}")
    if bad := {sid: st for sid, st in stored.items() if st != "webhook_success"}:
        violations.append(f"{len(bad)} submissions not webhook_success: {Counter(bad.values())}")
    if inconsistent:
        violations.append(f"{len(inconsistent)} webhook-ids delivered with different bodies")
    if receiver.mismatched or receiver.missing_id:
        violations.append(
            f"webhook-id header: {receiver.missing_id} missing, "
            f"{receiver.mismatched} different from submissionId"
        )
    if counted < figures.events_accepted:
        violations.append(
            f"trigger events: {figures.events_accepted} accepted (202) but only {counted} counted"
        )
    if counted > figures.events_sent:
        violations.append(f"trigger events: {counted} counted but only {figures.events_sent} sent")

    report = {
        "submissions accepted": len(figures.accepted),
        "submit answers": dict(sorted(figures.submit_statuses.items())),
        "submit requests refused or cut": figures.submit_cut,
        "stored without an answer (cut by a kill)": len(unanswered_stored),
        "kills (SIGKILL)": figures.kills,
        "restart to ready, s (mean/max)": (
            f"{sum(figures.restart_seconds) / len(figures.restart_seconds):.2f}"
            f"/{max(figures.restart_seconds):.2f}"
            if figures.restart_seconds
            else "-"
        ),
        "load phase, s": round(load_seconds, 1),
        "receiver deliveries (all)": deliveries,
        "receiver answered 500": refused_by_receiver,
        "distinct webhook-ids delivered": len(delivered),
        "duplicate 2xx deliveries (at-least-once)": duplicates,
        "trigger events sent": figures.events_sent,
        "trigger events accepted (202)": figures.events_accepted,
        "trigger event answers": dict(sorted(figures.event_statuses.items())),
        "trigger events counted (stats)": counted,
        "total, s": round(time.monotonic() - started, 1),
    }
    return report, violations


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--submissions", type=int, default=1000)
    parser.add_argument("--seconds", type=float, default=40.0, help="pace submissions over")
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--fail-rate", type=float, default=0.2)
    parser.add_argument("--receiver-delay-ms", type=float, default=30.0)
    parser.add_argument("--seed", type=int, default=None)
    args = parser.parse_args()
    report, violations = asyncio.run(
        asyncio.wait_for(
            soak(
                submissions=args.submissions,
                seconds=args.seconds,
                concurrency=args.concurrency,
                fail_rate=args.fail_rate,
                receiver_delay=args.receiver_delay_ms / 1000,
                seed=args.seed,
            ),
            timeout=180,
        )
    )
    return benchlib.print_report(
        report,
        violations,
        "every accepted submission delivered (deduped by webhook-id), every 202 counted",
    )


if __name__ == "__main__":
    sys.exit(main())
