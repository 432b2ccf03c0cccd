"""A write transaction holds only SQL (issue 29, item 1).

Schemas (a tool's inputSchema, an MCP server's listing) are checked before the write
transaction, in a worker thread, within the work budget of one tool input; the database
times every write transaction, warns past `[database] slow_write_ms` with where it was
opened, and the suite fails a test holding the writer over 100 ms (tests/conftest.py).
"""

from __future__ import annotations

import asyncio
import gc
import logging
import os
import threading
import time

import pytest

from agentsvc import cpu
from agentsvc.api import app_keys
from agentsvc.db import holds
from agentsvc.db.batcher import BATCH_HOLD_SECONDS
from agentsvc.services.tenant_input import schemas as tenant_schemas
from tests.support.accounts import bearer, new_api_key
from tests.support.chat import chat, new_agent, new_tool, user
from tests.support.errors import assert_error
from tests.support.fakes.mcp_server import FakeMcpServer

# It measures the machine (timings, memory, recovery): it runs alone (tests/conftest.py).
pytestmark = pytest.mark.needs_the_machine

HOSTILE_SCHEMA = {"type": "object", "anyOf": [{}] * 20_000}  # 60 KB of JSON
TOO_COMPLEX = "inputSchema: is too large or complex to check"


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]


class LoopWatch:
    """The longest the event loop went without running a 2 ms ticker (its longest stall).

    The objects that exist when it starts are frozen out of garbage collection meanwhile:
    the test process's heap (pytest, every module of the suite) is far larger than the
    service's, and a full collection of it alone pauses every thread ~300 ms on a busy
    machine."""

    def __init__(self) -> None:
        self.longest = 0.0
        self._task: asyncio.Task | None = None

    async def _tick(self) -> None:
        last = time.perf_counter()
        while True:
            await asyncio.sleep(0.002)
            now = time.perf_counter()
            self.longest = max(self.longest, now - last - 0.002)
            last = now

    def __enter__(self) -> LoopWatch:
        gc.freeze()
        self._task = asyncio.ensure_future(self._tick())
        return self

    def __exit__(self, *exc) -> None:
        assert self._task is not None
        self._task.cancel()
        gc.unfreeze()


@pytest.fixture
async def team(client):
    auth = bearer(await new_api_key(client, "hostile@example.com"))
    agent = await new_agent(client, auth)
    tool = await new_tool(client, auth, agent["id"], "lookup")
    return client, auth, agent["id"], tool["id"]


# ── the schema check: before the write, bounded ──────────────────────────────────────────


async def test_write_transaction_holds_only_sql_60kb_anyof_schema_via_put_is_refused_quickly(
    team,
):
    client, auth, _, tool_id = team
    started, cpu_started = time.perf_counter(), time.process_time()
    with LoopWatch() as loop:
        resp = await client.put(
            f"/api/v1/tools/{tool_id}", json={"inputSchema": HOSTILE_SCHEMA}, headers=auth
        )
    await assert_error(resp, 400, "VALIDATION_ERROR", TOO_COMPLEX)
    # Within the budget of one tool input (about 0.3 s of work), in a worker thread: the
    # event loop kept running meanwhile. The work is counted in CPU time (every thread of
    # the process; a busy machine stretches the wall clock, 5-7 s seen, not the work).
    assert time.process_time() - cpu_started < 3
    assert time.perf_counter() - started < 30
    assert loop.longest < 0.25, f"the event loop stalled {loop.longest * 1000:.0f} ms"
    resp = await client.get(f"/api/v1/tools/{tool_id}", headers=auth)
    assert (await resp.json())["inputSchema"] == {"type": "object", "properties": {}}


async def test_write_transaction_holds_only_sql_60kb_anyof_schema_via_post_is_refused(team):
    client, auth, agent_id, _ = team
    body = {
        "agentId": agent_id,
        "name": "hostile",
        "description": "A schema of 20,000 subschemas",
        "executionType": "mock",
        "mockResponse": "ok",
        "inputSchema": HOSTILE_SCHEMA,
    }
    resp = await client.post("/api/v1/tools", json=body, headers=auth)
    await assert_error(resp, 400, "VALIDATION_ERROR", TOO_COMPLEX)


async def test_write_transaction_holds_only_sql_a_schema_within_the_budget_is_accepted(team):
    client, auth, _, tool_id = team
    # 200 properties of three keywords each: far from the budget.
    properties = {f"p{i}": {"type": "string", "maxLength": 50} for i in range(200)}
    schema = {"type": "object", "properties": properties, "anyOf": [{}] * 100}
    resp = await client.put(f"/api/v1/tools/{tool_id}", json={"inputSchema": schema}, headers=auth)
    assert resp.status == 200, await resp.text()
    assert (await resp.json())["inputSchema"] == schema


