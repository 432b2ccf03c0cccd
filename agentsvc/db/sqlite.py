"""The SQLite implementation of the database interface (the default; WAL mode, one file).

Connections: one writer (aiosqlite, its own thread) behind an asyncio lock, a few readers
(aiosqlite, query-only; WAL lets them read beside the writer and each other; see
`ReaderPool`; opened as needed), and one plain connection the batched writes use on the
event loop's thread (opened for the first batch). Small writes that come in floods (chat
messages, trigger events) are committed at once on the loop when the writer is free:
under load the two thread switches of a hop cost more than the write itself (measured:
~90,000 context switches and ~4 µs of CPU per trigger event less). So that no commit on
the loop ever runs a checkpoint and its fsyncs, no connection checkpoints on commit;
`run_checkpoints` (a background task the runtime starts) checkpoints on the writer's
thread once a second instead.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import logging
import os
import sqlite3
import sys
import time
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, TypeVar

import aiosqlite

from agentsvc.datadir import FILE_MODE, ensure_private_db_files
from agentsvc.db import Params, Row, Tx, VectorSearchUnavailable, raises_constraint_violation
from agentsvc.db.backups import copy_sqlite
from agentsvc.db.batcher import BATCH_HOLD_SECONDS, Failed, Unit, WriteBatcher
from agentsvc.db.holds import Slowest, WriteClock, awaited
from agentsvc.db.migrations import VERSIONS, schema_version, sqlite_schema
from agentsvc.db.upgrade import Survey, Upgrader, UpgradeRefused, read_version

log = logging.getLogger(__name__)
T = TypeVar("T")

BUSY_TIMEOUT_MS = 5000
CHECKPOINT_INTERVAL_SECONDS = 1.0
_PRAGMAS = f"""
    PRAGMA journal_mode = WAL;
    PRAGMA synchronous = NORMAL;
    PRAGMA foreign_keys = ON;
    PRAGMA busy_timeout = {BUSY_TIMEOUT_MS};
