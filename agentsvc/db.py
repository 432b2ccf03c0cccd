"""SQLite connections: one writer behind a lock, a reader, schema and migrations.

Writes normally run on the writer's aiosqlite thread. Small batched writes that come in
floods (trigger events, chat messages) may instead run at once on the event loop's thread
(`write_now`): under load the two thread switches of a hop cost more than the write itself
(measured: ~90,000 context switches and ~4 µs of CPU per trigger event less). So that no
commit on the loop ever runs a checkpoint and its fsyncs, the writer does not checkpoint
on commit; a background task checkpoints on the writer's thread once a second instead.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sqlite3
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from importlib import resources
from pathlib import Path
from typing import TypeVar

import aiosqlite

from agentsvc.datadir import ensure_private_db_files
from agentsvc.migrations import MIGRATIONS

log = logging.getLogger(__name__)
T = TypeVar("T")

BUSY_TIMEOUT_MS = 5000
CHECKPOINT_INTERVAL_SECONDS = 1.0


def schema_sql() -> str:
    """Return the current schema: packaged in the wheel, or beside the package in a checkout."""
    packaged = resources.files("agentsvc").joinpath("schema.sql")
    if packaged.is_file():
        return packaged.read_text(encoding="utf-8")
    return (Path(__file__).resolve().parent.parent / "schema.sql").read_text(encoding="utf-8")


def schema_version() -> int:
    """The `user_version` a fully migrated database has."""
    return 1 + len(MIGRATIONS)


def _run_and_commit(raw: sqlite3.Connection, fn: Callable[[sqlite3.Connection], T]) -> T:
    """Run `fn` in the transaction just begun: commit, or roll back and re-raise."""
    try:
        result = fn(raw)
    except BaseException:
        raw.execute("ROLLBACK")
        raise
    raw.execute("COMMIT")
    return result


class WriterBusy(Exception):
    """The writer is in a transaction (of this process or another): use `run_sync`."""


async def _connect(path: Path) -> aiosqlite.Connection:
    # check_same_thread off: `write_now` uses the writer on the loop's thread, while no
    # aiosqlite call is using it (both happen only under the write lock).
    conn = await aiosqlite.connect(path, isolation_level=None, check_same_thread=False)
    conn.row_factory = sqlite3.Row
    # WAL lets readers run beside the writer; NORMAL survives a process crash (kill -9),
    # not a power loss, at a fraction of FULL's fsync cost.
    await conn.executescript(
        f"""
        PRAGMA journal_mode = WAL;
        PRAGMA synchronous = NORMAL;
        PRAGMA foreign_keys = ON;
        PRAGMA busy_timeout = {BUSY_TIMEOUT_MS};
        """
    )
    return conn


class Database:
    """The app's database: `write()` for transactions, `reader` for reads."""

    def __init__(self, path: Path):
        self.path = path
        self._writer: aiosqlite.Connection | None = None
        self._reader: aiosqlite.Connection | None = None
        self._write_lock = asyncio.Lock()
        self._checkpointer: asyncio.Task[None] | None = None
        self._commits = 0  # since the last checkpoint

    async def open(self) -> None:
        """Open the connections, creating and migrating the database as needed."""
        ensure_private_db_files(self.path)
        self._writer = await _connect(self.path)
        # Fetched to the end: a pragma's statement left holding its result row counts as a
        # write in progress, and SQLite then refuses savepoints on this connection.
        await self._writer.execute_fetchall("PRAGMA wal_autocheckpoint = 0")
        await self._migrate()
        self._reader = await _connect(self.path)
        await self._reader.execute("PRAGMA query_only = ON")
        self._checkpointer = asyncio.create_task(self._checkpoint_periodically())

    async def close(self) -> None:
        """Stop checkpointing and close both connections (closing checkpoints the rest)."""
        if self._checkpointer is not None:
            self._checkpointer.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._checkpointer
            self._checkpointer = None
        for conn in (self._reader, self._writer):
            if conn is not None:
                await conn.close()
        self._reader = self._writer = None

    @property
    def reader(self) -> aiosqlite.Connection:
        """The read-only connection (WAL snapshot reads; never blocks the writer)."""
        assert self._reader is not None, "database is not open"
        return self._reader

    @asynccontextmanager
    async def write(self) -> AsyncIterator[aiosqlite.Connection]:
        """Run a block in one `BEGIN IMMEDIATE` transaction on the single writer."""
        assert self._writer is not None, "database is not open"
        async with self._write_lock:
            conn = self._writer
            await conn.execute("BEGIN IMMEDIATE")
            try:
                yield conn
            except BaseException:
                # Shielded: a cancelled request must still end its transaction.
                await asyncio.shield(conn.execute("ROLLBACK"))
                raise
            else:
                await asyncio.shield(conn.execute("COMMIT"))
                self._commits += 1

    async def run_sync(self, fn: Callable[[sqlite3.Connection], object]) -> object:
        """Run `fn(raw_connection)` in a write transaction on the writer's thread.

        One thread hop for a whole batch of statements (used by batching writers).
        """
        assert self._writer is not None, "database is not open"

        def job(raw: sqlite3.Connection) -> object:
            raw.execute("BEGIN IMMEDIATE")
            return _run_and_commit(raw, fn)

        async with self._write_lock:
            result = await self._writer._execute(job, self._writer._conn)  # noqa: SLF001
            self._commits += 1
            return result

    def write_now(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        """Run `fn(raw_connection)` in a write transaction at once, on the loop's thread.

        For small batched writes (see the module's docstring). Raises WriterBusy, having
        done nothing, when a transaction of this process is under way or another process
        holds SQLite's write lock: the caller then uses `run_sync`, which waits.
        """
        assert self._writer is not None, "database is not open"
        if self._write_lock.locked():
            raise WriterBusy()
        raw = self._writer._conn  # noqa: SLF001
        # Never wait on the loop: a CLI command writing in another process means "busy".
        raw.execute("PRAGMA busy_timeout = 0")
        try:
            raw.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError as exc:
            raise WriterBusy() from exc
        finally:
            raw.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        result = _run_and_commit(raw, fn)
        self._commits += 1
        return result

    async def checkpoint(self) -> None:
        """Copy committed pages from the WAL into the database file (on the writer's thread)."""
        assert self._writer is not None, "database is not open"
        async with self._write_lock:
            self._commits = 0
            await self._writer.execute_fetchall("PRAGMA wal_checkpoint(PASSIVE)")

    async def _checkpoint_periodically(self) -> None:
        while True:
            await asyncio.sleep(CHECKPOINT_INTERVAL_SECONDS)
            if self._commits:
                try:
                    await self.checkpoint()
                except sqlite3.Error:  # busy or locked: the next round tries again
                    log.warning("WAL checkpoint failed", exc_info=True)

    async def _migrate(self) -> None:
        conn = self._writer
        assert conn is not None
        rows = await conn.execute_fetchall("PRAGMA user_version")
        version = rows[0][0]
        if version == 0:
            # A new database gets the current schema in one go.
            version_sql = f"PRAGMA user_version = {schema_version()};"
            await conn.executescript(f"BEGIN IMMEDIATE;\n{schema_sql()}\n{version_sql}\nCOMMIT;")
            return
        for number, migration in enumerate(MIGRATIONS, start=2):
            if version < number:
                await conn.executescript(
                    f"BEGIN IMMEDIATE;\n{migration}\nPRAGMA user_version = {number};\nCOMMIT;"
                )
        if version > schema_version():
            raise RuntimeError(
                f"database {self.path} has schema version {version}, newer than this "
                f"agentsvc ({schema_version()}); upgrade agentsvc"
            )
