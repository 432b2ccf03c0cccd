"""Issue 37 item 3 on PostgreSQL: pg_dump before every upgrade, and no upgrade when it is
missing or fails (unless `backup_before_migrate = false`); refusals naming both versions;
`migrate --plan`; a failing migration; two servers starting at once on one database
migrate it once; `restore`'s refusals. PostgreSQL side only; the restore itself is in
test_upgrade_ladder.py."""

from __future__ import annotations

import asyncio

import asyncpg
import pytest

from agentsvc.db.backups import version_in_name
from agentsvc.db.migrations import schema_version
from agentsvc.db.postgres import MIGRATION_LOCK, PostgresDatabase
from tests.support import pg
from tests.support.cli import run
from tests.support.upgrades import (
    config,
    first_statement,
    postgres_at,
    postgres_contents,
    read_until,
    started,
)

pytestmark = pg.postgres_only
NEWEST = schema_version()


async def _database_at(version: int, url: str | None = None) -> str:
    url = url or pg.fresh_real_database_url()
    db = PostgresDatabase(url)
    await db.open()
    await db.close()
    await postgres_at(url, version)
    return url


async def _version(url: str) -> int:
    conn = await asyncpg.connect(url)
    try:
        return await conn.fetchval("SELECT version FROM schema_info")
    finally:
        await conn.close()


def _cli(tmp_path, *args: str, **database: object):
    """`agentsvc ARGS` on the database in `database['url']`, data in tmp_path/data."""
    settings = config(tmp_path, **database)
    return run([*args, "--config", str(settings), "--data-dir", str(tmp_path / "data")], tmp_path)


def _refusal(result) -> str:
    assert result.returncode == 1, (result.stdout, result.stderr)
    lines = [line for line in result.stderr.splitlines() if line.startswith("agentsvc: ")]
    assert len(lines) == 1, result.stderr
    return lines[0]


def _backups(tmp_path) -> list:
    folder = tmp_path / "data" / "backups"
    return sorted(folder.iterdir()) if folder.is_dir() else []


async def test_plan_then_migrate_with_pg_dump_first(tmp_path):
    url = await _database_at(NEWEST - 2)
    before = await postgres_contents(url)
    planned = _cli(tmp_path, "migrate", "--plan", url=url)
    assert planned.returncode == 0, planned.stderr
    assert f"schema version {NEWEST - 2}; this agentsvc needs {NEWEST}" in planned.stdout
    assert "(pg_dump, custom format; the newest 5 kept)" in planned.stdout
    assert await postgres_contents(url) == before and _backups(tmp_path) == []

    done = _cli(tmp_path, "migrate", url=url)
    assert done.returncode == 0, done.stderr
    (backup,) = _backups(tmp_path)
    assert version_in_name(backup) == NEWEST - 2 and backup.read_bytes()[:5] == b"PGDMP"
    assert backup.stat().st_mode & 0o777 == 0o600
    assert f"upgraded from schema version {NEWEST - 2} to {NEWEST}" in done.stdout
    assert await _version(url) == NEWEST


async def test_no_pg_dump_means_no_upgrade_unless_backups_are_off(tmp_path):
    url = await _database_at(NEWEST - 1)
    empty = tmp_path / "no-tools"
    empty.mkdir()
    message = _refusal(_cli(tmp_path, "migrate", url=url, pg_bin_dir=str(empty)))
    assert f"(schema version {NEWEST - 1}) was not upgraded to {NEWEST}" in message
    assert f"pg_dump was not found in [database] pg_bin_dir ({empty})" in message
    assert "install PostgreSQL's client tools of the server's major version" in message
    assert "set [database] backup_before_migrate = false" in message
    assert await _version(url) == NEWEST - 1 and _backups(tmp_path) == []

    done = _cli(tmp_path, "migrate", url=url, pg_bin_dir=str(empty), backup_before_migrate=False)
    assert done.returncode == 0, done.stderr
    assert "no backup taken" in done.stdout and await _version(url) == NEWEST