def test_write_transaction_holds_only_sql_subschemas_naming_a_draft_keep_the_budget():
    # A subschema with its own `$schema` was validated by jsonschema's own class: Python's
    # backtracking `re` and no step counting (27 characters took 12 s).
    schema = {
        "type": "object",
        "properties": {
            "a": {
                "$schema": "https://json-schema.org/draft/2020-12/schema",
                "type": "string",
                "pattern": "^(a+)+$",
            }
        },
    }
    tenant_schemas.check_schema(schema)
    started = time.process_time()
    problems = tenant_schemas.validation_errors(schema, {"a": "a" * 40 + "!"})
    assert time.process_time() - started < 1
    assert problems == [f"a: {'a' * 40 + '!'!r} does not match '^(a+)+$'"]


# ── MCP listings: the same budget, outside the write ─────────────────────────────────────


@pytest.fixture
def mcp_server():
    """The fake MCP server on an event loop of its own thread, so that its own work
    (serializing a listing of 720 KB) is not taken for the service's."""
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    server = asyncio.run_coroutine_threadsafe(FakeMcpServer().start(), loop).result(30)
    yield server
    asyncio.run_coroutine_threadsafe(server.close(), loop).result(30)
    loop.call_soon_threadsafe(loop.stop)
    thread.join(10)
    loop.close()


def hostile_tools(count: int) -> dict:
    return {f"tool_{i}": (f"Hostile tool {i}", HOSTILE_SCHEMA) for i in range(count)}


async def test_write_transaction_holds_only_sql_mcp_refresh_of_12_hostile_tools(team, mcp_server):
    client, auth, agent_id, _ = team
    body = {
        "agentId": agent_id,
        "name": "shop",
        "description": "The shop's MCP server",
        "executionType": "mcp",
        "mcpUrl": mcp_server.url,
    }
    resp = await client.post("/api/v1/tools", json=body, headers=auth)
    assert resp.status == 201, await resp.text()
    tool = await resp.json()
    mcp_server.tools = hostile_tools(12)
    held: list[float] = []
    stop = holds.watch(0.0, lambda seconds, cpu, where: held.append(seconds))
    try:
        started = time.perf_counter()
        with LoopWatch() as loop:
            resp = await client.post(f"/api/v1/tools/{tool['id']}/refresh", headers=auth)
        took = time.perf_counter() - started
    finally:
        stop()
    await assert_error(resp, 400, "VALIDATION_ERROR", "cannot be offered")
    assert TOO_COMPLEX in (await resp.json())["error"]["message"]
    # The listing was fetched and checked in worker threads, its schemas within their
    # budget. The SDK's one validation of the 720 KB listing holds the GIL in C (pydantic)
    # for a few hundred ms on a busy machine; before, the loop stalled 5-7 s here.
    assert took < 25  # within the MCP timeout (30 s), on a machine busy with other tests
    assert loop.longest < 1.5, f"the event loop stalled {loop.longest * 1000:.0f} ms"
    assert all(seconds < 0.1 for seconds in held), held
    # The same listing in the tool editor's checklist: each tool says why it cannot be used.
    resp = await client.post(
        "/api/v1/tools/mcp-preview", json={"mcpUrl": mcp_server.url}, headers=auth
    )
    assert resp.status == 200, await resp.text()
    problems = [t["problem"] for t in await resp.json()]
    assert len(problems) == 12
    assert all(TOO_COMPLEX in p or "together are too large" in p for p in problems), problems
    assert TOO_COMPLEX in problems[0]


async def test_write_transaction_holds_only_sql_mcp_listing_within_budget_is_stored(
    team, mcp_server
):
    client, auth, agent_id, _ = team
    properties = {f"p{i}": {"type": "string", "description": f"Field {i}"} for i in range(30)}
    schema = {"type": "object", "properties": properties}
    mcp_server.tools = {f"tool_{i}": (f"Tool {i}", schema) for i in range(12)}
    body = {
        "agentId": agent_id,
        "name": "shop",
        "description": "The shop's MCP server",
        "executionType": "mcp",
        "mcpUrl": mcp_server.url,
    }
    resp = await client.post("/api/v1/tools", json=body, headers=auth)
    assert resp.status == 201, await resp.text()
    tool = await resp.json()
    assert len(tool["mcpServerTools"]) == 12
    resp = await client.post(f"/api/v1/tools/{tool['id']}/refresh", headers=auth)
    assert resp.status == 200, await resp.text()


# ── the clock on the writer ──────────────────────────────────────────────────────────────


