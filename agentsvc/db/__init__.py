"""The database interface every store function and service is written against.

Store functions receive a `Tx` and run SQL through it. Reads go through `db.reader` (each
statement on its own, outside any transaction); a unit of writes is an `async with
db.write() as tx:` block (one transaction, committed when the block ends, rolled back when
it raises), or `await db.write_batched(unit)` for small hot writes that may share a
transaction with others (`unit` is an async function of a Tx). Nothing above `store/`
sees a driver's connection or its exceptions (a broken constraint is
`ConstraintViolation`). SQL uses `?` placeholders and may use `RETURNING`; a backend that
numbers its placeholders (PostgreSQL's `$1`) rewrites them. Where the two dialects differ
(full-text search, row locks), a store function asks `tx.dialect`. `sqlite.py` and
`postgres.py` implement it.

Caches of other processes learn of changes through `announce(topic)`/`subscribe(callback)`:
on SQLite (one process) that is a local call; on PostgreSQL a NOTIFY every process hears.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable, Iterable, Sequence
from contextlib import AbstractAsyncContextManager
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

if TYPE_CHECKING:
    from agentsvc.config import Settings
    from agentsvc.db.upgrade import Survey, Upgrader

T = TypeVar("T")
F = TypeVar("F", bound=Callable[..., Any])
Params = Sequence[Any]
Row = Any  # indexable by position and by column name (sqlite3.Row, asyncpg.Record)


RESYNC = "*"  # the topic that means "anything may have changed": forget every cache


class ConstraintViolation(Exception):
    """A statement broke a UNIQUE, FOREIGN KEY, NOT NULL or CHECK constraint."""


class VectorSearchUnavailable(Exception):
    """The database cannot rank vectors itself (`vector_reader`); the message says why."""


def raises_constraint_violation(
    driver_error: type[Exception], lost: tuple[type[BaseException], ...] = ()
) -> Callable[[F], F]:
    """Wrap a Tx method `(self, sql, params)` so the driver's integrity error (sqlite3's
    IntegrityError, asyncpg's IntegrityConstraintViolationError) is a ConstraintViolation,
    and a `lost` connection's error is told to the Tx's `_on_lost` before it is raised (the
    database is then pinged at once). One wrapper: each layer costs every statement."""

    def wrap(method: F) -> F:
        @functools.wraps(method)
        async def run(self: Any, sql: str, params: Any = ()) -> Any:
            try:
                return await method(self, sql, params)
            except driver_error as exc:
                raise ConstraintViolation(str(exc)) from exc
            except lost as exc:
                on_lost = self._on_lost
                if on_lost is not None:
                    on_lost(exc)
                raise

        return run  # type: ignore[return-value]

    return wrap


class Tx(Protocol):
    """Statements of one unit of work, all on one connection."""

    dialect: str  # "sqlite" or "postgresql"

    async def execute(self, sql: str, params: Params = ()) -> int:
        """Run one statement; return the number of rows it changed."""
        ...

    async def executemany(self, sql: str, rows: Iterable[Params]) -> None:
        """Run one statement once per parameter row."""
        ...

    async def fetchall(self, sql: str, params: Params = ()) -> list[Row]:
        """Every row of a query."""
        ...

    async def fetchone(self, sql: str, params: Params = ()) -> Row | None:
        """The first row of a query, or None."""
        ...

    async def fetchval(self, sql: str, params: Params = ()) -> Any:
        """The first column of the first row, or None."""
        ...


class Database(Protocol):
    """What the app needs from a database; `database_for` picks the implementation."""

    shared: bool  # whether several processes may use it at once (PostgreSQL)
    # False while the database server does not answer this process (PostgreSQL: a ping
    # every PROBE_SECONDS on the listening connection fails or times out); SQLite: True.
    reachable: bool
    upgrader: Upgrader  # how open() upgrades its schema; `.done` says what it did

    @property
    def reader(self) -> Tx:
        """Reads outside any transaction: each statement sees the latest commit and never
        blocks a writer (SQLite: the query-only connection; a pool: any free connection)."""
        ...

    def write(self) -> AbstractAsyncContextManager[Tx]:
        """One transaction: committed at the end of the block, rolled back if it raises.

        It holds the writer (other writes wait) for as long as the block runs: run only SQL
        in it. Longer than `[database] slow_write_ms` logs a warning naming the block
        (see holds.py); the test suite fails a test whose block holds it over 100 ms."""
        ...

    async def write_batched(self, fn: Callable[[Tx], Awaitable[T]]) -> T:
        """Run `fn` in a transaction it may share with other small writes; return its result.

        `fn` fails alone (its own savepoint); the call returns after the commit.
        """
        ...

    async def write_statement(self, fn: Callable[[Tx], Awaitable[T]]) -> T:
        """Run `fn`, which writes with one statement, committed on its own; return its
        result. SQLite: batched with other small writes, as `write_batched`; PostgreSQL: the
        statement alone, outside any transaction (no BEGIN and COMMIT round trips, and no
        batch whose rows another process's batch could take in the opposite order)."""
        ...

    def maintenance(self) -> AbstractAsyncContextManager[Tx]:
        """Upkeep statements that run outside any transaction and may take long (PostgreSQL:
        `REINDEX ... CONCURRENTLY`, on a connection of its own with no statement timeout;
        SQLite: the writer, each statement committed alone)."""
        ...

    async def vector_reader(self) -> Tx:
        """Reads that may rank vectors inside the database (`vec_distance_cosine`), or
        VectorSearchUnavailable when the database cannot; callers then rank in memory."""
        ...

    def subscribe(self, callback: Callable[[str], None]) -> None:
        """Call `callback(topic)` for every change announced by any process (or RESYNC)."""
        ...

    async def announce(self, topic: str) -> None:
        """Tell every process's subscribers (this one's at once) that `topic` changed."""
        ...

    async def run_upkeep(self) -> None:
        """Background work until cancelled (SQLite: WAL checkpoints; PostgreSQL: listening
        for other processes' announcements)."""
        ...

    async def survey(self) -> Survey:
        """What open() would do to the schema (create, migrate, refuse), read on a
        connection of its own without changing anything; the database need not be open."""
        ...

    async def open(self) -> None: ...

    async def close(self) -> None: ...


def database_for(settings: Settings) -> Database:
    """The database the settings name: `[database] url` (PostgreSQL), else SQLite in the
    data directory. Opening it migrates the schema, after a backup (upgrade.py)."""
    from agentsvc.db.upgrade import upgrader_for

    if settings.database.url:
        from agentsvc.db.postgres import PostgresDatabase

        return PostgresDatabase(
            settings.database.url,
            pool_size=settings.database.pool_size,
            statement_timeout_seconds=settings.database.statement_timeout_seconds,
            slow_write_ms=settings.database.slow_write_ms,
            upgrader=upgrader_for(settings),
        )
    from agentsvc.db.sqlite import SqliteDatabase

    return SqliteDatabase(
        settings.db_path,
        readers=settings.database.readers,
        slow_write_ms=settings.database.slow_write_ms,
        upgrader=upgrader_for(settings),
    )
