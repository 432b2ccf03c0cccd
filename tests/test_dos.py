"""Denial of service check: every public endpoint is driven with pathological inputs while
`/healthz` is measured; its p99 stays under 50 ms and nothing answers 5xx (issue 15).

The service is a real `agentsvc serve` process; `/healthz` is measured by another process
(`PROBE`), so neither the load generator nor the test's own event loop adds to the latency
it sees. A handler that stalls the server's event loop (a backtracking pattern, a remote
`$ref` fetched with blocking urllib, a quadratic check) shows up as a slow /healthz.
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import time
from collections import Counter
from contextlib import contextmanager
from pathlib import Path

import aiohttp
import orjson
import pytest

# It measures the machine (timings, memory, recovery): it runs alone (tests/conftest.py).
pytestmark = pytest.mark.needs_the_machine

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
from benchlib import ServerProcess, api_key, free_port  # noqa: E402

from tests.support.warm import popen  # noqa: E402

HAMMER_SECONDS = 3.0
CONCURRENCY = 4
ATTEMPTS = 3
WARM_UP_SECONDS = 1.5
HEALTHZ_P99 = 0.050
QUIET_P99 = 0.010  # /healthz p99 of an idle server on a quiet machine is a few ms
EVIL = "^(a+)+$"
EVIL_TEXT = "a" * 9_999 + "!"  # 10,000 characters, the most a form text value may have

# Measures GET /healthz every 2 ms over one kept-alive connection for N seconds and prints
# the latencies (seconds) as JSON.
PROBE = """
import http.client, json, sys, time
host, port, seconds = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
conn = http.client.HTTPConnection(host, port, timeout=10)
out, deadline = [], time.monotonic() + seconds
while time.monotonic() < deadline:
    start = time.perf_counter()
    conn.request("GET", "/healthz")
    resp = conn.getresponse()
    resp.read()
    out.append(time.perf_counter() - start)
    assert resp.status == 200, resp.status
    time.sleep(0.002)