async def test_write_transaction_holds_only_sql_a_slow_write_logs_one_warning_with_its_place(
    make_client, caplog
):
    client = await make_client(database={"slow_write_ms": 20})
    db = client.app[app_keys.db_key]
    caplog.set_level(logging.WARNING, logger="agentsvc.db.holds")
    async with db.write() as tx:  # the line the warning names
        line = _line() - 1
        await tx.fetchval("SELECT 1")
        await asyncio.sleep(0.04)
    async with db.write() as tx:
        await tx.fetchval("SELECT 1")
    warnings = [r.getMessage() for r in caplog.records if r.name == "agentsvc.db.holds"]
    assert len(warnings) == 1, warnings
    assert f"(opened at tests/test_write_holds.py:{line};" in warnings[0]
    assert "over [database] slow_write_ms = 20" in warnings[0]


async def test_write_transaction_holds_only_sql_a_slow_batch_names_its_slowest_unit(
    make_client, caplog
):
    client = await make_client(database={"slow_write_ms": 20})
    db = client.app[app_keys.db_key]
    caplog.set_level(logging.WARNING, logger="agentsvc.db.holds")

    async def quick(tx):
        return await tx.fetchval("SELECT 1")

    async def dawdling(tx):
        await asyncio.sleep(0.04)
        return await tx.fetchval("SELECT 2")

    assert await asyncio.gather(db.write_batched(quick), db.write_batched(dawdling)) == [1, 2]
    warnings = [r.getMessage() for r in caplog.records if r.name == "agentsvc.db.holds"]
    assert len(warnings) == 1, warnings
    assert "tests/test_write_holds.py:" in warnings[0]
    assert "dawdling)" in warnings[0]


async def test_write_transaction_holds_only_sql_a_burst_of_batched_writes_is_cut_in_turns(
    client,
):
    # A hundred streams ending at once queue a hundred small writes: one transaction stops
    # taking them after BATCH_HOLD_SECONDS, the rest go first in the next; none is lost and
    # each caller gets its own result.
    db = client.app[app_keys.db_key]
    batcher = db._batcher  # noqa: SLF001
    batches_before = batcher.batches

    def unit(n: int):
        async def write(tx):
            busy_until = time.perf_counter() + 0.002  # a few statements' worth of work
            while time.perf_counter() < busy_until:
                pass
            return await tx.fetchval("SELECT ?", (str(n),))

        return write

    results = await asyncio.gather(*(db.write_batched(unit(n)) for n in range(60)))
    assert results == [str(n) for n in range(60)]
    # 120 ms of work in all, at most 20 ms (and one unit) per transaction.
    assert batcher.batches - batches_before >= 120 // (BATCH_HOLD_SECONDS * 1000 + 2)


async def test_write_transaction_holds_only_sql_the_suite_guard_sees_every_write(client):
    db = client.app[app_keys.db_key]
    seen: list[tuple[float, float, str]] = []
    stop = holds.watch(0.02, lambda *found: _ours(found) and seen.append(found))
    try:
        async with db.write() as tx:
            line = _line() - 1
            await tx.fetchval("SELECT 1")
            await asyncio.sleep(0.04)
        async with db.write() as tx:
            await tx.fetchval("SELECT 1")
    finally:
        stop()
    assert len(seen) == 1
    seconds, cpu, where = seen[0]
    assert 0.04 <= seconds < 0.1
    assert 0 <= cpu < seconds  # it slept: the process did little meanwhile
    assert where == f"tests/test_write_holds.py:{line}"
    assert holds._strictest[0] > 0.02  # stopped: the suite's own limit is back


async def test_write_transaction_holds_only_sql_the_guard_sees_cpu_work_inside_a_write(client):
    # What the suite fails a test for (over 100 ms, at least half of it working), at a
    # smaller scale: CPU work inside the transaction counts as the process working.
    db = client.app[app_keys.db_key]
    seen: list[tuple[float, float, str]] = []
    # 40 ms of work: the suite's own guard needs at least 50 (half its 100 ms), so however
    # long a busy machine stretches this hold, only the test's stricter watch sees it.
    stop = holds.watch(0.02, lambda *found: _ours(found) and seen.append(found))
    try:
        async with db.write() as tx:
            await tx.fetchval("SELECT 1")
            busy_until = time.process_time() + 0.04
            while time.process_time() < busy_until:
                pass
    finally:
        stop()
    assert len(seen) == 1
    seconds, cpu, _ = seen[0]
    assert cpu >= 0.035 and seconds >= cpu * 0.9


