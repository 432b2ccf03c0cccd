"""Several processes on one PostgreSQL database: two apps in this test stand for two
processes (each with its own caches, pool and listening connection).

Runs on the PostgreSQL side of the suite; the settings checks run on both.
"""

from __future__ import annotations

import asyncio
import time
from datetime import UTC, datetime, timedelta

import pytest

from agentsvc.api import app_keys
from agentsvc.config import ConfigError, load_settings
from agentsvc.db.migrations import (
    FIRST_POSTGRES_VERSION,
    POSTGRES_MIGRATIONS,
    UNDO_POSTGRES,
    schema_version,
)
from agentsvc.ids import iso
from agentsvc.store import job_runs
from tests.support import pg
from tests.support.accounts import bearer, new_api_key
from tests.support.settings import make_settings

postgres_only = pg.postgres_only


def test_a_database_url_requires_a_shared_secret_key(tmp_path):
    url = {"url": "postgresql://agentsvc@127.0.0.1:1/agentsvc"}
    with pytest.raises(ConfigError, match="server.secret_key: required with database.url"):
        load_settings(
            None, environ={}, overrides={"server": {"data_dir": str(tmp_path)}, "database": url}
        )
    # A key file copied from the SQLite instance is the other way to share it.
    (tmp_path / "secret.key").write_text("x")
    load_settings(
        None, environ={}, overrides={"server": {"data_dir": str(tmp_path)}, "database": url}
    )


@pytest.mark.parametrize("url", ["mysql://x/y", "sqlite:///data.db", "127.0.0.1:5432"])
def test_a_database_url_must_be_postgresql(tmp_path, url):
    with pytest.raises(ConfigError, match="database.url: must be empty .SQLite. or a postgresql"):
        load_settings(None, environ={"AGENTSVC_DATABASE_URL": url}, overrides={})


async def two_processes(aiohttp_client, tmp_path):
    settings = make_settings(tmp_path)
    first = await aiohttp_client(_app(settings))
    second = await aiohttp_client(_app(settings))
    return first, second


def _app(settings):
    from agentsvc.app import create_app

    return create_app(settings)


async def refused_within(client, headers: dict, seconds: float) -> float:
    started = time.monotonic()
    while time.monotonic() - started < seconds:
        resp = await client.get("/api/v1/agents", headers=headers)
        if resp.status == 401:
            return time.monotonic() - started
        await asyncio.sleep(0.01)
    raise AssertionError(f"still accepted after {seconds} s")


@postgres_only
async def test_a_revoked_key_is_refused_by_the_other_process_within_a_second(
    aiohttp_client, tmp_path
):
    first, second = await two_processes(aiohttp_client, tmp_path)
    key = await new_api_key(first)
    admin = bearer(await new_api_key(first))
    assert (await second.get("/api/v1/agents", headers=bearer(key))).status == 200  # cached
    listed = (await (await first.get("/api/v1/api-keys", headers=admin)).json())["data"]
    target = next(k for k in listed if key.endswith(k["last4"]))
    assert (await first.delete(f"/api/v1/api-keys/{target['id']}", headers=admin)).status == 200
    assert await refused_within(second, bearer(key), 1.0) < 1.0


@postgres_only
async def test_an_edited_agent_is_seen_by_the_other_process(aiohttp_client, tmp_path):
    first, second = await two_processes(aiohttp_client, tmp_path)
    auth = bearer(await new_api_key(first))
    created = await first.post("/api/v1/agents", json={"name": "Before"}, headers=auth)
    agent = (await created.json())["data"]
    assert (await second.get(f"/api/v1/agents/{agent['id']}", headers=auth)).status == 200
    resp = await first.patch(f"/api/v1/agents/{agent['id']}", json={"name": "After"}, headers=auth)
    assert resp.status == 200
    deadline = time.monotonic() + 1.0
    while True:
        seen = await (await second.get(f"/api/v1/agents/{agent['id']}", headers=auth)).json()
        if seen["data"]["name"] == "After":
            break
        assert time.monotonic() < deadline, seen
        await asyncio.sleep(0.01)


