"""Single-statement reads on PostgreSQL, on a few connections held from the pool.

Taking a connection from asyncpg's pool and giving it back (a proxy, a shielded task, the
idle timer re-armed) costs about as much CPU as the read itself: one read by primary key
took 141-152 µs of the process's CPU through the pool and 71 µs on a connection already
held. Reads are most of what a turn asks the database, so the reader holds up to half the
pool's connections while the database is open and hands them out itself. Everything else
about a connection stays the pool's: a read that fails or is cancelled gives its connection
back to the pool, which waits for the cancellation or replaces a broken connection, and the
next read takes another; so does one whose connection the server ended while it was free.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import asyncpg

T = TypeVar("T")


class HeldReaders:
    """Connections held from `pool` for reads: at most `size` (taken when first needed);
    a read waits for a free one."""

    def __init__(self, pool: asyncpg.Pool, size: int):
        self._pool = pool
        self.size = size
        self._slots = asyncio.Semaphore(size)
        self._free: list[Any] = []
        self._returning: set[asyncio.Task] = set()
        self._closed = False

    async def _on_one(self, read: Callable[[Any], Awaitable[T]]) -> T:
        async with self._slots:
            conn = self._free.pop() if self._free else await self._pool.acquire()
            if not await self._still_open(conn):
                conn = await self._pool.acquire()
            try:
                result = await read(conn)
            except BaseException:
                # The pool cleans it (waits for a cancelled query, drops a broken one).
                task = asyncio.ensure_future(self._pool.release(conn))
                self._returning.add(task)
                task.add_done_callback(self._returning.discard)
                raise
            if self._closed:  # a read that ended after close(): the pool waits for it
                await self._pool.release(conn)
            else:
                self._free.append(conn)
            return result

    async def _still_open(self, conn: Any) -> bool:
        """Whether a held connection is still open; the server may have ended it while it
        was free (the pool replaces it)."""
        try:
            if not conn.is_closed():
                return True
        except asyncpg.InterfaceError:
            return False  # the pool took it back itself when it closed
        await self._pool.release(conn)
        return False

    # The pool's methods for one statement, as PgTx calls them.
    async def execute(self, sql: str, *args: Any) -> str:
        return await self._on_one(lambda conn: conn.execute(sql, *args))

    async def executemany(self, sql: str, rows: list[tuple]) -> None:
        await self._on_one(lambda conn: conn.executemany(sql, rows))

    async def fetch(self, sql: str, *args: Any) -> list[Any]:
        return await self._on_one(lambda conn: conn.fetch(sql, *args))

    async def fetchrow(self, sql: str, *args: Any) -> Any:
        return await self._on_one(lambda conn: conn.fetchrow(sql, *args))

    async def fetchval(self, sql: str, *args: Any) -> Any:
        return await self._on_one(lambda conn: conn.fetchval(sql, *args))

    async def close(self) -> None:
        """Give every connection back to the pool (before it closes)."""
        self._closed = True
        if self._returning:
            await asyncio.gather(*self._returning, return_exceptions=True)
        free, self._free = self._free, []
        for conn in free:
            await self._pool.release(conn)
