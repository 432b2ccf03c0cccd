"""The PostgreSQL implementation of the database interface (asyncpg; several processes).

One asyncpg pool serves everything: reads run one statement each on connections the reader
holds from it (pg_readers.py); a write unit holds one connection for its transaction.
Batched small writes share one transaction, a savepoint each, as on SQLite. The store's
SQL is written once with `?` placeholders; `_numbered` rewrites them to `$1, $2...` (cached
per statement text).

Changes other processes must hear of (`announce`) travel as `NOTIFY agentsvc_changes`; one
connection per process LISTENs and hands them to the subscribers. When that connection is
lost, subscribers are told everything may have changed (`RESYNC`) once it is back, since
notifications sent in between are gone. That connection is also the probe of the server:
pinged every PROBE_SECONDS, it sets `reachable` (services/health.py).
"""

from __future__ import annotations

import asyncio
import functools
import logging
import os
import re
import sys
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, TypeVar

import asyncpg

from agentsvc.db import (
    RESYNC,
    Params,
    Row,
    Tx,
    VectorSearchUnavailable,
    raises_constraint_violation,
)
from agentsvc.db.batcher import BATCH_HOLD_SECONDS, Failed, WriteBatcher
from agentsvc.db.holds import Slowest, WriteClock, awaited
from agentsvc.db.migrations import POSTGRES_MIGRATIONS, postgres_schema, schema_version
from agentsvc.db.pg_readers import HeldReaders
from agentsvc.db.pg_tools import dump
from agentsvc.db.upgrade import Survey, Upgrader, UpgradeRefused, read_version

log = logging.getLogger(__name__)
T = TypeVar("T")

CHANNEL = "agentsvc_changes"
MIGRATION_LOCK = 0x61677376  # pg_advisory_lock key: one process migrates at a time
# The listening connection is pinged this often; a ping (or a connection) that takes longer
# than the timeout makes the database unreachable until one succeeds: /readyz and the API
# answer 503 meanwhile, so a load balancer sends requests to the other processes (and a
# cut network is noticed in at most PROBE_SECONDS + PROBE_TIMEOUT_SECONDS).
PROBE_SECONDS = 0.5
PROBE_TIMEOUT_SECONDS = 1.0

_STRING_OR_MARK = re.compile(r"'(?:[^']|'')*'|\?")


# Errors that say the server or the network is gone, not that a statement failed: any of
# them makes the database unreachable until the upkeep's next ping succeeds, at once.
CONNECTION_LOST = (
    OSError,
    asyncpg.PostgresConnectionError,
    asyncpg.AdminShutdownError,
    asyncpg.CrashShutdownError,
    asyncpg.CannotConnectNowError,
)

# A unit that ended a deadlock is run again alone, at most this many times in all.
DEADLOCK = asyncpg.DeadlockDetectedError
DEADLOCK_TRIES = 3


def is_postgres_url(url: str) -> bool:
    return url.startswith(("postgresql://", "postgres://"))


@functools.lru_cache(maxsize=4096)
def _numbered(sql: str) -> str:
    """`?` placeholders as `$1, $2...` (not inside string literals)."""
    if "?" not in sql:
        return sql
    counter = 0

    def number(match: re.Match[str]) -> str:
        nonlocal counter
        if match.group(0) != "?":
            return match.group(0)
        counter += 1
        return f"${counter}"

    return _STRING_OR_MARK.sub(number, sql)


def _rowcount(status: str) -> int:
    """Rows changed, from a command tag such as 'UPDATE 3' or 'INSERT 0 1'."""
    last = status.rpartition(" ")[2]
    return int(last) if last.isdigit() else 0


# A PgTx statement: ConstraintViolation for the driver's integrity error, and a lost
# connection told to the PgTx's `on_lost` before it is raised.
_statement = raises_constraint_violation(
    asyncpg.IntegrityConstraintViolationError, lost=CONNECTION_LOST
)