@postgres_only
async def test_a_lost_listening_connection_forgets_every_cache(aiohttp_client, tmp_path):
    first, second = await two_processes(aiohttp_client, tmp_path)
    auth = bearer(await new_api_key(first))
    created = await first.post("/api/v1/agents", json={"name": "Before"}, headers=auth)
    agent_id = (await created.json())["data"]["id"]

    async def name_seen() -> str:
        resp = await second.get(f"/api/v1/agents/{agent_id}", headers=auth)
        return (await resp.json())["data"]["name"]

    assert await name_seen() == "Before"
    async with first.app[app_keys.db_key].write() as tx:  # a change nobody announced
        await tx.execute("UPDATE agents SET name = 'After' WHERE id = ?", (agent_id,))
    assert await name_seen() == "Before"  # the second process's cache holds it
    # Cut the listening connections from the server's side: notifications may be lost
    # meanwhile, so once back a process forgets what it cached.
    async with first.app[app_keys.db_key].write() as tx:
        await tx.fetchval(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity"
            " WHERE query LIKE 'LISTEN%' AND pid <> pg_backend_pid()"
        )
    deadline = time.monotonic() + 5
    while await name_seen() != "After":
        assert time.monotonic() < deadline
        await asyncio.sleep(0.02)


@postgres_only
async def test_a_periodic_job_is_claimed_by_one_process_per_period(tmp_path):
    from agentsvc.db.postgres import PostgresDatabase

    url = pg.fresh_database_url()
    one, two = PostgresDatabase(url), PostgresDatabase(url)
    await one.open()
    await two.open()
    try:
        now = datetime.now(UTC)
        before = iso(now - timedelta(seconds=30))

        async def claim(db, at: datetime) -> bool:
            async with db.write() as tx:
                return await job_runs.claim(tx, "expire", iso(at), iso(at - timedelta(seconds=30)))

        results = await asyncio.gather(claim(one, now), claim(two, now))
        assert sorted(results) == [False, True]
        assert not await claim(two, now + timedelta(seconds=10))
        assert await claim(two, now + timedelta(seconds=31))
        assert before  # the period's start is half the job's interval back
    finally:
        await one.close()
        await two.close()


@postgres_only
async def test_batches_of_two_processes_taking_rows_in_opposite_orders_both_commit():
    """Two processes' batched writes take two rows in opposite orders (two conversations,
    a daily counter): PostgreSQL ends the deadlock by failing a unit of one batch, which is
    run again alone once its batch committed; nothing fails (the cluster test met it)."""
    from agentsvc.db.postgres import PostgresDatabase

    url = pg.fresh_database_url()
    one, two = PostgresDatabase(url), PostgresDatabase(url)
    await one.open()
    await two.open()
    try:
        async with one.write() as tx:
            await tx.execute("CREATE TABLE probe (id INTEGER PRIMARY KEY, n INTEGER NOT NULL)")
            await tx.execute("INSERT INTO probe VALUES (1, 0), (2, 0)")
        taken = {1: asyncio.Event(), 2: asyncio.Event()}

        def add(row: int, then_wait_for: int | None = None):
            async def unit(tx) -> None:
                await tx.execute("UPDATE probe SET n = n + 1 WHERE id = ?", (row,))
                if then_wait_for is not None:  # each batch holds its first row
                    taken[row].set()
                    await taken[then_wait_for].wait()

            return unit

        # Queued in one go, each pair is one batch: row 1 then 2, and row 2 then 1.
        await asyncio.wait_for(
            asyncio.gather(
                one.write_batched(add(1, then_wait_for=2)),
                one.write_batched(add(2)),
                two.write_batched(add(2, then_wait_for=1)),
                two.write_batched(add(1)),
            ),
            20,
        )
        rows = await one.reader.fetchall("SELECT id, n FROM probe ORDER BY id")
        assert [tuple(r) for r in rows] == [(1, 2), (2, 2)]
    finally:
        await one.close()
        await two.close()


async def _catalog(url: str) -> tuple[set, set]:
    import asyncpg

    conn = await asyncpg.connect(url)
    try:
        columns = await conn.fetch(
            "SELECT table_name, column_name, data_type, is_nullable, column_default"
            " FROM information_schema.columns WHERE table_schema = current_schema()"
        )
        indexes = await conn.fetch(
            "SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = current_schema()"
        )
    finally:
        await conn.close()
    schema = url.rsplit("search_path=", 1)[1]
    return (
        {tuple(r) for r in columns},
        {(r[0], r[1].replace(f"{schema}.", "")) for r in indexes},
    )


