"""A test's look into the app's file storage (data_dir, the database or S3, whichever the
app was started on), through the storage's own interface."""

from __future__ import annotations

from agentsvc.api import app_keys
from agentsvc.storage import FileMissing, FileStore


def files_of(client) -> FileStore:
    """The running app's file storage."""
    return client.app[app_keys.files_key]


async def stored(client, key: str) -> bytes | None:
    """The bytes stored under `key`, or None."""
    try:
        reading = await files_of(client).open(key)
    except FileMissing:
        return None
    return b"".join([piece async for piece in reading.chunks()])


async def stored_keys(client, prefix: str = "") -> list[str]:
    """Every key stored under `prefix`."""
    return [found.key async for found in files_of(client).listing(prefix)]