class PgTx:
    """Statements on one connection (a transaction's), or one each on the reader's."""

    dialect = "postgresql"

    def __init__(
        self,
        conn: asyncpg.Connection | asyncpg.Pool | HeldReaders,
        on_lost: Callable[[BaseException], None] | None = None,
    ):
        self._on = conn
        self._on_lost = on_lost  # told of a lost connection (the reader's: the database's)

    # Each statement waits on the server while the loop runs other tasks: `awaited` keeps
    # their CPU out of a timed transaction's (holds.py).
    @_statement
    async def execute(self, sql: str, params: Params = ()) -> int:
        return _rowcount(await awaited(self._on.execute(_numbered(sql), *params)))

    @_statement
    async def executemany(self, sql: str, rows: Iterable[Params]) -> None:
        await awaited(self._on.executemany(_numbered(sql), [tuple(r) for r in rows]))

    @_statement
    async def fetchall(self, sql: str, params: Params = ()) -> list[Row]:
        return await awaited(self._on.fetch(_numbered(sql), *params))

    @_statement
    async def fetchone(self, sql: str, params: Params = ()) -> Row | None:
        return await awaited(self._on.fetchrow(_numbered(sql), *params))

    @_statement
    async def fetchval(self, sql: str, params: Params = ()) -> Any:
        return await awaited(self._on.fetchval(_numbered(sql), *params))


