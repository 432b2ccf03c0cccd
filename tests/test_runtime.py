"""runtime.py: the app starts every part in order and stops them all, losing nothing."""

from __future__ import annotations

import asyncio
import logging

from aiohttp.test_utils import TestServer

from agentsvc import runtime
from agentsvc.api import app_keys
from agentsvc.app import create_app
from agentsvc.db import database_for
from agentsvc.store.trigger_events import TriggerEvent
from tests.support.settings import make_settings


def ours() -> set[asyncio.Task]:
    return {t for t in asyncio.all_tasks() if t is not asyncio.current_task()}


async def test_start_registers_every_part_and_job(tmp_path):
    settings = make_settings(tmp_path, auth={"invitation_sweep_seconds": 7})
    app = create_app(settings)
    async with TestServer(app):
        for key in (
            app_keys.db_key,
            app_keys.jobs_key,
            app_keys.tool_runner_key,
            app_keys.event_writer_key,
            app_keys.providers_key,
            app_keys.chat_streams_key,
            app_keys.indexer_key,
            app_keys.mailer_key,
            app_keys.deliverer_key,
            app_keys.emitter_key,
        ):
            assert key in app, key
        jobs = app[app_keys.jobs_key]
        assert jobs.running
        assert jobs.interval_of(runtime.EXPIRE_INVITATIONS_JOB) == 7
        assert jobs.interval_of(runtime.PRUNE_SESSIONS_JOB) == runtime.PRUNE_SESSIONS_SECONDS
        assert jobs.has(runtime.SWEEP_FILES_JOB)
        assert jobs.interval_of(runtime.RETENTION_JOB) == 3600
        names = {t.get_name() for t in asyncio.all_tasks()}
        assert {"database-upkeep", "trigger-event-writer"} <= names


async def test_stop_ends_every_background_task_and_counts_queued_events(tmp_path):
    settings = make_settings(tmp_path)
    before = ours()
    app = create_app(settings)
    server = TestServer(app)
    await server.start_server()
    db = app[app_keys.db_key]
    async with db.write() as tx:
        now = "2026-01-01T00:00:00.000Z"
        await tx.execute(
            "INSERT INTO users (id, email, name, created_at, updated_at)"
            " VALUES ('u', 'u@example.com', '', ?, ?)",
            (now, now),
        )
        await tx.execute(
            "INSERT INTO teams (id, name, owner_user_id, plan, created_at, updated_at)"
            " VALUES ('t', 'T', 'u', 'pro', ?, ?)",
            (now, now),
        )
        await tx.execute(
            "INSERT INTO agents (id, team_id, name, slug, model, temperature, system_prompt,"
            " created_at, updated_at) VALUES ('agent_a', 't', 'A', 'a', 'builtin', 0.7, '', ?, ?)",
            (now, now),
        )
        await tx.execute(
            "INSERT INTO triggers (id, agent_id, team_id, name, trigger_type, conditions,"
            " action_type, action_config, created_at, updated_at)"
            " VALUES ('trigger_t', 'agent_a', 't', 'T', 'time_on_page', '{}', 'open_chat',"
            " '{}', ?, ?)",
            (now, now),
        )
    writer = app[app_keys.event_writer_key]
    event = TriggerEvent("agent_a", "trigger_t", "T", "fired")
    pending = [writer.record(event) for _ in range(100)]  # queued, not yet written
    await server.close()  # cleanup: the writer drains, then the database closes
    assert all(f.done() and f.result() == "trigger_t" for f in pending)
    leftover = {t for t in ours() - before if not t.done()}
    assert leftover == set()
    again = database_for(settings)
    await again.open()
    try:
        count = await again.reader.fetchval("SELECT fired_count FROM triggers")
    finally:
        await again.close()
    assert count == 100


async def test_stop_ends_a_job_in_flight_quietly_before_the_database_closes(tmp_path, caplog):
    app = create_app(make_settings(tmp_path))
    server = TestServer(app)
    await server.start_server()
    jobs = app[app_keys.jobs_key]
    db = app[app_keys.db_key]
    started = asyncio.Event()
    seen: list[str] = []

    async def slow_sweep() -> None:
        started.set()
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            seen.append(str(await db.reader.fetchval("SELECT 1")))  # still open
            raise

    jobs.every("slow-sweep", 3600, slow_sweep, run_now=True)
    await asyncio.wait_for(started.wait(), 10)
    with caplog.at_level(logging.INFO):
        await server.close()
    assert seen == ["1"]
    assert [r for r in caplog.records if r.levelno >= logging.WARNING] == []
    assert not jobs.running