def test_every_postgresql_migration_has_its_undo():
    expected = set(range(FIRST_POSTGRES_VERSION + 1, schema_version() + 1))
    assert set(POSTGRES_MIGRATIONS) == expected
    assert set(UNDO_POSTGRES) == expected


@postgres_only
@pytest.mark.parametrize("version", range(FIRST_POSTGRES_VERSION, schema_version()))
async def test_a_postgresql_database_of_an_earlier_version_upgrades(tmp_path, version):
    import asyncpg

    from agentsvc.db.postgres import PostgresDatabase

    fresh, old = pg.fresh_database_url(), pg.fresh_database_url()
    for url in (fresh, old):
        db = PostgresDatabase(url)
        await db.open()
        await db.close()
    conn = await asyncpg.connect(old)
    for later in sorted((n for n in UNDO_POSTGRES if n > version), reverse=True):
        await conn.execute(UNDO_POSTGRES[later])
    await conn.execute("UPDATE schema_info SET version = $1", version)
    await conn.close()
    upgraded = PostgresDatabase(old)
    await upgraded.open()
    assert await upgraded.schema_version_now() == schema_version()
    await upgraded.close()
    assert await _catalog(old) == await _catalog(fresh)


@postgres_only
async def test_a_postgresql_database_of_version_10_upgrades_with_its_rows_counted(tmp_path):
    """Migration 11 on PostgreSQL: the same catalog as a new database, its stored ratings
    and daily figures filled in, its stored messages found by the search."""
    import asyncpg

    from agentsvc.db.postgres import PostgresDatabase

    fresh, old = pg.fresh_database_url(), pg.fresh_database_url()
    for url in (fresh, old):
        db = PostgresDatabase(url)
        await db.open()
        await db.close()
    conn = await asyncpg.connect(old)
    for later in sorted((n for n in UNDO_POSTGRES if n > 10), reverse=True):
        await conn.execute(UNDO_POSTGRES[later])
    await conn.execute("UPDATE schema_info SET version = 10")
    await conn.execute(
        "INSERT INTO users (id, email, created_at, updated_at) VALUES ('usr_1', 'a@b.c', 't', 't');"
        "INSERT INTO teams VALUES ('team_1', 'T', 'usr_1', 'pro', 't', 't');"
        "INSERT INTO agents (id, team_id, name, slug, model, temperature, created_at, updated_at)"
        " VALUES ('agt_1', 'team_1', 'A', 'a', 'builtin', 70, 't', 't');"
        "INSERT INTO conversations (id, agent_id, team_id, title, created_at, updated_at)"
        " VALUES ('conv_1', 'agt_1', 'team_1', 'Hi', '2026-03-01T10:00:00.000Z', 't');"
        "INSERT INTO messages (id, conversation_id, role, content, created_at) VALUES"
        " ('msg_1', 'conv_1', 'user', 'Where are my refunds?', '2026-03-01T10:00:00.000Z');"
        "INSERT INTO messages (id, conversation_id, role, content, rating, created_at) VALUES"
        " ('msg_2', 'conv_1', 'assistant', 'In five days.', 'down', '2026-03-01T10:00:01.000Z');"
    )
    await conn.close()
    upgraded = PostgresDatabase(old)
    await upgraded.open()
    try:
        assert await upgraded.schema_version_now() == schema_version()
        tx = upgraded.reader
        daily = await tx.fetchall("SELECT * FROM agent_daily")
        assert [tuple(r) for r in daily] == [("agt_1", "2026-03-01", 1, 1, 1, 0, 0, 1)]
        rated = await tx.fetchall("SELECT message_id, agent_id, rating FROM message_ratings")
        assert [tuple(r) for r in rated] == [("msg_2", "agt_1", "down")]
        found = await tx.fetchall(
            "SELECT id FROM messages"
            " WHERE to_tsvector('english'::regconfig, content) @@ to_tsquery('english', 'refund')"
        )
        assert [r[0] for r in found] == ["msg_1"]
    finally:
        await upgraded.close()
    assert await _catalog(old) == await _catalog(fresh)