class PostgresDatabase:
    """The app's PostgreSQL database (see the module's docstring)."""

    shared = True  # several processes may use it at once

    def __init__(
        self,
        url: str,
        *,
        pool_size: int = 10,
        statement_timeout_seconds: float = 30.0,
        slow_write_ms: float = 200,
        upgrader: Upgrader | None = None,
    ):
        self.url = url
        # Without one (a bare database in a test): migrations run with no backup.
        self.upgrader = upgrader or Upgrader("PostgreSQL")
        self.clock = WriteClock(slow_write_ms)
        self.pool_size = pool_size
        self.statement_timeout_ms = int(statement_timeout_seconds * 1000)
        self._pool: asyncpg.Pool | None = None
        self._reader: PgTx | None = None
        self._held: HeldReaders | None = None
        self._batcher = WriteBatcher(self._write_batch)
        self._subscribers: list[Callable[[str], None]] = []
        self._origin = uuid.uuid4().hex[:12]  # this process, to skip its own notifications
        self.reachable = True  # until the upkeep's pings say otherwise (run_upkeep)
        self._ping_now = asyncio.Event()  # a request lost its connection: ping at once

    async def open(self) -> None:
        """Connect, create or migrate the schema (one process at a time)."""
        self._pool = await asyncpg.create_pool(
            self.url,
            min_size=1,
            max_size=self.pool_size,
            server_settings=self._settings(self.statement_timeout_ms),
            reset=_nothing_to_reset,
        )
        try:
            await self._migrate()
        except BaseException:
            await self._pool.close()
            self._pool = None
            raise
        # Reads on up to half the pool's connections, held (pg_readers.py); the rest for
        # write transactions. A pool of one reads through the pool.
        held = self.pool_size // 2
        self._held = HeldReaders(self._pool, held) if held else None
        self._reader = PgTx(self._held or self._pool, self._connection_lost)

    async def close(self) -> None:
        await self._batcher.close()
        if self._held is not None:
            await self._held.close()
            self._held = None
        if self._pool is not None:
            await self._pool.close()
            self._pool = None
        self._reader = None

    @property
    def reader(self) -> Tx:
        assert self._reader is not None, "database is not open"
        return self._reader

    @asynccontextmanager
    async def write(self) -> AsyncIterator[Tx]:
        """One transaction (READ COMMITTED) on a connection of its own, timed (holds.py)."""
        opener = sys._getframe(2)  # the `async with`: named only if the transaction is slow
        async with self._transaction(opener, opener.f_lasti) as conn:
            yield PgTx(conn, self._connection_lost)

    @asynccontextmanager
    async def _transaction(self, opener: Any, lasti: int = -1) -> AsyncIterator[Any]:
        """A transaction on a pooled connection, timed from BEGIN to the end of COMMIT."""
        assert self._pool is not None, "database is not open"
        try:
            conn = await self._pool.acquire()
        except CONNECTION_LOST as exc:
            self._connection_lost(exc)
            raise
        try:
            started = self.clock.start()
            try:
                # Entered as `async with` would (asyncpg's managed transaction), its steps
                # awaited one by one to time them: a BEGIN cancelled in flight (a job stopped
                # at shutdown) opens its transaction afterwards, and the pool, taking the
                # connection back, rolls it back quietly; unmanaged, asyncpg logs an error.
                transaction = conn.transaction()
                await self._watched(transaction.__aenter__())
                try:
                    yield conn
                except BaseException as exc:
                    await awaited(transaction.__aexit__(type(exc), exc, exc.__traceback__))
                    raise
                else:
                    await self._watched(transaction.__aexit__(None, None, None))
            finally:
                self.clock.stopped(started, opener, lasti)
        finally:
            await self._pool.release(conn)

    async def _watched(self, awaitable: Awaitable[T]) -> T:
        """Await a statement outside PgTx (BEGIN, COMMIT); tell the upkeep of a lost
        connection at once."""
        try:
            return await awaited(awaitable)
        except CONNECTION_LOST as exc:
            self._connection_lost(exc)
            raise

    async def write_batched(self, fn: Callable[[Tx], Awaitable[T]]) -> T:
        return await self._batcher.submit(fn)

    async def write_statement(self, fn: Callable[[Tx], Awaitable[T]]) -> T:
        """One statement, its own transaction (autocommit), on a reader's connection."""
        assert self._reader is not None, "database is not open"
        return await fn(self._reader)

    async def _write_batch(self, units: list[Callable[[Tx], Awaitable[Any]]]) -> list[Any]:
        if len(units) == 1:  # alone in its transaction: no savepoint (a round trip) needed
            return [await self._alone(units[0])]
        results = await self._together(units)
        # A unit PostgreSQL chose to end a deadlock (another process's batch took the same
        # rows, a conversation or a daily counter, in the other order) goes again, alone,
        # now that this batch's locks are released.
        for index, result in enumerate(results):
            if isinstance(result, Failed) and isinstance(result.error, DEADLOCK):
                results[index] = await self._alone(units[index])
        return results

    async def _alone(self, unit: Callable[[Tx], Awaitable[Any]]) -> Any:
        """A unit in a transaction of its own, run again when it ended a deadlock."""
        failed = Failed(AssertionError("not run"))
        for _ in range(DEADLOCK_TRIES):
            try:
                async with self._transaction(unit) as conn:
                    return await unit(PgTx(conn, self._connection_lost))
            except DEADLOCK as exc:
                failed = Failed(exc)
                log.info("a write ended a deadlock with another transaction")
            except Exception as exc:
                return Failed(exc)
        return failed

    async def _together(self, units: list[Callable[[Tx], Awaitable[Any]]]) -> list[Any]:
        """Units in one transaction, each in its savepoint (a failing one fails alone)."""
        results: list[Any] = []
        slowest = Slowest(units[0])
        async with self._transaction(slowest) as conn:
            tx = PgTx(conn, self._connection_lost)
            stop_at = time.perf_counter() + BATCH_HOLD_SECONDS
            for unit in units:
                began = time.perf_counter()
                if results and began > stop_at:
                    break  # the rest wait for the next transaction (batcher.py)
                savepoint = conn.transaction()
                await savepoint.start()
                try:
                    results.append(await unit(tx))
                except Exception as exc:
                    await savepoint.rollback()
                    results.append(Failed(exc))
                else:
                    await savepoint.commit()
                slowest.saw(unit, time.perf_counter() - began)
        return results

    def _settings(self, statement_timeout_ms: int) -> dict[str, str]:
        return {
            "application_name": f"agentsvc-{os.getpid()}",
            "statement_timeout": str(statement_timeout_ms),
        }

    @asynccontextmanager
    async def maintenance(self) -> AsyncIterator[Tx]:
        """Statements outside any transaction, with no statement timeout, on a connection
        of their own (the pool's never change a setting: they are not reset on release)."""
        assert self._pool is not None, "database is not open"
        conn = await asyncpg.connect(self.url, server_settings=self._settings(0))
        try:
            yield PgTx(conn)
        finally:
            await conn.close()

    async def vector_reader(self) -> Tx:
        raise VectorSearchUnavailable("vectors are ranked in memory on PostgreSQL")

    def acquire(self) -> Any:
        """A connection of the pool for this package's own tools (copy-data), as
        `async with db.acquire() as conn`."""
        assert self._pool is not None, "database is not open"
        return self._pool.acquire()

    # ── changes other processes must hear of ──────────────────────────────────────────
    def subscribe(self, callback: Callable[[str], None]) -> None:
        """Call `callback(topic)` for every announced change, this process's included."""
        self._subscribers.append(callback)

    async def announce(self, topic: str) -> None:
        """Tell every process (this one at once) that `topic` changed."""
        self._deliver(topic)
        assert self._pool is not None, "database is not open"
        await self._pool.execute("SELECT pg_notify($1, $2)", CHANNEL, f"{self._origin} {topic}")

    def _deliver(self, topic: str) -> None:
        for callback in self._subscribers:
            try:
                callback(topic)
            except Exception:
                log.exception("a change subscriber failed on %r", topic)

    def _on_notification(self, _conn: Any, _pid: int, _channel: str, payload: str) -> None:
        origin, _, topic = payload.partition(" ")
        if origin != self._origin:
            self._deliver(topic)

    async def run_upkeep(self) -> None:
        """Keep one connection listening for changes (runs until cancelled), pinged every
        PROBE_SECONDS: `reachable` says whether the server answers. After a reconnect,
        subscribers hear RESYNC: notifications sent meanwhile are lost."""
        lost = False
        while True:
            _stop_if_cancelled()
            try:
                conn = await asyncpg.connect(self.url, timeout=PROBE_TIMEOUT_SECONDS)
            except (OSError, TimeoutError, asyncpg.PostgresError) as exc:
                self._unreachable(f"cannot connect ({exc or type(exc).__name__})")
                lost = True
                await asyncio.sleep(PROBE_SECONDS)
                continue
            closed = asyncio.Event()
            # The server ending the connection wakes the watch as a ping request does.
            conn.add_termination_listener(functools.partial(_set, closed, self._ping_now))
            try:
                # asyncio.timeout, not wait_for: on Python 3.11 wait_for can swallow the
                # cancellation that stops the upkeep at shutdown, which then never ends.
                async with asyncio.timeout(PROBE_TIMEOUT_SECONDS):
                    await conn.add_listener(CHANNEL, self._on_notification)
                self._reached()
                if lost:
                    self._deliver(RESYNC)
                failed = await _watch(conn, closed, self._ping_now, self._reached)
                if failed is not None:  # else the server ended it: connecting again tells
                    self._unreachable(failed)
                lost = True
            except (OSError, TimeoutError, asyncpg.PostgresError, asyncpg.InterfaceError) as exc:
                self._unreachable(f"listening failed ({exc or type(exc).__name__})")
                lost = True
            except Exception:  # never end the upkeep: `reachable` would be stuck
                log.exception("listening for changes failed; starting again")
                self._unreachable("listening failed")
                lost = True
                await asyncio.sleep(PROBE_SECONDS)
            finally:
                # terminate(), not close(): a polite close waits on a network that may be gone.
                conn.terminate()

    def _reached(self) -> None:
        if not self.reachable:
            log.warning("PostgreSQL answers again; serving")
        self.reachable = True

    def _connection_lost(self, exc: BaseException) -> None:
        """A statement lost its connection: unreachable until a ping says otherwise, and
        the ping now (a connection the server alone ended costs a round trip of 503s)."""
        self._unreachable(f"a connection was lost ({exc or type(exc).__name__})")
        self._ping_now.set()

    def _unreachable(self, why: str) -> None:
        if self.reachable:
            log.warning("PostgreSQL does not answer: %s; answering 503 until it does", why)
        self.reachable = False

    # ── schema ─────────────────────────────────────────────────────────────────────────
    async def survey(self) -> Survey:
        """What open() would do, read on a connection of its own that changes nothing."""
        conn = await asyncpg.connect(self.url)
        try:
            return await self.upgrader.survey(PgTx(conn))
        finally:
            await conn.close()

    async def _migrate(self) -> None:
        """Create or upgrade the schema (upgrade.py): at once when it is the newest;
        otherwise on a connection of its own with no statement timeout (a migration of a
        large table, or pg_dump, may take minutes), under the advisory lock that makes the
        processes of a cluster upgrade one at a time."""
        assert self._pool is not None
        async with self._pool.acquire() as conn:
            found, _ = await read_version(PgTx(conn))
            if found == schema_version():
                await _warn_without_btree_gin(conn)
                return
        conn = await asyncpg.connect(self.url, server_settings=self._settings(0))
        try:
            if not await conn.fetchval("SELECT pg_try_advisory_lock($1)", MIGRATION_LOCK):
                log.info("waiting for another process that is upgrading the database")
                await conn.execute("SELECT pg_advisory_lock($1)", MIGRATION_LOCK)
            try:
                survey = await self.upgrader.survey(PgTx(conn))  # again, under the lock
                if survey.refusal is not None:
                    raise UpgradeRefused(survey.refusal)
                if survey.found is None:
                    async with conn.transaction():
                        await conn.execute(postgres_schema())
                        await conn.execute(
                            "INSERT INTO schema_info (version) VALUES ($1)", schema_version()
                        )
                    self.upgrader.created()
                elif survey.steps:
                    await self._upgrade(conn, survey)
            finally:
                await conn.execute("SELECT pg_advisory_unlock($1)", MIGRATION_LOCK)
            await _warn_without_btree_gin(conn)
        finally:
            await conn.close()

    async def _upgrade(self, conn: asyncpg.Connection, survey: Survey) -> None:
        found = survey.found
        assert found is not None
        upgrader = self.upgrader
        schema = await conn.fetchval("SELECT current_schema()")

        async def copy(target: Path) -> None:
            await asyncio.to_thread(dump, self.url, target, schema, upgrader.pg_bin_dir)

        backup = await upgrader.back_up(found, copy)
        reached = found
        for step in survey.steps:
            started = time.monotonic()
            try:
                async with conn.transaction():
                    await conn.execute(POSTGRES_MIGRATIONS[step.version])
                    await conn.execute("UPDATE schema_info SET version = $1", step.version)
            except (asyncpg.PostgresError, asyncpg.InterfaceError, OSError) as exc:
                raise upgrader.failed(found, step, reached, backup, str(exc)) from None
            reached = step.version
            upgrader.migrated(step, started)
        upgrader.finished(found, backup)

    async def schema_version_now(self) -> int:
        assert self._pool is not None
        return int(await self._pool.fetchval("SELECT version FROM schema_info"))


