"""Open every connection an app's pools may open, so a test that counts file descriptors
or threads before and after a load counts from the pools' full size, not from what the
warm-up happened to need."""

from __future__ import annotations

import asyncio

from agentsvc.api import app_keys

# A read that keeps one SQLite reader busy for a few hundred milliseconds.
SLOW_READ = (
    "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 1000000)"
    " SELECT count(*) FROM c"
)


async def open_every_connection(app) -> None:
    db = app[app_keys.db_key]
    pool = getattr(db, "_pool", None)
    if pool is not None:  # PostgreSQL: its pool opens connections as load needs, up to its size
        # The reader holds up to half of them (db/pg_readers.py): as many reads at once open
        # its own; the pool's others are opened by taking them.
        readers = db._held.size if db._held is not None else 0
        await asyncio.gather(*(db.reader.fetchval("SELECT pg_sleep(0.05)") for _ in range(readers)))
        held = [await pool.acquire() for _ in range(pool.get_max_size() - readers)]
        for connection in held:
            await pool.release(connection)
    else:  # SQLite: a reader opens when the others are held by slow reads, up to the count
        slow = []
        for _ in range(50):  # a loaded machine may finish a slow read before the next opens
            if len(db._readers) >= db.reader_count:
                break
            slow.append(asyncio.ensure_future(db.reader.fetchval(SLOW_READ)))
            await asyncio.sleep(0.02)  # each read is then the oldest of a busy reader
            await db.reader.settle()  # the reader it asked for is open
        await asyncio.gather(*slow)
        assert len(db._readers) == db.reader_count
    redis_pool = getattr(app[app_keys.limiter_key], "_pool", None)
    if redis_pool is not None:  # Redis: the limiter's pool too, up to its cap
        held = [await redis_pool.get_connection() for _ in range(redis_pool.max_connections)]
        for connection in held:
            await redis_pool.release(connection)