@postgres_only
async def test_nobody_sees_a_members_email_address_stored_before_the_upgrade_on_postgresql():
    """Migration 12 on PostgreSQL (issue 29 item 9): stored replies and handoff events that
    named a member by their address name them by the display name, else the team's name;
    a team named after the whole address takes its local part; the audit log gains its
    list order."""
    import asyncpg

    from agentsvc.db.postgres import PostgresDatabase

    url = pg.fresh_database_url()
    db = PostgresDatabase(url)
    await db.open()
    await db.close()
    conn = await asyncpg.connect(url)
    for later in sorted((n for n in UNDO_POSTGRES if n > 11), reverse=True):
        await conn.execute(UNDO_POSTGRES[later])
    await conn.execute("UPDATE schema_info SET version = 11")
    await conn.execute(
        "INSERT INTO users (id, email, name, created_at, updated_at) VALUES"
        " ('usr_1', 'you@example.com', '', 't', 't'), ('usr_2', 'bo@example.com', 'Bo', 't', 't');"
        "INSERT INTO teams VALUES ('team_1', 'you@example.com''s team', 'usr_1', 'pro', 't', 't');"
        "INSERT INTO agents (id, team_id, name, slug, model, temperature, created_at, updated_at)"
        " VALUES ('agt_1', 'team_1', 'A', 'a', 'builtin', 70, 't', 't');"
        "INSERT INTO conversations (id, agent_id, team_id, title, created_at, updated_at)"
        " VALUES ('conv_1', 'agt_1', 'team_1', 'Hi', 't', 't');"
        "INSERT INTO messages (id, conversation_id, role, content, created_at, author_id,"
        " author_name) VALUES"
        " ('msg_1', 'conv_1', 'assistant', 'Hello', 't', 'usr_1', 'you@example.com'),"
        " ('msg_2', 'conv_1', 'assistant', 'Hi', 't', 'usr_2', 'bo@example.com');"
        "INSERT INTO conversation_events (conversation_id, team_id, agent_id, kind, status,"
        " assignee_id, assignee_name, inbox, created_at) VALUES"
        " ('conv_1', 'team_1', 'agt_1', 'status', 'human', 'usr_1', 'you@example.com', 1, 't');"
        "INSERT INTO audit_log (id, team_id, action, created_at) VALUES"
        " ('aud_b', 'team_1', 'agent.created', 't'), ('aud_a', 'team_1', 'agent.created', 't');"
    )
    await conn.close()
    upgraded = PostgresDatabase(url)
    await upgraded.open()
    try:
        tx = upgraded.reader
        assert await tx.fetchval("SELECT name FROM teams") == "Support"
        rows = await tx.fetchall("SELECT id, author_name FROM messages ORDER BY id")
        assert [tuple(r) for r in rows] == [("msg_1", "Support"), ("msg_2", "Bo")]
        assert await tx.fetchval("SELECT assignee_name FROM conversation_events") == "Support"
        order = await tx.fetchall("SELECT id FROM audit_log ORDER BY rowid")
        assert [r[0] for r in order] == ["aud_b", "aud_a"]
    finally:
        await upgraded.close()


@postgres_only
async def test_a_pooled_connection_keeps_its_settings_without_a_reset_on_release():
    """The pool runs no reset on a connection it takes back (a round trip saved on every
    read): nothing may leave session state on one. Maintenance has a connection of its own."""
    import asyncpg

    from agentsvc.db.postgres import PostgresDatabase

    db = PostgresDatabase(pg.fresh_database_url(), pool_size=1, statement_timeout_seconds=7)
    await db.open()
    try:
        async with db.maintenance() as tx:
            assert await tx.fetchval("SHOW statement_timeout") == "0"
        for _ in range(3):  # the pool's one connection, taken back each time
            assert await db.reader.fetchval("SHOW statement_timeout") == "7s"
        with pytest.raises(asyncpg.DivisionByZeroError):
            async with db.write() as tx:
                await tx.execute("INSERT INTO schema_info (version) VALUES (0)")
                await tx.fetchval("SELECT 1 / 0")
        assert await db.reader.fetchval("SELECT count(*) FROM schema_info") == 1
        assert await db.reader.fetchval("SELECT pg_current_xact_id_if_assigned()") is None
    finally:
        await db.close()


