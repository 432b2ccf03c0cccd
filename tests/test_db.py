"""The database interface on SQLite: transactions, rollback, batched writes, checkpoints."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from pathlib import Path

import pytest

from agentsvc.db import ConstraintViolation, Tx
from agentsvc.db.migrations import schema_version
from agentsvc.db.sqlite import SqliteDatabase

# It measures the machine (timings, memory, recovery): it runs alone (tests/conftest.py).
pytestmark = pytest.mark.needs_the_machine


@pytest.fixture
async def db(tmp_path: Path):
    database = SqliteDatabase(tmp_path / "t.db")
    await database.open()
    async with database.write() as tx:
        await tx.execute("CREATE TABLE t (n INTEGER PRIMARY KEY, label TEXT)")
    try:
        yield database
    finally:
        await database.close()


async def numbers(db: SqliteDatabase) -> list[int]:
    tx = db.reader
    return [row["n"] for row in await tx.fetchall("SELECT n FROM t ORDER BY n")]


def insert(n: int, label: str = ""):
    async def unit(tx: Tx) -> int:
        return await tx.fetchval("INSERT INTO t (n, label) VALUES (?, ?) RETURNING n", (n, label))

    return unit


async def test_a_new_database_has_the_current_schema_version(db):
    tx = db.reader
    assert await tx.fetchval("PRAGMA user_version") == schema_version()


async def test_a_write_is_committed_when_its_block_ends(db):
    async with db.write() as tx:
        assert await tx.execute("INSERT INTO t (n) VALUES (?)", (1,)) == 1
        await tx.executemany("INSERT INTO t (n) VALUES (?)", [(2,), (3,)])
        assert await tx.execute("UPDATE t SET label = 'x' WHERE n >= 2") == 2
    assert await numbers(db) == [1, 2, 3]
    tx = db.reader
    row = await tx.fetchone("SELECT n, label FROM t WHERE n = ?", (2,))
    assert (row[0], row["label"]) == (2, "x")
    assert await tx.fetchone("SELECT n FROM t WHERE n = 99") is None
    assert await tx.fetchval("SELECT n FROM t WHERE n = 99") is None


async def test_a_write_that_raises_is_rolled_back(db):
    with pytest.raises(RuntimeError):
        async with db.write() as tx:
            await tx.execute("INSERT INTO t (n) VALUES (1)")
            raise RuntimeError("stop")
    assert await numbers(db) == []


async def test_a_broken_constraint_is_the_interfaces_error_and_rolls_back(db):
    with pytest.raises(ConstraintViolation):
        async with db.write() as tx:
            await tx.execute("INSERT INTO t (n) VALUES (1)")
            await tx.execute("INSERT INTO t (n) VALUES (1)")
    assert await numbers(db) == []


async def test_reads_cannot_write(db):
    with pytest.raises(sqlite3.OperationalError):
        tx = db.reader
        await tx.execute("INSERT INTO t (n) VALUES (1)")


async def test_a_cancelled_write_rolls_back_and_frees_the_writer(db):
    entered = asyncio.Event()

    async def slow() -> None:
        async with db.write() as tx:
            await tx.execute("INSERT INTO t (n) VALUES (1)")
            entered.set()
            await asyncio.sleep(30)

    task = asyncio.ensure_future(slow())
    await entered.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    async with db.write() as tx:
        await tx.execute("INSERT INTO t (n) VALUES (2)")
    assert await numbers(db) == [2]


async def test_a_write_cancelled_while_it_begins_leaves_no_transaction_open(db):
    """BEGIN runs on in the writer's thread when its caller is cancelled: what it began must
    end before the next writer's turn, or every later write fails ("cannot start a
    transaction within a transaction") until the process restarts."""
    for _ in range(20):  # cancelled at once, and after a few turns of the event loop
        for turns in (0, 1, 2):
            task = asyncio.ensure_future(_write_one(db, 1))
            for _ in range(turns):
                await asyncio.sleep(0)
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
            async with db.write() as tx:
                await tx.execute("DELETE FROM t")
    async with db.write() as tx:
        await tx.execute("INSERT INTO t (n) VALUES (2)")
    assert await numbers(db) == [2]


