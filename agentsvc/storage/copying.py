"""Files moved from one store to another, each streamed chunk by chunk (never whole in
memory): `agentsvc copy-data` (a SQLite instance's data_dir, or its S3 bucket, into the
PostgreSQL instance's store), and the files an instance finds in its data_dir when it
starts on a shared store (`adopt_local_files`: left there by an earlier version, which kept
files in data_dir whatever the database, or before `[storage] url` was set).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

from agentsvc.errors import StorageUnavailable
from agentsvc.storage import FileMissing, FileStore
from agentsvc.storage.local import LocalStore

log = logging.getLogger(__name__)


@dataclass(slots=True)
class Copied:
    files: int = 0
    bytes: int = 0


async def copy_file(source: FileStore, target: FileStore, key: str) -> int:
    """Copy one file between stores, a chunk at a time; return its size."""
    reading = await source.open(key)
    size = 0
    chunks = reading.chunks()
    try:
        async with target.writer(key) as out:
            async for piece in chunks:
                await out.write(piece)
                size += len(piece)
    finally:
        await chunks.aclose()
    return size


async def copy_files(
    source: FileStore, target: FileStore, progress: Callable[[Copied], None] | None = None
) -> Copied:
    """Copy every file of `source` into `target` under the same key (a file already there
    is replaced)."""
    done = Copied()
    async for found in source.listing(""):
        try:
            done.bytes += await copy_file(source, target, found.key)
        except FileMissing:
            continue  # deleted since it was listed
        done.files += 1
        if progress is not None:
            progress(done)
    return done


async def adopt_local_files(local: LocalStore, target: FileStore) -> Copied:
    """Move the files under data_dir/files into the shared store, each removed from the
    disk once it is stored there; return how many moved."""
    done = Copied()
    try:
        async for found in local.listing(""):
            try:
                done.bytes += await copy_file(local, target, found.key)
            except FileMissing:
                continue
            await local.delete(found.key)
            done.files += 1
    except (StorageUnavailable, OSError) as exc:
        log.warning(
            "files in %s could not all be moved into %s (%s); the rest are moved at the next start",
            local.root,
            target.label,
            exc.message if isinstance(exc, StorageUnavailable) else exc.strerror or exc,
        )
    if done.files:
        log.info(
            "moved %d file(s) (%d bytes) from %s into %s",
            done.files,
            done.bytes,
            local.root,
            target.label,
        )
    return done
