"""The PostgreSQL side of the suite: with TEST_POSTGRES_URL set (a server the test
run started, see scripts/test.sh), every app a test builds gets a schema of its own (a
fresh, empty database as far as the app can tell), dropped after the test.

Each test process (one per pytest-xdist worker) keeps its schemas in a database of its own,
so one worker's `NOTIFY agentsvc_changes` never reaches another's apps, and uses a Redis
database of its own (number 1 + the worker's), so one worker's flush never empties the rate
limits of another's test."""

from __future__ import annotations

import asyncio
import itertools
import os
import threading
from pathlib import Path
from urllib.parse import urlencode, urlsplit, urlunsplit

import pytest

SERVER_URL = os.environ.get("TEST_POSTGRES_URL", "")
# "gw0", "gw1"... in a pytest-xdist worker; empty in a run without workers.
WORKER = os.environ.get("PYTEST_XDIST_WORKER", "")


def _worker_redis_url(url: str) -> str:
    """The Redis database of this test process: 0 alone, 1 + its number for a worker."""
    if not url or not WORKER:
        return url
    return urlunsplit(urlsplit(url)._replace(path=f"/{1 + int(WORKER.removeprefix('gw'))}"))


REDIS_URL = _worker_redis_url(os.environ.get("TEST_REDIS_URL", ""))

# For what only SQLite has (its WAL, its file lock, its file on disk).
sqlite_only = pytest.mark.skipif(bool(SERVER_URL), reason="SQLite's own mechanics")
# Several processes on one database, or PostgreSQL's own mechanics: the PostgreSQL pass
# of scripts/test.sh (CI) runs them.
postgres_only = pytest.mark.skipif(not SERVER_URL, reason="needs the test PostgreSQL")

_counter = itertools.count(1)
_created: list[str] = []
_created_databases: list[str] = []
_by_directory: dict[Path, str] = {}
_loop: asyncio.AbstractEventLoop | None = None
_admin = None
_process_database = f"w{os.getpid()}"  # where this process's schemas live


def _database_url(name: str) -> str:
    return urlunsplit(urlsplit(SERVER_URL)._replace(path=f"/{name}"))


def _run(coro):
    """Run a coroutine on the helper thread's loop (tests' own loops come and go)."""
    global _loop
    if _loop is None:
        _loop = asyncio.new_event_loop()
        threading.Thread(target=_loop.run_forever, daemon=True).start()
    return asyncio.run_coroutine_threadsafe(coro, _loop).result(timeout=60)


async def _on_server(sql: str) -> None:
    """Run one statement on the server's own database (CREATE/DROP DATABASE)."""
    import asyncpg

    conn = await asyncpg.connect(SERVER_URL)
    try:
        await conn.execute(sql)
    finally:
        await conn.close()


async def _execute(sql: str) -> None:
    """Run one statement in this process's database (made on first use)."""
    global _admin
    import asyncpg

    if _admin is None or _admin.is_closed():
        if _admin is None:
            await _on_server(f"CREATE DATABASE {_process_database}")
        _admin = await asyncpg.connect(_database_url(_process_database))
    await _admin.execute(sql)


async def _drop_process_database() -> None:
    global _admin
    if _admin is None:
        return
    await _admin.close()
    await _on_server(f"DROP DATABASE IF EXISTS {_process_database} WITH (FORCE)")


def with_search_path(url: str, schema: str) -> str:
    parts = urlsplit(url)
    query = "&".join(q for q in (parts.query, urlencode({"search_path": schema})) if q)
    return urlunsplit(parts._replace(query=query))


def fresh_database_url() -> str:
    """A URL whose connections see only a new, empty schema."""
    schema = f"t{os.getpid()}_{next(_counter)}"
    _run(_execute(f"CREATE SCHEMA {schema}"))
    _created.append(schema)
    return with_search_path(_database_url(_process_database), schema)


def database_url_for(data_dir: Path) -> str:
    """The database of a test's data directory: apps started again on the same directory
    (a restart) find the same data, as they would in the SQLite file there. It is a schema
    an earlier test emptied when there is one (see `_recycle`), else a new one."""
    url = _by_directory.get(data_dir)
    if url is None:
        if _spare:
            schema = _spare.pop()
            _created.append(schema)
            url = with_search_path(_database_url(_process_database), schema)
        else:
            url = fresh_database_url()
        _by_directory[data_dir] = url
    return url


# A schema a test's app used is emptied and handed to the next test's app rather than
# dropped: PostgreSQL takes about 250 ms to create the newest schema (and 35 to drop it),
# 15 to empty one. Only a schema shaped exactly as a freshly migrated one is kept: the
# schema of a test that changed it (an upgrade test, a table of test_db) is dropped.
_spare: list[str] = []
_SHAPE = """
SELECT (SELECT count(*) FROM pg_class c WHERE c.relnamespace = n.oid),
       (SELECT count(*) FROM pg_attribute a JOIN pg_class c ON a.attrelid = c.oid
         WHERE c.relnamespace = n.oid AND a.attnum > 0 AND NOT a.attisdropped),
       (SELECT count(*) FROM pg_trigger t JOIN pg_class c ON t.tgrelid = c.oid
         WHERE c.relnamespace = n.oid),
       (SELECT count(*) FROM pg_constraint k WHERE k.connamespace = n.oid),
       (SELECT count(*) FROM pg_proc f WHERE f.pronamespace = n.oid),
       to_regclass(quote_ident($1) || '.schema_info') IS NOT NULL
  FROM pg_namespace n WHERE n.nspname = $1"""