async def _write_one(db, n: int) -> None:
    async with db.write() as tx:
        await tx.execute("INSERT INTO t (n) VALUES (?)", (n,))


async def test_batched_writes_share_transactions_and_fail_alone(db):
    results = await asyncio.gather(
        *(db.write_batched(insert(n)) for n in (1, 2, 2, 3)), return_exceptions=True
    )
    assert results[:2] == [1, 2] and results[3] == 3
    assert isinstance(results[2], ConstraintViolation)
    batcher = db._batcher  # noqa: SLF001
    assert batcher.writes == 4 and batcher.batches < 4  # several units per transaction
    assert await numbers(db) == [1, 2, 3]


async def test_a_failing_unit_leaves_none_of_its_statements(db):
    async def two_then_fail(tx: Tx) -> None:
        await tx.execute("INSERT INTO t (n) VALUES (10)")
        await tx.execute("INSERT INTO t (n) VALUES (11)")
        raise ValueError("no")

    outcome = await asyncio.gather(
        db.write_batched(insert(1)), db.write_batched(two_then_fail), return_exceptions=True
    )
    assert outcome[0] == 1 and isinstance(outcome[1], ValueError)
    assert await numbers(db) == [1]


async def test_a_batched_write_whose_caller_went_away_is_still_made(db):
    async with db.write() as tx:  # the writer is busy: the batched writes queue up
        await tx.execute("INSERT INTO t (n) VALUES (1)")
        gone = asyncio.create_task(db.write_batched(insert(2)))
        kept = asyncio.create_task(db.write_batched(insert(3)))
        await asyncio.sleep(0.01)
        gone.cancel()
    assert await kept == 3
    assert gone.cancelled()
    assert await numbers(db) == [1, 2, 3]


async def test_batched_writes_wait_for_a_transaction_in_progress(db):
    order: list[str] = []
    started = asyncio.Event()

    async def long_write() -> None:
        async with db.write() as tx:
            started.set()
            await tx.execute("INSERT INTO t (n) VALUES (1)")
            await asyncio.sleep(0.05)  # held, yet under the suite's 100 ms limit
            order.append("write")

    async def batched() -> None:
        await started.wait()
        await db.write_batched(insert(2))
        order.append("batched")

    await asyncio.gather(long_write(), batched())
    assert order == ["write", "batched"]
    assert await numbers(db) == [1, 2]


async def test_batched_writes_wait_while_another_process_holds_the_lock(db):
    other = sqlite3.connect(db.path, isolation_level=None, check_same_thread=False)
    other.execute("BEGIN IMMEDIATE")
    other.execute("INSERT INTO t (n) VALUES (1)")
    # Waiting for it holds our writer too: released well under the suite's 100 ms limit.
    release = threading.Timer(0.04, lambda: other.execute("COMMIT"))
    release.start()
    try:
        assert await db.write_batched(insert(2)) == 2
    finally:
        release.join()
        other.close()
    assert await numbers(db) == [1, 2]


async def test_closing_commits_queued_batched_writes(tmp_path):
    path = tmp_path / "close.db"
    db = SqliteDatabase(path)
    await db.open()
    async with db.write() as tx:
        await tx.execute("CREATE TABLE t (n INTEGER PRIMARY KEY, label TEXT)")
    pending = [asyncio.ensure_future(db.write_batched(insert(n))) for n in range(50)]
    await asyncio.sleep(0)  # queued, not yet answered
    await db.close()
    assert [task.result() for task in pending] == list(range(50))
    again = SqliteDatabase(path)
    await again.open()
    try:
        assert await numbers(again) == list(range(50))
    finally:
        await again.close()