async def _nothing_to_reset(_conn: asyncpg.Connection) -> None:
    """What the pool runs on a connection it takes back, instead of asyncpg's default
    `SELECT pg_advisory_unlock_all(); CLOSE ALL; UNLISTEN *; RESET ALL`: a round trip on
    every release, so every single read paid two. This package leaves no session state on
    a pooled connection (no SET: maintenance() and an upgrade have connections of their own;
    no LISTEN: the listener has its own), and asyncpg rolls back
    a transaction left open before it calls this."""


def _stop_if_cancelled() -> None:
    """End a loop whose task was asked to stop even if a library swallowed the
    CancelledError (Python 3.11's wait_for can, when its inner call ends at that moment):
    the upkeep must end at shutdown, or closing the app waits for it forever."""
    task = asyncio.current_task()
    if task is not None and task.cancelling():
        raise asyncio.CancelledError


def _set(closed: asyncio.Event, wake: asyncio.Event, _conn: Any) -> None:
    closed.set()
    wake.set()


async def _watch(
    conn: asyncpg.Connection,
    closed: asyncio.Event,
    ping_now: asyncio.Event,
    answered: Callable[[], None],
) -> str | None:
    """Ping `conn` every PROBE_SECONDS (at once when `ping_now` is set), calling `answered`
    after each answer, until a ping fails or times out (return why) or the server ends the
    connection (return None)."""
    while True:
        _stop_if_cancelled()
        try:
            async with asyncio.timeout(PROBE_SECONDS):
                await ping_now.wait()  # set too when the server ends the connection
        except TimeoutError:
            pass
        if closed.is_set():
            return None
        ping_now.clear()
        try:
            async with asyncio.timeout(PROBE_TIMEOUT_SECONDS):
                await conn.fetchval("SELECT 1")
        except TimeoutError:
            return f"no answer within {PROBE_TIMEOUT_SECONDS:g} s"
        except (OSError, asyncpg.PostgresError, asyncpg.InterfaceError) as exc:
            return f"a ping failed ({exc or type(exc).__name__})"
        answered()


async def _warn_without_btree_gin(conn: asyncpg.Connection) -> None:
    """Say so in agentsvc's own log when the search indexes lack btree_gin (the schema's
    warning reaches only PostgreSQL's log): every start, until an operator adds it."""
    found = await conn.fetchval("SELECT 1 FROM pg_extension WHERE extname = 'btree_gin'")
    if found is None:
        log.warning(
            "PostgreSQL: the btree_gin extension is missing, so the search indexes cover"
            " every agent (slower searches where agents share the tables); see 'The"
            " btree_gin extension' in docs/operators/growing.md"
        )
