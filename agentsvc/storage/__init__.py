"""Where the service keeps files: form submissions' files, knowledge uploads, members'
pictures and e-mails' attachments, behind one small interface with three backends.

- `local.py`: under `<data_dir>/files/` (the default; one machine).
- `database.py`: in PostgreSQL, as rows of 256 KiB chunks (with `[database] url` and no
  `[storage] url`: a cluster needs nothing else).
- `s3.py`: in any S3-compatible store (`[storage] url = "s3://bucket/prefix"`).

A file is a key (`sub_.../cv.pdf`, `mail/<folder>/<file>`, `avatars/<id>/image`,
`documents/<id>/original`: families of folders named by an id) and its bytes, which move in
bounded chunks both ways: `writer(key)` takes them a chunk at a time (the file appears whole
when the block ends, and not at all when it raises), `open(key)` gives its size and an async
iterator of chunks. A file is written once under its key and never changed in place.

Errors are the service's words: `FileMissing` when a key names nothing, `StorageUnavailable`
(errors.py, 503 at the API) when the store cannot be used; what went wrong in detail (the
endpoint, the bucket, the store's own reason) goes to the operator's log, never to an API
client.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncGenerator, AsyncIterable, AsyncIterator, Iterable
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from agentsvc.errors import StorageUnavailable

if TYPE_CHECKING:
    from agentsvc.config import Settings
    from agentsvc.db import Database

log = logging.getLogger(__name__)

READ_CHUNK = 256 * 1024  # what a read hands on at a time (and the database's row size)


class FileMissing(Exception):
    """No file is stored under the key (never written, or deleted)."""


class StorageError(Exception):
    """The store cannot be used; the message says why, for the operator (start-up, the
    command line, the log). An API client is told `StorageUnavailable`'s plain words."""


def unavailable(label: str, reason: str) -> StorageUnavailable:
    """Log why the store failed (for the operator) and return the error for the caller."""
    log.error("file storage %s: %s", label, reason)
    return StorageUnavailable()


@dataclass(frozen=True, slots=True)
class Listed:
    """A stored file as a listing shows it."""

    key: str
    size: int
    modified: float  # seconds since the epoch


class Writer(Protocol):
    async def write(self, chunk: bytes) -> None:
        """Add the next piece of the file."""
        ...


class Reading(Protocol):
    """An open stored file: its size, then its bytes in chunks (read once)."""

    size: int

    def chunks(self) -> AsyncGenerator[bytes, None]: ...

    async def close(self) -> None: ...


class FileStore(Protocol):
    """What the services need from a store of files."""

    label: str  # for people: "the data directory /srv/data/files", "s3://bucket/prefix"
    kind: str  # "local", "database" or "s3"

    async def check(self) -> None:
        """Raise StorageError (in words) unless the store can be used now (start-up)."""
        ...

    def writer(self, key: str) -> AbstractAsyncContextManager[Writer]:
        """Write the file under `key` a chunk at a time; it exists once the block ends."""
        ...

    async def open(self, key: str) -> Reading:
        """The file under `key`, or FileMissing."""
        ...

    async def delete(self, key: str) -> None:
        """Remove the file under `key` (nothing happens when there is none)."""
        ...

    async def delete_folder(self, folder: str) -> None:
        """Remove the files of a folder (the files keyed `folder/<name>`: the service's
        folders hold files, never folders)."""
        ...

    async def exists(self, key: str) -> bool: ...

    def listing(self, prefix: str) -> AsyncIterator[Listed]:
        """Every file whose key starts with `prefix`, in key order."""
        ...

    async def close(self) -> None: ...


async def write_all(
    files: FileStore, key: str, chunks: Iterable[bytes] | AsyncIterable[bytes]
) -> int:
    """Write a file from an iterable of chunks; return its size."""
    size = 0
    async with files.writer(key) as out:
        if isinstance(chunks, AsyncIterable):
            async for piece in chunks:
                await out.write(piece)
                size += len(piece)
        else:
            for piece in chunks:
                await out.write(piece)
                size += len(piece)
    return size


async def read_all(files: FileStore, key: str, max_bytes: int) -> bytes:
    """A small file whole (a manifest, a picture); FileMissing, or ValueError past
    `max_bytes`."""
    reading = await files.open(key)
    try:
        if reading.size > max_bytes:
            raise ValueError(f"{key}: {reading.size} bytes, more than {max_bytes}")
        return b"".join([piece async for piece in reading.chunks()])
    finally:
        await reading.close()


def check_key(key: str) -> str:
    """A key our code made: relative segments, no empty, dot or dot-dot segment."""
    parts = key.split("/")
    if not key or any(p in ("", ".", "..") for p in parts) or "\\" in key or "\0" in key:
        raise ValueError(f"not a storage key: {key!r}")
    return key


def open_store(settings: Settings, db: Database | None) -> FileStore:
    """The store the settings name: `[storage] url` (S3), else PostgreSQL when the database
    is shared and given, else the data directory."""
    if settings.storage.url:
        from agentsvc.storage.s3 import S3Store  # botocore loads only when configured

        return S3Store(settings.storage)
    if settings.database.url and db is not None:
        from agentsvc.storage.database import DatabaseStore

        return DatabaseStore(db)
    from agentsvc.storage.local import LocalStore

    return LocalStore(settings.server.data_dir / "files")