async def test_commits_are_checkpointed_in_the_background(db):
    task = asyncio.ensure_future(db.run_checkpoints(interval=0.05))
    try:
        for n in range(20):
            await db.write_batched(insert(n))
        async with db.write() as tx:
            await tx.execute("INSERT INTO t (n) VALUES (100)")
        assert db.commits_since_checkpoint > 0
        for _ in range(100):
            if db.commits_since_checkpoint == 0:
                break
            await asyncio.sleep(0.05)
        assert db.commits_since_checkpoint == 0
    finally:
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
    async with db.write():  # queued behind a checkpoint still running on the writer's thread
        pass
    # Every frame of the WAL was copied into the database file.
    probe = sqlite3.connect(db.path)
    try:
        busy, frames, copied = probe.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
        assert busy == 0 and frames == copied
        assert probe.execute("SELECT count(*) FROM t").fetchone()[0] == 21
    finally:
        probe.close()


# About half a second of one core: long beside the fast reads' few milliseconds, and
# short enough that the three tests using it take seconds, not tens of seconds, of the
# measuring phase.
SLOW_QUERY = (
    "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 1000000)"
    " SELECT count(*) FROM c"
)


async def test_a_slow_read_does_not_hold_up_the_other_reads(db):
    async with db.write() as tx:
        await tx.execute("INSERT INTO t (n) VALUES (1)")
    slow = asyncio.ensure_future(db.reader.fetchval(SLOW_QUERY))
    await asyncio.sleep(0.05)  # the slow read is running on one reader
    assert not slow.done()
    loop = asyncio.get_running_loop()
    waits = []
    for _ in range(20):
        started = loop.time()
        assert await numbers(db) == [1]
        waits.append(loop.time() - started)
    assert not slow.done(), "the slow read finished before the fast ones: make it slower"
    assert max(waits) < 0.1  # each a few ms at most, not the slow read's half second
    assert await slow == 1000000


async def test_readers_open_as_needed_and_close_with_the_database(tmp_path):
    """One reader at first; a second opens when the first is held by a slow read, never
    more than configured; closing ends them all (no connection's thread is left)."""
    threads = threading.active_count()
    db = SqliteDatabase(tmp_path / "lazy.db", readers=2)
    await db.open()
    try:
        assert len(db._readers) == 1  # the writer, one reader (and no batched-write connection)
        assert db._loop_writer is None
        assert await db.reader.fetchval("SELECT 1") == 1
        assert len(db._readers) == 1  # a fast read needs no second
        slow = [asyncio.ensure_future(db.reader.fetchval(SLOW_QUERY)) for _ in range(3)]
        await asyncio.sleep(0.05)
        assert await db.reader.fetchval("SELECT 2") == 2
        assert len(db._readers) == 2  # opened for it, and no more than configured
        await asyncio.gather(*slow)
        # A read in flight when the database closes still gets its answer.
        busy = asyncio.ensure_future(db.reader.fetchval(SLOW_QUERY))
        await asyncio.sleep(0.05)
    finally:
        await db.close()
    assert await busy == 1000000
    for _ in range(50):
        if threading.active_count() <= threads:
            break
        await asyncio.sleep(0.02)
    assert threading.active_count() <= threads


async def test_with_one_reader_reads_queue_behind_a_slow_one(tmp_path):
    db = SqliteDatabase(tmp_path / "one.db", readers=1)
    await db.open()
    try:
        slow = asyncio.ensure_future(db.reader.fetchval(SLOW_QUERY))
        await asyncio.sleep(0.05)
        await db.reader.fetchval("SELECT 1")
        assert slow.done()  # it had to wait for the slow read: what the pool avoids
    finally:
        await db.close()


async def test_a_failed_open_closes_what_it_opened(tmp_path):
    path = tmp_path / "newer.db"
    newer = sqlite3.connect(path)
    newer.execute("PRAGMA user_version = 999")
    newer.close()
    threads = threading.active_count()
    db = SqliteDatabase(path)
    with pytest.raises(RuntimeError, match="newer than this agentsvc"):
        await db.open()
    # An aiosqlite connection left open keeps a thread that keeps the process alive.
    for _ in range(50):
        if threading.active_count() <= threads:
            break
        await asyncio.sleep(0.02)
    assert threading.active_count() <= threads