async def test_a_pg_dump_that_fails_stops_the_upgrade_with_what_to_do(tmp_path):
    url = await _database_at(NEWEST - 1)
    tools = tmp_path / "old-tools"
    tools.mkdir()
    fake = tools / "pg_dump"  # an older client, as a real one says it
    fake.write_text(
        "#!/bin/sh\n"
        "echo 'pg_dump: error: aborting because of server version mismatch' >&2\n"
        "echo 'pg_dump: detail: server version: 16.4; pg_dump version: 14.13' >&2\n"
        "exit 1\n"
    )
    fake.chmod(0o755)
    message = _refusal(_cli(tmp_path, "migrate", url=url, pg_bin_dir=str(tools)))
    assert "pg_dump is older than the PostgreSQL server (version 16)" in message
    assert "install the client tools of version 16 (Debian and Ubuntu: postgresql-client-16)" in (
        message
    )
    assert "Nothing was changed" in message
    assert await _version(url) == NEWEST - 1 and _backups(tmp_path) == []


async def test_a_newer_or_half_migrated_database_refuses_naming_both_versions(tmp_path):
    newer = await _database_at(NEWEST)
    conn = await asyncpg.connect(newer)
    await conn.execute("UPDATE schema_info SET version = $1", NEWEST + 3)
    await conn.close()
    for command in (["migrate"], ["migrate", "--plan"], ["serve", "--port", "0"]):
        message = _refusal(_cli(tmp_path, *command, url=newer))
        assert f"has schema version {NEWEST + 3}, newer than this agentsvc's {NEWEST}" in message
        assert f"no backup of schema version {NEWEST} or older is in" in message

    half = await _database_at(19, pg.fresh_database_url())  # in a schema of its own
    conn = await asyncpg.connect(half)
    await conn.execute(first_statement(20, postgres=True))
    await conn.close()
    before = await postgres_contents(half)
    message = _refusal(_cli(tmp_path, "migrate", url=half))
    assert "is half-migrated: its schema version is 19" in message
    assert "table sources (version 20)" in message and f"needs version {NEWEST}" in message
    assert await postgres_contents(half) == before


async def test_a_migration_that_fails_leaves_the_last_whole_version(tmp_path):
    # Version 20: the migration of version 21 updates every message, which this trigger
    # (an operator's own) refuses.
    url = await _database_at(20)
    conn = await asyncpg.connect(url)
    await conn.execute(
        "CREATE FUNCTION keep_messages() RETURNS trigger LANGUAGE plpgsql AS $$"
        " BEGIN RAISE EXCEPTION 'messages are kept'; END $$;"
        "CREATE TRIGGER keep_messages BEFORE UPDATE ON messages"
        " FOR EACH ROW EXECUTE FUNCTION keep_messages();"
        "INSERT INTO users (id, email, created_at, updated_at)"
        " VALUES ('usr_1', 'a@b.co', 't', 't');"
        "INSERT INTO teams VALUES ('team_1', 'T', 'usr_1', 'pro', 't', 't');"
        "INSERT INTO agents (id, team_id, name, slug, model, temperature, created_at, updated_at)"
        " VALUES ('agt_1', 'team_1', 'A', 'a', 'builtin', 70, 't', 't');"
        "INSERT INTO conversations (id, agent_id, team_id, title, created_at, updated_at)"
        " VALUES ('conv_1', 'agt_1', 'team_1', 'Hi', 't', 't');"
        "INSERT INTO messages (id, conversation_id, role, content, created_at)"
        " VALUES ('msg_1', 'conv_1', 'user', 'Hello', 't');"
    )
    await conn.close()
    message = _refusal(_cli(tmp_path, "migrate", url=url))
    (backup,) = _backups(tmp_path)
    assert "stopped: migration 21 (pg search speed) failed" in message
    assert "(the database said: messages are kept)" in message
    assert "The database is at schema version 20, whole" in message
    assert f"This agentsvc needs version {NEWEST}" in message
    assert f"`agentsvc restore {backup}`" in message
    assert await _version(url) == 20