"""
# WAL lets readers run beside the writer; NORMAL survives a process crash (kill -9), not a
# power loss, at a fraction of FULL's fsync cost.


_constraints = raises_constraint_violation(sqlite3.IntegrityError)


class ThreadTx:
    """A Tx on an aiosqlite connection: each statement is one hop to its thread (while it
    waits, the loop runs other tasks: `awaited` keeps their CPU out of a hold's)."""

    dialect = "sqlite"

    __slots__ = ("_aio",)

    def __init__(self, conn: aiosqlite.Connection):
        self._aio = conn

    @_constraints
    async def execute(self, sql: str, params: Params = ()) -> int:
        cursor = await awaited(self._aio.execute(sql, params))
        return cursor.rowcount

    @_constraints
    async def executemany(self, sql: str, rows: Iterable[Params]) -> None:
        await awaited(self._aio.executemany(sql, rows))

    @_constraints
    async def fetchall(self, sql: str, params: Params = ()) -> list[Row]:
        return list(await awaited(self._aio.execute_fetchall(sql, params)))

    @_constraints
    async def fetchone(self, sql: str, params: Params = ()) -> Row | None:
        rows = await awaited(self._aio.execute_fetchall(sql, params))
        return next(iter(rows), None)

    @_constraints
    async def fetchval(self, sql: str, params: Params = ()) -> Any:
        rows = await awaited(self._aio.execute_fetchall(sql, params))
        row = next(iter(rows), None)
        return None if row is None else row[0]


# A reader whose oldest statement has waited or run this long is taken to be busy with a
# slow read (a report, an export): new statements go to another reader meanwhile.
SLOW_READ_SECONDS = 0.005


class _Reader:
    __slots__ = ("tx", "started")

    def __init__(self, conn: aiosqlite.Connection):
        self.tx = ThreadTx(conn)
        self.started: deque[float] = deque()  # when each statement in flight was sent


class ReaderPool:
    """A Tx whose statements go to one of a few query-only connections.

    The first reader takes every statement while it keeps up, so statements issued
    together share one wake-up of its thread; when its oldest statement is older than
    SLOW_READ_SECONDS, the statement goes to the reader with the fewest in flight. A slow
    read thus holds one connection, never the whole service. Readers after the first are
    opened when first needed, up to `size` (each connection costs about 2 ms of CPU to
    open, reading the schema, and most processes, commands and tests never need them).
    """

    dialect = "sqlite"

    __slots__ = ("_readers", "_size", "_connect", "_opening")

    def __init__(
        self, first: _Reader, size: int, connect: Callable[[], Awaitable[aiosqlite.Connection]]
    ):
        self._readers = [first]
        self._size = size
        self._connect = connect
        self._opening: asyncio.Future[_Reader] | None = None

    def _pick(self) -> _Reader | None:
        """The reader to use; None when all are busy and another may be opened."""
        first = self._readers[0]
        if not first.started or self._size == 1:
            return first
        if time.monotonic() - first.started[0] < SLOW_READ_SECONDS:
            return first
        idle = min(self._readers, key=lambda r: len(r.started))
        if idle.started and len(self._readers) < self._size:
            return None
        return idle

    async def _grow(self) -> _Reader:
        """Open one more reader (statements that need it meanwhile wait for the same one;
        shielded: a cancelled statement does not cancel the opening)."""
        if self._opening is None:
            self._opening = asyncio.ensure_future(self._open_one())
        return await asyncio.shield(self._opening)

    async def _open_one(self) -> _Reader:
        try:
            reader = _Reader(await self._connect())
        finally:
            self._opening = None
        self._readers.append(reader)
        return reader

    async def settle(self) -> None:
        """Wait for a reader being opened (before the connections close)."""
        if self._opening is not None:
            await asyncio.gather(self._opening, return_exceptions=True)

    async def _run(self, method: str, sql: str, params: Any) -> Any:
        reader = self._pick() or await self._grow()
        # Statements of one connection complete in the order they were sent (one thread).
        reader.started.append(time.monotonic())
        try:
            return await getattr(reader.tx, method)(sql, params)
        finally:
            reader.started.popleft()

    async def execute(self, sql: str, params: Params = ()) -> int:
        return await self._run("execute", sql, params)

    async def executemany(self, sql: str, rows: Iterable[Params]) -> None:
        await self._run("executemany", sql, rows)

    async def fetchall(self, sql: str, params: Params = ()) -> list[Row]:
        return await self._run("fetchall", sql, params)

    async def fetchone(self, sql: str, params: Params = ()) -> Row | None:
        return await self._run("fetchone", sql, params)

    async def fetchval(self, sql: str, params: Params = ()) -> Any:
        return await self._run("fetchval", sql, params)


class LoopTx:
    """A Tx on a plain connection used on the loop's thread (batched writes only).

    Its methods never suspend, so a batch runs start to commit without yielding the loop.
    """

    dialect = "sqlite"

    __slots__ = ("_raw",)

    def __init__(self, raw: sqlite3.Connection):
        self._raw = raw

    @_constraints
    async def execute(self, sql: str, params: Params = ()) -> int:
        return self._raw.execute(sql, params).rowcount

    @_constraints
    async def executemany(self, sql: str, rows: Iterable[Params]) -> None:
        self._raw.executemany(sql, rows)

    @_constraints
    async def fetchall(self, sql: str, params: Params = ()) -> list[Row]:
        return self._raw.execute(sql, params).fetchall()

    @_constraints
    async def fetchone(self, sql: str, params: Params = ()) -> Row | None:
        return _first(self._raw.execute(sql, params))

    @_constraints
    async def fetchval(self, sql: str, params: Params = ()) -> Any:
        row = _first(self._raw.execute(sql, params))
        return None if row is None else row[0]


def _first(cursor: sqlite3.Cursor) -> Row | None:
    # Closed at once: a statement left holding rows (an INSERT ... RETURNING read to its
    # first row) stays active after COMMIT and blocks checkpoints and savepoints.
    row = cursor.fetchone()
    cursor.close()
    return row


def sqlite_vec_available() -> bool:
    """True when this Python's sqlite3 can load extensions and sqlite-vec is installed."""
    if not hasattr(sqlite3.Connection, "enable_load_extension"):
        return False
    try:
        import sqlite_vec  # noqa: F401
    except ImportError:
        return False
    return True


async def _connect(path: Path) -> aiosqlite.Connection:
    conn = await aiosqlite.connect(path, isolation_level=None)
    conn.row_factory = sqlite3.Row
    await conn.executescript(_PRAGMAS)
    return conn


async def _rollback_if_begun(conn: aiosqlite.Connection) -> None:
    try:
        await conn.execute("ROLLBACK")
    except sqlite3.OperationalError:
        pass  # nothing was begun


class SqliteDatabase:
    """The app's SQLite database (see the module's docstring)."""

    shared = False  # one serving process (CLI commands may write beside it)
    reachable = True  # a file of this machine

    def __init__(
        self,
        path: Path,
        *,
        readers: int = 3,
        slow_write_ms: float = 200,
        upgrader: Upgrader | None = None,
    ):
        self.path = path
        # Without one (a bare database in a test): migrations run with no backup.
        self.upgrader = upgrader or Upgrader(str(path))
        self.clock = WriteClock(slow_write_ms)
        self.reader_count = readers
        self._writer: aiosqlite.Connection | None = None
        self._readers: list[aiosqlite.Connection] = []
        self._loop_writer: sqlite3.Connection | None = None
        self._read_tx: ReaderPool | None = None
        self._vector_reader: aiosqlite.Connection | None = None
        self._write_lock = asyncio.Lock()
        self._batcher = WriteBatcher(self._write_batch)
        self.commits_since_checkpoint = 0
        self._subscribers: list[Callable[[str], None]] = []

    def subscribe(self, callback: Callable[[str], None]) -> None:
        """Call `callback(topic)` for every change announced in this process."""
        self._subscribers.append(callback)

    async def announce(self, topic: str) -> None:
        """One process: the subscribers hear of it at once."""
        for callback in self._subscribers:
            try:
                callback(topic)
            except Exception:
                log.exception("a change subscriber failed on %r", topic)

    async def open(self) -> None:
        """Open the connections, creating and migrating the database as needed.

        When any step fails (a migration, a newer schema), what was opened is closed again:
        an open aiosqlite connection's thread would keep the process from exiting.
        """
        try:
            await self._open()
        except BaseException:
            await self.close()
            raise

    async def _open(self) -> None:
        ensure_private_db_files(self.path)
        self._writer = await _connect(self.path)
        # Fetched to the end: a pragma's statement left holding its result row counts as a
        # write in progress, and SQLite then refuses savepoints on this connection.
        await self._writer.execute_fetchall("PRAGMA wal_autocheckpoint = 0")
        await self._migrate()
        self._read_tx = ReaderPool(
            _Reader(await self._connect_reader()), self.reader_count, self._connect_reader
        )

    async def _connect_reader(self) -> aiosqlite.Connection:
        reader = await _connect(self.path)
        self._readers.append(reader)
        await reader.execute("PRAGMA query_only = ON")
        return reader

    def _open_loop_writer(self) -> None:
        """The batched writes' connection, opened (in a worker thread) for the first batch:
        most commands and many processes never batch a write."""
        raw = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        raw.row_factory = sqlite3.Row
        raw.executescript(_PRAGMAS)
        raw.execute("PRAGMA wal_autocheckpoint = 0").fetchall()
        # Never wait on the loop: a CLI command writing in another process means "busy".
        raw.execute("PRAGMA busy_timeout = 0")
        self._loop_writer = raw

    async def close(self) -> None:
        """Commit queued batched writes, then close every connection (closing checkpoints)."""
        await self._batcher.close()
        if self._read_tx is not None:
            await self._read_tx.settle()
        if self._loop_writer is not None:
            self._loop_writer.close()
        for conn in (self._vector_reader, *self._readers, self._writer):
            if conn is not None:
                await conn.close()
        self._readers = []
        self._writer = self._loop_writer = self._read_tx = None
        self._vector_reader = None

    @property
    def reader(self) -> Tx:
        """Reads on the query-only connections (each statement sees the latest commit)."""
        assert self._read_tx is not None, "database is not open"
        return self._read_tx

    @asynccontextmanager
    async def write(self) -> AsyncIterator[Tx]:
        """One `BEGIN IMMEDIATE` transaction on the single writer, timed (see holds.py)."""
        assert self._writer is not None, "database is not open"
        opener = sys._getframe(2)  # the `async with`: named only if the transaction is slow
        lasti = opener.f_lasti
        async with self._write_lock:
            started = self.clock.start()
            conn = self._writer
            try:
                try:
                    await awaited(conn.execute("BEGIN IMMEDIATE"))
                except BaseException:
                    # Cancelled while BEGIN runs on in the writer's thread (or BEGIN failed):
                    # what it began ends before the next writer's turn (the ROLLBACK is
                    # queued behind it), or every later BEGIN would fail.
                    with contextlib.suppress(BaseException):
                        await asyncio.shield(_rollback_if_begun(conn))
                    raise
                try:
                    yield ThreadTx(conn)
                except BaseException:
                    # Shielded: a cancelled request must still end its transaction.
                    await awaited(asyncio.shield(conn.execute("ROLLBACK")))
                    raise
                else:
                    await awaited(asyncio.shield(conn.execute("COMMIT")))
                    self.commits_since_checkpoint += 1
            finally:
                self.clock.stopped(started, opener, lasti)

    @asynccontextmanager
    async def maintenance(self) -> AsyncIterator[Tx]:
        """The writer outside a transaction: each statement commits alone (hold it briefly:
        other writes wait for the lock)."""
        assert self._writer is not None, "database is not open"
        async with self._write_lock:
            yield ThreadTx(self._writer)

    async def vector_reader(self) -> Tx:
        """Reads on a connection of their own with sqlite-vec loaded (`vec_distance_cosine`).

        Raises VectorSearchUnavailable when this Python's sqlite3 cannot load extensions,
        sqlite-vec is not installed, or loading it fails.
        """
        if self._vector_reader is None:
            if not sqlite_vec_available():
                raise VectorSearchUnavailable(
                    "this Python's sqlite3 cannot load extensions (no enable_load_extension)"
                    " or sqlite-vec is not installed"
                )
            import sqlite_vec

            conn = await aiosqlite.connect(self.path, isolation_level=None)
            try:
                await conn.enable_load_extension(True)
                await conn.load_extension(sqlite_vec.loadable_path())
                await conn.enable_load_extension(False)
                await conn.execute("PRAGMA query_only = ON")
            except sqlite3.Error as exc:
                await conn.close()
                raise VectorSearchUnavailable(f"loading sqlite-vec failed: {exc}") from exc
            self._vector_reader = conn
        return ThreadTx(self._vector_reader)

    async def write_batched(self, fn: Callable[[Tx], Awaitable[T]]) -> T:
        """Run `fn` in a transaction shared with other queued small writes (see batcher.py)."""
        return await self._batcher.submit(fn)

    async def write_statement(self, fn: Callable[[Tx], Awaitable[T]]) -> T:
        """One statement's write: batched like any small write (one writer here)."""
        return await self.write_batched(fn)

    async def _write_batch(self, units: list[Callable[[Tx], Awaitable[Any]]]) -> list[Any]:
        """Commit a batch, each unit in its own savepoint; a unit's error is its result.
        Timed as one transaction; a slow one names its slowest unit."""
        assert self._writer is not None, "database is not open"
        async with self._write_lock:
            if self._loop_writer is None:
                await asyncio.to_thread(self._open_loop_writer)
            started = self.clock.start()
            slowest = Slowest(units[0])
            try:
                return await self._write_units(units, slowest)
            finally:
                self.clock.stopped(started, slowest)

    async def _write_units(self, units: list[Unit], slowest: Slowest) -> list[Any]:
        raw = self._loop_writer
        assert raw is not None
        try:
            raw.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError:
            # Another process holds SQLite's write lock: wait for it on the writer's thread.
            return await self._write_batch_waiting(units, slowest)
        try:
            results = await _run_units(LoopTx(raw), units, _savepoint_on(raw), slowest)
        except BaseException:
            raw.execute("ROLLBACK")
            raise
        raw.execute("COMMIT")
        self.commits_since_checkpoint += 1
        return results

    async def _write_batch_waiting(self, units: list[Unit], slowest: Slowest) -> list[Any]:
        conn = self._writer
        assert conn is not None
        await conn.execute("BEGIN IMMEDIATE")
        try:
            results = await _run_units(ThreadTx(conn), units, _savepoint_via(conn), slowest)
        except BaseException:
            await asyncio.shield(conn.execute("ROLLBACK"))
            raise
        await asyncio.shield(conn.execute("COMMIT"))
        self.commits_since_checkpoint += 1
        return results

    async def checkpoint(self) -> None:
        """Copy committed pages from the WAL into the database file (on the writer's thread)."""
        assert self._writer is not None, "database is not open"
        async with self._write_lock:
            self.commits_since_checkpoint = 0
            await self._writer.execute_fetchall("PRAGMA wal_checkpoint(PASSIVE)")

    async def run_upkeep(self) -> None:
        """Background upkeep until cancelled: WAL checkpoints."""
        await self.run_checkpoints()

    async def run_checkpoints(self, interval: float = CHECKPOINT_INTERVAL_SECONDS) -> None:
        """Checkpoint every `interval` seconds after commits (runs until cancelled)."""
        while True:
            await asyncio.sleep(interval)
            if self.commits_since_checkpoint:
                try:
                    await self.checkpoint()
                except sqlite3.Error:  # busy or locked: the next round tries again
                    log.warning("WAL checkpoint failed", exc_info=True)

    async def survey(self) -> Survey:
        """What open() would do, read on a read-only connection (no file: a new one)."""
        if not self.path.is_file() or not self.path.stat().st_size:
            return Survey(None, ())
        conn = await aiosqlite.connect(f"file:{self.path}?mode=ro", uri=True)
        try:
            return await self.upgrader.survey(ThreadTx(conn))
        finally:
            await conn.close()

    async def _migrate(self) -> None:
        """Create or upgrade the schema (upgrade.py: one process at a time, each migration
        a transaction of its own, after a backup)."""
        tx = ThreadTx(self._writer)
        found, _ = await read_version(tx)
        if found == schema_version():
            return
        async with _upgrade_lock(self.path):
            survey = await self.upgrader.survey(tx)  # again: another process may have done it
            if survey.refusal is not None:
                raise UpgradeRefused(survey.refusal)
            if survey.found is None:
                # A new database gets the current schema in one go.
                version_sql = f"PRAGMA user_version = {schema_version()};"
                script = f"BEGIN IMMEDIATE;\n{sqlite_schema()}\n{version_sql}\nCOMMIT;"
                await self._run_script(script)
                self.upgrader.created()
            elif survey.steps:
                await self._upgrade(survey)

    async def _upgrade(self, survey: Survey) -> None:
        found = survey.found
        assert found is not None
        upgrader = self.upgrader
        upgrader.check_beside_servers(found)
        backup = await upgrader.back_up(
            found, lambda target: asyncio.to_thread(copy_sqlite, self.path, target)
        )
        reached = found
        for step in survey.steps:
            started = time.monotonic()
            script = VERSIONS[step.version - 1].sqlite
            try:
                await self._run_script(
                    f"BEGIN IMMEDIATE;\n{script}\nPRAGMA user_version = {step.version};\nCOMMIT;"
                )
            except sqlite3.Error as exc:
                raise upgrader.failed(found, step, reached, backup, str(exc)) from None
            reached = step.version
            upgrader.migrated(step, started)
        upgrader.finished(found, backup)

    async def _run_script(self, script: str) -> None:
        """Run a script that is one transaction; rolled back when a statement fails."""
        conn = self._writer
        assert conn is not None
        try:
            await conn.executescript(script)
        except BaseException:
            if conn.in_transaction:
                await asyncio.shield(conn.execute("ROLLBACK"))
            raise


UPGRADE_LOCK_POLL_SECONDS = 0.05


@asynccontextmanager
async def _upgrade_lock(db_path: Path) -> AsyncIterator[None]:
    """Hold the file lock beside the database that one upgrading process holds at a time
    (flock: released by the system however the holder ends). Waited for by polling, so a
    cancelled start leaves no thread blocked on it."""
    lock_path = db_path.with_name(db_path.name + "-upgrade.lock")
    fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, FILE_MODE)
    try:
        said = False
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if not said:
                    log.info("waiting for another process that is upgrading %s", db_path)
                    said = True
                await asyncio.sleep(UPGRADE_LOCK_POLL_SECONDS)
        yield
    finally:
        os.close(fd)


Savepoint = Callable[[str], Awaitable[None]]


def _savepoint_on(raw: sqlite3.Connection) -> Savepoint:
    async def run(statement: str) -> None:
        raw.execute(statement)

    return run


def _savepoint_via(conn: aiosqlite.Connection) -> Savepoint:
    async def run(statement: str) -> None:
        await conn.execute(statement)

    return run


async def _run_units(
    tx: Tx, units: list[Unit], savepoint: Savepoint, slowest: Slowest
) -> list[Any]:
    results: list[Any] = []
    stop_at = time.perf_counter() + BATCH_HOLD_SECONDS
    for unit in units:
        began = time.perf_counter()
        if results and began > stop_at:
            break  # the rest wait for the next transaction (batcher.py)
        await savepoint("SAVEPOINT unit")
        try:
            results.append(await unit(tx))
        except Exception as exc:
            await savepoint("ROLLBACK TO unit")
            results.append(Failed(exc))
        await savepoint("RELEASE unit")
        slowest.saw(unit, time.perf_counter() - began)
    return results