print(json.dumps(out))
"""


@contextmanager
def serve(tmp_path: Path):
    """`agentsvc serve` with the public rate limits lifted, so every request does its work."""
    port = free_port()
    config = tmp_path / "dos.toml"
    config.write_text(
        f'[server]\ndata_dir = "{tmp_path / "data"}"\nport = {port}\n'
        "[outbound]\nallow_private = true\n"
        "[ratelimit]\npublic_chat_per_minute = 1000000\ntrigger_events_per_minute = 1000000\n"
        "form_submits_per_minute = 1000000\n"
        "[chat]\nmax_public_streams_per_ip = 1000\n"
    )
    server = ServerProcess(config, port, spawn=popen)
    server.start()
    try:
        yield server.base, config
    finally:
        server.stop()


async def probe_healthz(base: str, seconds: float) -> list[float]:
    """Run PROBE in its own process; return its /healthz latencies."""
    host, port = base.removeprefix("http://").split(":")
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-c", PROBE, host, port, str(seconds), stdout=asyncio.subprocess.PIPE
    )
    out, _ = await proc.communicate()
    assert proc.returncode == 0
    return orjson.loads(out)


def p99(latencies: list[float]) -> float:
    return percentile(latencies, 0.99)


def deep(levels: int, inner: str = "{}") -> str:
    """`{"a": {"a": ...}}` as JSON text: JSON encoders refuse to nest this deep."""
    return '{"a": ' * levels + inner + "}" * levels


async def setup_tenant(http: aiohttp.ClientSession, auth: dict) -> dict:
    """An agent whose tools and form carry every pathological schema; ids to attack."""

    async def post(path: str, body: dict) -> dict:
        async with http.post("/api/v1" + path, json=body, headers=auth) as resp:
            assert resp.status in (200, 201), await resp.text()
            return await resp.json()

    agent = (await post("/agents", {"name": "Target"}))["data"]
    schemas = {
        "evil": {
            "type": "object",
            "properties": {"w": {"type": "string", "pattern": EVIL}},
            "patternProperties": {"^(b+)+$": {"type": "integer"}},
            "additionalProperties": False,
        },
        "uniq": {"type": "object", "properties": {"a": {"type": "array", "uniqueItems": True}}},
        "tree": {"type": "object", "properties": {"a": {"$ref": "#"}}},
    }
    for name, schema in schemas.items():
        await post(
            "/tools",
            {
                "agentId": agent["id"],
                "name": name,
                "description": f"The {name} tool",
                "executionType": "mock",
                "inputSchema": schema,
                "mockResponse": '{"ok": true}',
            },
        )
    fields = [
        {
            "name": f"f{i}",
            "label": f"Field {i}",
            "type": "text",
            "validation": {"pattern": {"value": EVIL}},
        }
        for i in range(20)
    ]
    form = await post(
        "/tools",
        {
            "agentId": agent["id"],
            "name": "signup",
            "description": "Sign up",
            "executionType": "form",
            "inputSchema": {"type": "object", "properties": {}},
            "formSchema": {"fields": fields},
            "formExecutionMode": "client",
            "formClientHandler": "onSignup",
        },
    )
    await post(
        f"/triggers?agentId={agent['id']}",
        {
            "name": "Checkout",
            "triggerType": "custom_event",
            "conditions": {"event": "checkout", "eventData": {"total": {"$gt": 10}}},
            "actionType": "show_form",
            "actionConfig": {"toolId": form["id"]},
        },
    )
    async with http.post(
        "/api/v1/form-submissions/submit",
        json={"toolId": form["id"], "formData": {"f0": "aaa"}, "fieldsCompleted": ["f0"]},
    ) as resp:
        submission_id = (await resp.json())["submissionId"]
    async with http.post(
        "/api/v1/chat",
        json={
            "agentId": agent["id"],
            "messages": [{"role": "user", "content": "hi"}],
            "sessionId": "s1",
        },
    ) as resp:
        first = (await resp.read()).split(b"\n")
    start = orjson.loads(next(line for line in first if b'"message_start"' in line)[6:])
    return {
        "agent": agent["id"],
        "form": form["id"],
        "submission": submission_id,
        "conversation": start["conversationId"],
        "message": start["messageId"],
    }


def attacks(t: dict) -> list[tuple[str, str, dict]]:
    """(method, path, request keyword arguments) for every public endpoint."""
    api = "/api/v1"

    def chat(content: str) -> dict:
        body = {"agentId": t["agent"], "messages": [{"role": "user", "content": content}]}
        return {"data": orjson.dumps(body), "headers": {"Content-Type": "application/json"}}

    def body(value) -> dict:
        return {"data": orjson.dumps(value), "headers": {"Content-Type": "application/json"}}

    def raw(text: str) -> dict:
        return {"data": text.encode(), "headers": {"Content-Type": "application/json"}}

    def with_deep(value: dict, levels: int = 900) -> dict:
        """`value` as JSON with its "DEEP" string replaced by an object nested `levels` deep."""
        data = orjson.dumps(value).replace(b'"DEEP"', deep(levels).encode())
        return {"data": data, "headers": {"Content-Type": "application/json"}}

    evil_input = {"w": EVIL_TEXT, "b" * 9_999 + "!": 1, "b" * 5_000: "x"}
    every_field = {f"f{i}": EVIL_TEXT for i in range(20)}
    many_fields = {f"x{i}": "y" for i in range(10_000)}
    return [
        # Chat: tenant patterns, quadratic uniqueItems, recursion, huge and deep bodies.
        ("POST", api + "/chat", chat("/tool evil " + orjson.dumps(evil_input).decode())),
        (
            "POST",
            api + "/chat",
            chat("/tool uniq " + orjson.dumps({"a": [{"k": i} for i in range(4000)]}).decode()),
        ),
        ("POST", api + "/chat", chat("/tool tree " + deep(60))),
        ("POST", api + "/chat", chat("/tool tree " + deep(1000))),
        ("POST", api + "/chat", chat("bikes " * 16_000)),
        ("POST", api + "/chat", chat("x" * 1_500_000)),
        ("POST", api + "/chat", raw('{"agentId": ' + deep(5000))),
        ("POST", api + "/chat", raw("[" * 100_000 + "]" * 100_000)),
        # Form submit: catastrophic patterns on every field, many fields, deep values.
        (
            "POST",
            api + "/form-submissions/submit",
            body({"toolId": t["form"], "formData": every_field, "fieldsCompleted": []}),
        ),
        (
            "POST",
            api + "/form-submissions/submit",
            body({"toolId": t["form"], "formData": many_fields, "fieldsCompleted": ["f0"] * 200}),
        ),
        (
            "POST",
            api + "/form-submissions/submit",
            with_deep({"toolId": t["form"], "fieldsCompleted": [], "formData": {"f0": "DEEP"}}),
        ),
        (
            "POST",
            api + "/form-submissions/submit",
            body({"toolId": t["form"], "formData": {"f1": "a" * 3_000_000}, "fieldsCompleted": []}),
        ),
        # Client result and form events: deep data, huge strings.
        (
            "POST",
            api + "/form-submissions/client-result",
            with_deep({"submissionId": t["submission"], "success": True, "data": "DEEP"}),
        ),
        (
            "POST",
            api + "/form-submissions/client-result",
            with_deep({"submissionId": t["submission"], "success": True, "data": "DEEP"}, 40),
        ),
        (
            "POST",
            api + "/form-submissions/client-result",
            body({"submissionId": t["submission"], "success": False, "message": "m" * 1_000_000}),
        ),
        (
            "POST",
            api + "/form-submissions/event",
            body({"toolId": t["form"], "eventType": "impression", "sessionId": "s" * 1_000_000}),
        ),
        # Trigger events and the widget's feeds.
        (
            "POST",
            api + "/triggers/event",
            with_deep(
                {
                    "agentId": t["agent"],
                    "triggerName": "Checkout",
                    "triggerType": "custom_event",
                    "actionType": "show_form",
                    "eventType": "fired",
                    "pagePath": "DEEP",
                }
            ),
        ),
        (
            "POST",
            api + "/triggers/event",
            body(
                {
                    "agentId": t["agent"],
                    "triggerName": "n" * 1_000_000,
                    "triggerType": "custom_event",
                    "actionType": "show_form",
                    "eventType": "fired",
                }
            ),
        ),
        ("GET", api + f"/triggers/widget/{t['agent']}", {}),
        ("GET", api + "/triggers/widget/" + "a" * 5000, {}),
        ("GET", api + f"/triggers/form/signup?agentId={t['agent']}", {}),
        ("GET", api + "/triggers/form/" + "s" * 5000 + f"?agentId={t['agent']}", {}),
        # The rest of the public surface.
        (
            "POST",
            api + f"/conversations/{t['conversation']}/feedback",
            {
                **body({"messageId": "m" * 1_000_000, "rating": "up"}),
                "headers": {"Content-Type": "application/json", "X-Session-Id": "s1"},
            },
        ),
        ("POST", api + "/auth/sign-in/email", body({"email": "a@b.co", "password": "p" * 100_000})),
        ("POST", api + "/auth/magic-link", body({"email": "e" * 1_000_000 + "@x.co"})),
        ("GET", api + "/auth/magic-link/verify?token=" + "t" * 4000, {}),
        ("POST", api + "/team/invitations/accept", body({"token": "t" * 1_000_000})),
        ("GET", api + "/setup", {}),
        ("POST", api + "/setup", raw(deep(900))),
        ("GET", api + "/auth/providers", {}),
        ("GET", api + "/auth/sign-in/github", {}),
        ("GET", api + "/auth/callback/github?code=x&state=" + "s" * 4000, {}),
        ("GET", api + "/openapi.json", {}),
        ("GET", "/widget.js", {}),
        ("GET", "/metrics", {}),
        ("GET", "/", {}),
    ]


async def hammer(base: str, plan: list[tuple[str, str, dict]], seconds: float) -> Counter:
    """Send the plan round-robin from CONCURRENCY workers; count (path, status)."""
    seen: Counter = Counter()
    deadline = time.monotonic() + seconds
    timeout = aiohttp.ClientTimeout(total=30)

    async def worker(offset: int, http: aiohttp.ClientSession) -> None:
        i = offset
        while time.monotonic() < deadline:
            method, path, kwargs = plan[i % len(plan)]
            i += 1
            async with http.request(method, path, allow_redirects=False, **kwargs) as resp:
                await resp.read()
                seen[(method, path.split("?")[0][:60], resp.status)] += 1

    async with aiohttp.ClientSession(base, timeout=timeout) as http:
        await asyncio.gather(*(worker(n * 5, http) for n in range(CONCURRENCY)))
    return seen


def describe(control: list[float], loaded: list[float], requests: int) -> str:
    return (
        f"healthz of the attacked server: p50 {statistics.median(loaded) * 1000:.1f} ms, "
        f"p99 {p99(loaded) * 1000:.1f} ms, max {max(loaded) * 1000:.1f} ms over {len(loaded)} "
        f"probes ({requests} attack requests); of the idle control server at the same time: "
        f"p50 {statistics.median(control) * 1000:.1f} ms, p99 {p99(control) * 1000:.1f} ms"
    )


def allowed_p99(control: list[float]) -> float:
    """HEALTHZ_P99, plus the machine's own noise when it is loaded (measured alongside)."""
    return HEALTHZ_P99 + max(0.0, p99(control) - QUIET_P99)