async def test_write_transaction_holds_only_sql_other_tasks_work_while_it_waits_is_not_its(client):
    # While the transaction's task waits on the database (each statement on a thread's
    # connection or on PostgreSQL), the loop runs other requests: their CPU is not work
    # done inside the transaction. (On PostgreSQL CI once failed a test opening ten
    # streams at once: 173 ms held, 94 ms of the loop's CPU, the other streams'.)
    db = client.app[app_keys.db_key]
    seen: list[tuple[float, float, str]] = []
    stop = holds.watch(0.02, lambda *found: _ours(found) and seen.append(found))

    def another_request() -> None:
        busy_until = time.thread_time() + 0.06
        while time.thread_time() < busy_until:
            pass

    try:
        async with db.write() as tx:
            asyncio.get_running_loop().call_soon(another_request)
            await tx.fetchval("SELECT 1")
    finally:
        stop()
    assert len(seen) == 1
    seconds, cpu, _ = seen[0]
    assert seconds >= 0.06 and cpu < 0.02, (seconds, cpu)


def _ours(found: tuple[float, float, str]) -> bool:
    """A hold of this test's own transaction: the app's scheduled jobs (a cluster job's
    claim, say) may write at the same moment, and a busy loop lengthens theirs too."""
    return found[2].startswith("tests/test_write_holds.py")


def _line() -> int:
    """The caller's line number."""
    import sys

    return sys._getframe(1).f_lineno


# ── measured: another team's chat while two teams loop the hostile update ────────────────


async def test_write_transaction_holds_only_sql_chat_stays_fast_while_two_teams_loop(client):
    hostile = []
    for n in range(2):
        auth = bearer(await new_api_key(client, f"hostile{n}@example.com"))
        agent = await new_agent(client, auth)
        hostile.append((auth, (await new_tool(client, auth, agent["id"], "lookup"))["id"]))
    chat_auth = bearer(await new_api_key(client, "chat@example.com"))
    agent = await new_agent(
        client, chat_auth, systemPrompt="We are open from nine to five on weekdays."
    )
    body = {"agentId": agent["id"], "messages": user("When are you open?")}

    async def one_chat() -> float:
        started = time.perf_counter()
        stream = await chat(client, body, chat_auth)
        assert "message_stop" in stream.names
        return time.perf_counter() - started

    for _ in range(3):  # warm up (the first turns load what they need)
        await one_chat()
    alone = [await one_chat() for _ in range(20)]
    stop = asyncio.Event()

    async def loop_updates(auth, tool_id) -> list[int]:
        statuses: list[int] = []
        while not stop.is_set() and len(statuses) < 20:
            resp = await client.put(
                f"/api/v1/tools/{tool_id}", json={"inputSchema": HOSTILE_SCHEMA}, headers=auth
            )
            statuses.append(resp.status)
        return statuses

    # The benchmark (scripts/bench_write_hold.py, separate processes) shows < 50 ms; here
    # the client shares the server's loop and the machine may be busy: 150 ms, or three
    # times the chat alone, whichever is more. A round another process's burst spoiled is
    # measured again (at most three): checks that held the loop would spoil every round.
    p99_alone = percentile(alone, 99)
    bound = max(0.150, 3 * p99_alone)
    rounds = []
    for _ in range(3):
        stop.clear()
        attackers = asyncio.gather(*(loop_updates(auth, tool_id) for auth, tool_id in hostile))
        await asyncio.sleep(0.2)  # both updates are being checked
        attacked = []
        for _ in range(60):
            attacked.append(await one_chat())
            await asyncio.sleep(0.01)
        stop.set()
        statuses = await attackers
        assert all(s and set(s) == {400} for s in statuses), statuses
        rounds.append(attacked)
        p99 = percentile(attacked, 99)
        print(f"chat p99 alone {p99_alone * 1000:.1f} ms, with the loops {p99 * 1000:.1f} ms")
        if p99 < bound:
            break
    assert p99 < bound, (alone, rounds)


# ── the workers' priority ────────────────────────────────────────────────────────────────


async def test_write_transaction_holds_only_sql_checks_lowest_mcp_exchanges_a_little_below():
    # Checks at the lowest priority (the loop first); an MCP exchange, which has a timeout,
    # 10 steps below the process: at nice 19 behind other processes' work it waited seconds
    # for a CPU while holding the GIL (agentsvc/cpu.py).
    own = os.getpriority(os.PRIO_PROCESS, 0)
    assert await cpu.run(os.getpriority, os.PRIO_PROCESS, 0) == 19
    exchange = await cpu.exchange(os.getpriority, os.PRIO_PROCESS, 0)
    assert exchange == min(19, own + cpu.EXCHANGE_NICER_BY)
    assert cpu.EXCHANGE_NICER_BY == 10