async def test_two_servers_starting_at_once_on_one_database_migrate_it_once(tmp_path):
    """Both wait on the advisory lock (held here first, as by a third process); one
    migrates, with its backup, the other then finds the newest version and serves."""
    url = await _database_at(NEWEST - 2, pg.fresh_database_url())  # a search_path URL
    hosts = [tmp_path / "one", tmp_path / "two"]
    holder = await asyncpg.connect(url)
    await holder.execute("SELECT pg_advisory_lock($1)", MIGRATION_LOCK)
    logs: list[list[str]] = [[], []]
    procs = []
    try:
        for host in hosts:
            host.mkdir()
            settings = config(host, url=url)
            procs.append(started(["serve", "--port", "0", "--config", str(settings)], host))
        for proc, log in zip(procs, logs, strict=True):
            await asyncio.to_thread(read_until, proc, "waiting for another process", log)
        await holder.execute("SELECT pg_advisory_unlock($1)", MIGRATION_LOCK)
        for proc, log in zip(procs, logs, strict=True):
            await asyncio.to_thread(read_until, proc, "listening on", log)
    finally:
        await holder.close()
        for proc in procs:
            proc.terminate()
            proc.communicate(timeout=30)
    said = ["".join(log) for log in logs]
    assert sum(f"upgraded from schema version {NEWEST - 2} to {NEWEST}" in s for s in said) == 1
    backups = [p for host in hosts for p in (host / "data" / "backups").glob("*.dump")]
    assert [version_in_name(p) for p in backups] == [NEWEST - 2]
    assert await _version(url) == NEWEST


async def test_restore_refuses_what_it_cannot_do_safely(aiohttp_client, tmp_path):
    from agentsvc.app import create_app
    from tests.support.settings import make_settings

    url = await _database_at(NEWEST - 1)
    assert _cli(tmp_path, "migrate", url=url).returncode == 0
    (backup,) = _backups(tmp_path)
    # A server connected to the database: named, nothing changed.
    client = await aiohttp_client(
        create_app(make_settings(tmp_path / "app", database={"url": url}))
    )
    before = await postgres_contents(url)
    message = _refusal(_cli(tmp_path, "restore", str(backup), "--yes", url=url))
    assert "connections of agentsvc processes use the database (agentsvc-" in message
    assert "stop every agentsvc process first; nothing was changed" in message
    await client.close()
    assert await postgres_contents(url) == before
    # Not a pg_dump file, no file, a backup of a newer agentsvc.
    other = tmp_path / "notes.txt"
    other.write_text("not a dump")
    message = _refusal(_cli(tmp_path, "restore", str(other), "--yes", url=url))
    assert message == f"agentsvc: {other} is not a pg_dump file in the custom format"
    message = _refusal(_cli(tmp_path, "restore", str(tmp_path / "gone.dump"), "--yes", url=url))
    assert message == f"agentsvc: {tmp_path / 'gone.dump'}: no such file"
    newer = await _database_at(NEWEST)
    conn = await asyncpg.connect(newer)
    await conn.execute("UPDATE schema_info SET version = $1", NEWEST + 1)
    await conn.close()
    assert (
        _cli(tmp_path / "data", "backup", str(tmp_path / "newer.dump"), url=newer).returncode == 0
    )
    message = _refusal(_cli(tmp_path, "restore", str(tmp_path / "newer.dump"), "--yes", url=url))
    assert f"holds schema version {NEWEST + 1}, newer than this agentsvc's {NEWEST}" in message
    assert await postgres_contents(url) == before


@pytest.mark.parametrize("bad", ["", "relative/place", "/nowhere/at/all"])
async def test_pg_bin_dir_without_the_tools_is_said(tmp_path, bad):
    url = await _database_at(NEWEST - 1)
    message = _refusal(_cli(tmp_path, "migrate", url=url, pg_bin_dir=bad or str(tmp_path)))
    assert "pg_dump was not found in [database] pg_bin_dir" in message
    assert await _version(url) == NEWEST - 1


async def test_a_restore_that_fails_part_way_changes_nothing(tmp_path):
    """A backup cut short (its rows end early: pg_restore fails while psql is loading
    them): psql's one transaction is rolled back, the database is as it was."""
    url = await _database_at(NEWEST - 1)
    conn = await asyncpg.connect(url)
    await conn.execute(
        "INSERT INTO users (id, email, created_at, updated_at)"
        " SELECT 'usr_' || n, 'u' || n || '@b.co', md5(n::text), 't'"
        " FROM generate_series(1, 20000) AS n"
    )
    await conn.close()
    assert _cli(tmp_path, "migrate", url=url).returncode == 0
    (backup,) = _backups(tmp_path)
    whole = backup.read_bytes()
    cut = tmp_path / "cut.dump"
    cut.write_bytes(whole[: len(whole) * 2 // 3])
    before = await postgres_contents(url)
    message = _refusal(_cli(tmp_path, "restore", str(cut), "--yes", url=url))
    assert message.startswith("agentsvc: pg_restore said: ")
    assert message.endswith("; the database was not changed")
    assert await postgres_contents(url) == before