@pytest.mark.needs_both_cores
async def test_public_endpoints_under_pathological_load_keep_healthz_p99_under_50ms(tmp_path):
    reports = []
    (tmp_path / "control").mkdir()
    with serve(tmp_path) as (base, config), serve(tmp_path / "control") as (control_base, _):
        auth = {"Authorization": f"Bearer {api_key(config, spawn=popen)}"}
        async with aiohttp.ClientSession(base) as http:
            targets = await setup_tenant(http, auth)
        plan = attacks(targets)
        # The machine may be shared (CI runners, other test runs): an idle control server
        # is probed at the same time, and what its p99 shows beyond a quiet machine's is
        # machine noise, not this server's doing. A run is tried again when the noise
        # still wins; a handler that blocks the loop fails every attempt (before the
        # fixes, a 26-character form value stalled the server 2.3 s). The attack is played
        # once unmeasured first: what a new process does once (its first tenant patterns
        # compiled, first schemas checked, its database's pages read) is not what a
        # process under a standing attack does (on a slower machine it alone made the first
        # measured p99 20-40 ms worse).
        await hammer(base, plan, WARM_UP_SECONDS)
        for _ in range(ATTEMPTS):
            loaded, control, seen = await asyncio.gather(
                probe_healthz(base, HAMMER_SECONDS),
                probe_healthz(control_base, HAMMER_SECONDS),
                hammer(base, plan, HAMMER_SECONDS + 0.5),
            )
            failures = {key: n for key, n in seen.items() if key[2] >= 500}
            assert failures == {}, failures
            hit = {(method, path.split("?")[0][:60]) for method, path, _ in plan}
            assert hit == {(m, p) for m, p, _ in seen}, "every endpoint of the plan was driven"
            reports.append(describe(control, loaded, sum(seen.values())))
            print(reports[-1])
            if p99(loaded) < allowed_p99(control):
                break
    assert p99(loaded) < allowed_p99(control), reports


