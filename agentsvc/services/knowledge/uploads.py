"""A document uploaded as a file, kept as it came: written into the file storage as it
arrives (`documents/<documentId>/original`), with a spooled copy its text is read from (in
memory up to `SPOOL_MEMORY_BYTES`, then a temporary file), so the upload is never whole in
memory on its way in. A PDF's text is read from the spooled copy page by page (pypdf reads
only what the pages use); a text, Markdown or HTML file is its text, read whole (at most
`[knowledge] max_document_mb`).

The stored file is removed when the document is not made (its text cannot be read, its
agent was deleted meanwhile) and when the document is deleted; documents deleted with their
agent or team leave their file to the hourly sweep (services/files_sweep.py).
"""

from __future__ import annotations

import asyncio
import tempfile
from collections.abc import AsyncGenerator, AsyncIterator
from dataclasses import dataclass
from typing import IO

from agentsvc.storage import FileMissing, FileStore

SPOOL_MEMORY_BYTES = 1 << 20


def folder_of(document_id: str) -> str:
    return f"documents/{document_id}"


def key_of(document_id: str) -> str:
    """Where a document's uploaded file is kept."""
    return f"{folder_of(document_id)}/original"


@dataclass
class StagedUpload:
    """An uploaded file, stored and spooled, before its document exists."""

    document_id: str
    size: int
    spool: IO[bytes]

    def close(self) -> None:
        self.spool.close()


async def stage(files: FileStore, document_id: str, chunks: AsyncIterator[bytes]) -> StagedUpload:
    """Store the chunks under the document's key and spool them for reading its text."""
    spool = tempfile.SpooledTemporaryFile(max_size=SPOOL_MEMORY_BYTES)  # noqa: SIM115
    size = 0
    try:
        async with files.writer(key_of(document_id)) as out:
            async for piece in chunks:
                await out.write(piece)
                # Past the first MiB the spool is a file on disk: written off the loop.
                await asyncio.to_thread(spool.write, piece)
                size += len(piece)
    except BaseException:
        spool.close()
        raise
    await asyncio.to_thread(spool.seek, 0)
    return StagedUpload(document_id, size, spool)


async def discard(files: FileStore, document_id: str) -> None:
    """Remove a document's stored file (its document was not made, or is deleted)."""
    await files.delete_folder(folder_of(document_id))


@dataclass(frozen=True, slots=True)
class UploadedFile:
    """A document's file on its way out."""

    size: int
    chunks: AsyncGenerator[bytes, None]


async def open_file(files: FileStore, document_id: str) -> UploadedFile | None:
    """A document's uploaded file, or None when none is kept."""
    try:
        reading = await files.open(key_of(document_id))
    except FileMissing:
        return None
    return UploadedFile(reading.size, reading.chunks())