_fresh: dict[str, object] = {}  # the shape, version, tables and sequences of a fresh schema


async def _fresh_schema() -> dict[str, object]:
    """What a freshly migrated schema looks like, from one made by the app's own migration."""
    from agentsvc.db.postgres import PostgresDatabase

    if not _fresh:
        schema = f"r{os.getpid()}"  # kept: it goes with the process's database
        await _execute(f"CREATE SCHEMA {schema}")
        db = PostgresDatabase(with_search_path(_database_url(_process_database), schema))
        await db.open()
        await db.close()
        tables = await _admin.fetch(
            "SELECT tablename FROM pg_tables WHERE schemaname = $1 AND tablename <> 'schema_info'",
            schema,
        )
        sequences = await _admin.fetch(
            "SELECT sequencename FROM pg_sequences WHERE schemaname = $1", schema
        )
        _fresh.update(
            shape=tuple(await _admin.fetchrow(_SHAPE, schema)),
            versions=await _versions(schema),
            tables=[row[0] for row in tables],
            sequences=[row[0] for row in sequences],
        )
    return _fresh


async def _versions(schema: str) -> list[int]:
    rows = await _admin.fetch(f"SELECT version FROM {schema}.schema_info")  # noqa: S608 (ours)
    return [row[0] for row in rows]


async def _recycle(schema: str) -> bool:
    """Empty a schema shaped as a fresh one (rows deleted, sequences restarted) and say so;
    drop any other."""
    fresh = await _fresh_schema()
    shape = await _admin.fetchrow(_SHAPE, schema)
    same = shape is not None and tuple(shape) == fresh["shape"]
    if not same or await _versions(schema) != fresh["versions"]:
        await _execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")
        return False
    # Rows go without firing triggers (the counters they keep are emptied too).
    script = ["SET LOCAL session_replication_role = replica;"]
    script += [f"DELETE FROM {schema}.{table};" for table in fresh["tables"]]  # noqa: S608
    script += [f"ALTER SEQUENCE {schema}.{seq} RESTART;" for seq in fresh["sequences"]]
    async with _admin.transaction():
        await _admin.execute("".join(script))
    return True


def fresh_real_database_url() -> str:
    """A new database of its own (for tools that take a plain URL, such as pg_dump)."""
    name = f"d{os.getpid()}_{next(_counter)}"
    _run(_on_server(f"CREATE DATABASE {name}"))
    _created_databases.append(name)
    return _database_url(name)


def copy_of_database(url: str) -> str:
    """A new database made from `url`'s (a real database of fresh_real_database_url, which
    nobody may be connected to), dropped like the others."""
    name = f"d{os.getpid()}_{next(_counter)}"
    source = urlsplit(url).path.lstrip("/")
    _run(_on_server(f"CREATE DATABASE {name} TEMPLATE {source}"))
    _created_databases.append(name)
    return _database_url(name)


def mark() -> tuple[int, int]:
    """How many schemas and databases exist now (see `drop_created`)."""
    return len(_created), len(_created_databases)


def drop_created(since: tuple[int, int] = (0, 0), recycle: bool = True) -> None:
    """Drop (or empty for the next test, see `_recycle`) the schemas and databases created
    after `since`: a test's own, not those of a module's fixture set up before it (those go
    at the end of the session)."""
    schemas, databases = since
    dropped = set(_created[schemas:])
    for directory in [d for d, url in _by_directory.items() if url.rsplit("=", 1)[1] in dropped]:
        del _by_directory[directory]
    while len(_created) > schemas:
        schema = _created.pop()
        if recycle and _run(_recycle(schema)):
            _spare.append(schema)
        elif not recycle:
            _run(_execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE"))
    while len(_created_databases) > databases:
        _run(_on_server(f"DROP DATABASE IF EXISTS {_created_databases.pop()} WITH (FORCE)"))


def drop_process_database() -> None:
    """Drop this process's database with whatever it still holds (the end of a run)."""
    drop_created(recycle=False)
    _run(_drop_process_database())


async def stored_bytes(app) -> bytes:
    """Everything the app's database holds, to search for what must not be stored: the
    SQLite files' bytes, or every PostgreSQL row of its schema as text."""
    from agentsvc.api import app_keys

    settings = app[app_keys.settings_key]
    if not settings.database.url:
        data_dir = Path(settings.server.data_dir)
        return b"".join(
            p.read_bytes() for p in sorted(data_dir.glob("agentsvc.db*")) if p.is_file()
        )
    db = app[app_keys.db_key]
    tables = await db.reader.fetchall(
        "SELECT table_name FROM information_schema.tables"
        " WHERE table_schema = current_schema() AND table_type = 'BASE TABLE'"
    )
    parts = []
    for (table,) in tables:
        rows = await db.reader.fetchall(f'SELECT t::text FROM "{table}" t')  # noqa: S608
        parts.extend(r[0].encode() for r in rows)
    return b"\n".join(parts)


def flush_redis() -> None:
    """Empty the test Redis (the next test's limits start full)."""
    if not REDIS_URL:
        return
    import redis

    client = redis.Redis.from_url(REDIS_URL)
    try:
        client.flushdb()
    finally:
        client.close()