def percentile(latencies: list[float], share: float) -> float:
    ordered = sorted(latencies)
    return ordered[min(len(ordered) - 1, int(len(ordered) * share))]


async def test_healthz_stays_fast_while_20_catastrophic_submits_run(tmp_path):
    """Item 2: `^(a+)+$` against 10,000 characters, 20 submits at a time, for 1.5 s."""
    reports = []
    with serve(tmp_path) as (base, config):
        auth = {"Authorization": f"Bearer {api_key(config, spawn=popen)}"}
        async with aiohttp.ClientSession(base) as http:
            targets = await setup_tenant(http, auth)
            body = orjson.dumps(
                {"toolId": targets["form"], "formData": {"f0": EVIL_TEXT}, "fieldsCompleted": []}
            )

            async def submit(deadline: float, statuses: Counter) -> None:
                while time.monotonic() < deadline:
                    async with http.post(
                        "/api/v1/form-submissions/submit",
                        data=body,
                        headers={"Content-Type": "application/json"},
                    ) as resp:
                        statuses[resp.status] += 1
                        await resp.read()

            for _ in range(ATTEMPTS):  # a CPU-starved probe is tried again, as above
                statuses: Counter = Counter()
                probe = asyncio.ensure_future(probe_healthz(base, 1.5))
                deadline = time.monotonic() + 1.5
                await asyncio.gather(*(submit(deadline, statuses) for _ in range(20)))
                loaded = await probe
                # Each refused at once: the value does not match the pattern.
                assert set(statuses) == {400}, statuses
                reports.append(
                    f"{sum(statuses.values())} submits; healthz p50 "
                    f"{statistics.median(loaded) * 1000:.1f} ms, p90 "
                    f"{percentile(loaded, 0.9) * 1000:.1f} ms, max {max(loaded) * 1000:.1f} ms"
                )
                print(reports[-1])
                if percentile(loaded, 0.9) < 0.020:
                    break
    assert percentile(loaded, 0.9) < 0.020, reports