@postgres_only
async def test_reads_on_held_connections_survive_a_cancelled_read_and_a_killed_connection():
    """The reader holds half the pool's connections (a read through the pool cost twice
    the CPU): a read cancelled mid-statement, or whose connection the server ended, gives
    its connection back to the pool and the next read takes another; writes keep the
    other half."""
    import asyncpg

    from agentsvc.db.postgres import PostgresDatabase

    db = PostgresDatabase(pg.fresh_database_url(), pool_size=2)
    await db.open()
    try:
        reader = db.reader
        mine = await reader.fetchval("SELECT pg_backend_pid()")
        assert await reader.fetchval("SELECT pg_backend_pid()") == mine  # held: the same one
        # A write while a long read holds the reader's one connection.
        slow = asyncio.ensure_future(reader.fetchval("SELECT pg_sleep(0.5)"))
        await asyncio.sleep(0.1)
        async with db.write() as tx:
            assert await tx.fetchval("SELECT pg_backend_pid()") != mine
        assert not slow.done()
        slow.cancel()  # cancelled mid-statement
        with pytest.raises(asyncio.CancelledError):
            await slow
        started = time.monotonic()
        assert await reader.fetchval("SELECT 1") == 1
        assert time.monotonic() - started < 0.4  # not behind the cancelled sleep
        # The server ends the reader's free connection: the next read takes another.
        held = await reader.fetchval("SELECT pg_backend_pid()")
        async with db.write() as tx:
            assert await tx.fetchval("SELECT pg_terminate_backend(?)", (held,)) is True
        await asyncio.sleep(0.2)  # the connection hears of it
        assert await reader.fetchval("SELECT pg_backend_pid()") not in (held, None)
        # One ended during a read: that read fails; the next takes another.
        held = await reader.fetchval("SELECT pg_backend_pid()")
        during = asyncio.ensure_future(reader.fetchval("SELECT pg_sleep(1)"))
        await asyncio.sleep(0.1)
        async with db.write() as tx:
            assert await tx.fetchval("SELECT pg_terminate_backend(?)", (held,)) is True
        with pytest.raises((asyncpg.PostgresError, asyncpg.InterfaceError, ConnectionError)):
            await during
        assert await reader.fetchval("SELECT pg_backend_pid()") not in (held, None)
    finally:
        await db.close()


@postgres_only
async def test_a_one_statement_write_is_committed_alone_outside_any_transaction():
    """`write_statement` (a channel's message received, its turn taken): no BEGIN and
    COMMIT round trips; the statement is its own transaction, committed at once."""
    from agentsvc.db.postgres import PostgresDatabase

    db = PostgresDatabase(pg.fresh_database_url())
    await db.open()
    try:

        async def unit(tx) -> object:
            await tx.execute("INSERT INTO schema_info (version) VALUES (0)")
            # In a transaction the insert would have given it an id; outside, the next
            # statement is a transaction of its own that writes nothing.
            return await tx.fetchval("SELECT pg_current_xact_id_if_assigned()")

        assert await db.write_statement(unit) is None
        assert await db.reader.fetchval("SELECT count(*) FROM schema_info") == 2
    finally:
        await db.close()


@postgres_only
async def test_a_write_cancelled_while_it_begins_or_commits_leaves_nothing_open(caplog):
    """A write cancelled while its BEGIN or COMMIT is in flight (a job stopped at shutdown)
    leaves no transaction open on a pooled connection: the next writes work and asyncpg
    never finds a connection handed back mid-transaction (which it logs as an error)."""
    import logging

    from agentsvc.db.postgres import PostgresDatabase

    db = PostgresDatabase(pg.fresh_database_url(), pool_size=4)
    await db.open()

    async def write_one() -> None:
        async with db.write() as tx:
            await tx.fetchval("SELECT 1")

    try:
        with caplog.at_level(logging.WARNING):
            for _ in range(10):
                for turns in range(6):  # cancelled at BEGIN, in the body, at COMMIT
                    task = asyncio.ensure_future(write_one())
                    for _ in range(turns):
                        await asyncio.sleep(0)
                    task.cancel()
                    await asyncio.gather(task, return_exceptions=True)
            async with db.write() as tx:
                assert await tx.fetchval("SELECT 2") == 2
        assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == []
    finally:
        await db.close()
