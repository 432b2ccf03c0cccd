"""SQLite connections: one writer behind a lock, a reader, schema and migrations."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from importlib import resources
from pathlib import Path

import aiosqlite

from agentsvc.migrations import MIGRATIONS

BUSY_TIMEOUT_MS = 5000


def schema_sql() -> str:
    """Return the current schema: packaged in the wheel, or beside the package in a checkout."""
    packaged = resources.files("agentsvc").joinpath("schema.sql")
    if packaged.is_file():
        return packaged.read_text(encoding="utf-8")
    return (Path(__file__).resolve().parent.parent / "schema.sql").read_text(encoding="utf-8")


def schema_version() -> int:
    """The `user_version` a fully migrated database has."""
    return 1 + len(MIGRATIONS)


async def _connect(path: Path) -> aiosqlite.Connection:
    conn = await aiosqlite.connect(path, isolation_level=None)
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

    async def open(self) -> None:
        """Open the connections, creating and migrating the database as needed."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._writer = await _connect(self.path)
        await self._migrate()
        self._reader = await _connect(self.path)
        await self._reader.execute("PRAGMA query_only = ON")

    async def close(self) -> None:
        """Close both connections."""
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

    async def run_sync(self, fn: Callable[[sqlite3.Connection], object]) -> object:
        """Run `fn(raw_connection)` in a write transaction on the writer's thread.

        One thread hop for a whole batch of statements (used by batching writers).
        """
        assert self._writer is not None, "database is not open"

        def job(raw: sqlite3.Connection) -> object:
            raw.execute("BEGIN IMMEDIATE")
            try:
                result = fn(raw)
            except BaseException:
                raw.execute("ROLLBACK")
                raise
            raw.execute("COMMIT")
            return result

        async with self._write_lock:
            return await self._writer._execute(job, self._writer._conn)  # noqa: SLF001

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
