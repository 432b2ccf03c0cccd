"""Files in the database: PostgreSQL, when `[database] url` is set and `[storage] url` is
not, so that a cluster of processes on several machines needs nothing else.

A table of chunks rather than PostgreSQL's large objects: chunks are ordinary rows, so
`pg_dump` and `pg_restore` carry them with everything else (large objects need their own
flags and privileges), a delete is an ordinary DELETE (an unlinked large object lingers
until `vacuumlo`), `agentsvc copy-data` moves them with COPY like any table, and each
chunk is written and read by one short statement, with nothing held open between two
chunks. Each chunk is READ_CHUNK bytes (256 KiB; the last may be shorter), written as it
fills: a file is never whole in memory, on the way in or out.
"""

from __future__ import annotations

import contextlib
import secrets
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta

from agentsvc.db import Database
from agentsvc.ids import iso, now_iso
from agentsvc.storage import READ_CHUNK, FileMissing, Listed, check_key
from agentsvc.store import stored_files as store
from agentsvc.store.stored_files import StoredFile

LIST_PAGE = 500


class _ChunkWriter:
    """Cuts what it is given into READ_CHUNK rows, each inserted as it fills."""

    def __init__(self, db: Database, upload_id: str):
        self._db = db
        self.upload_id = upload_id
        self._pending = bytearray()
        self.size = 0
        self.chunks = 0

    async def write(self, chunk: bytes) -> None:
        self._pending += chunk
        self.size += len(chunk)
        while len(self._pending) >= READ_CHUNK:
            await self._insert(bytes(self._pending[:READ_CHUNK]))
            del self._pending[:READ_CHUNK]

    async def finish(self) -> None:
        if self._pending or not self.chunks:
            await self._insert(bytes(self._pending))
            self._pending.clear()

    async def _insert(self, data: bytes) -> None:
        seq, now = self.chunks, now_iso()

        async def insert(tx):  # one statement, committed on its own
            await store.insert_chunk(tx, self.upload_id, seq, data, now)

        await self._db.write_statement(insert)
        self.chunks += 1


class _ChunkReading:
    def __init__(self, db: Database, file: StoredFile):
        self._db = db
        self._file = file
        self.size = file.size

    async def chunks(self) -> AsyncIterator[bytes]:
        for seq in range(self._file.chunks):
            data = await store.chunk(self._db.reader, self._file.upload_id, seq)
            if data is None:  # deleted while being read
                raise FileMissing(self._file.key)
            if data:
                yield data

    async def close(self) -> None:
        return None


class DatabaseStore:
    """Files as rows of chunks in the service's database."""

    kind = "database"
    label = "the database"

    def __init__(self, db: Database):
        self._db = db

    async def check(self) -> None:
        return None  # the database was opened (and migrated) before

    @asynccontextmanager
    async def writer(self, key: str) -> AsyncIterator[_ChunkWriter]:
        check_key(key)
        out = _ChunkWriter(self._db, secrets.token_hex(16))
        try:
            yield out
            await out.finish()
            async with self._db.write() as tx:
                folder = key.rpartition("/")[0]
                file = StoredFile(key, folder, out.upload_id, out.size, out.chunks, now_iso())
                await store.claim(tx, file)
        except BaseException:
            with contextlib.suppress(Exception):  # else the sweep of unclaimed chunks will
                async with self._db.write() as tx:
                    await store.delete_chunks(tx, out.upload_id)
            raise

    async def open(self, key: str) -> _ChunkReading:
        file = await store.get(self._db.reader, check_key(key))
        if file is None:
            raise FileMissing(key)
        return _ChunkReading(self._db, file)

    async def delete(self, key: str) -> None:
        async with self._db.write() as tx:
            await store.delete(tx, check_key(key))

    async def delete_folder(self, folder: str) -> None:
        async with self._db.write() as tx:
            await store.delete_folder(tx, check_key(folder))

    async def exists(self, key: str) -> bool:
        return await store.get(self._db.reader, check_key(key)) is not None

    async def listing(self, prefix: str) -> AsyncIterator[Listed]:
        after = ""
        while page := await store.list_under(self._db.reader, prefix, after, LIST_PAGE):
            for file in page:
                modified = datetime.fromisoformat(file.created_at.replace("Z", "+00:00"))
                yield Listed(file.key, file.size, modified.timestamp())
            after = page[-1].key

    async def remove_unclaimed(self, grace_seconds: float) -> int:
        """Drop the chunks of uploads that failed or were cut off `grace_seconds` ago."""
        before = iso(datetime.now(UTC) - timedelta(seconds=grace_seconds))
        async with self._db.write() as tx:
            return await store.delete_unclaimed_chunks(tx, before)

    async def close(self) -> None:
        return None
