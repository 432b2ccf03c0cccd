"""Files under `<data_dir>/files/`, the default store (one machine).

A file is written under a temporary name beside its place and renamed when complete, so a
file that exists is whole. The disk is read and written in worker threads, a chunk at a
time, never on the event loop.
"""

from __future__ import annotations

import asyncio
import os
import secrets
import shutil
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import BinaryIO

from agentsvc.datadir import ensure_private_dir
from agentsvc.storage import READ_CHUNK, FileMissing, Listed, StorageError, check_key

TEMP = ".tmp-"  # written files before their rename; listings leave them out


class _FileWriter:
    def __init__(self, out: BinaryIO):
        self._out = out

    async def write(self, chunk: bytes) -> None:
        if chunk:
            await asyncio.to_thread(self._out.write, chunk)


class _FileReading:
    def __init__(self, handle: BinaryIO, size: int):
        self._handle = handle
        self.size = size

    async def chunks(self) -> AsyncIterator[bytes]:
        try:
            while piece := await asyncio.to_thread(self._handle.read, READ_CHUNK):
                yield piece
        finally:
            await self.close()

    async def close(self) -> None:
        if not self._handle.closed:
            await asyncio.to_thread(self._handle.close)


class LocalStore:
    """Files on this machine's disk."""

    kind = "local"

    def __init__(self, root: Path):
        self.root = root
        self.label = f"the data directory's {root}"

    def path(self, key: str) -> Path:
        return self.root / check_key(key)

    async def check(self) -> None:
        try:
            await asyncio.to_thread(ensure_private_dir, self.root)
        except OSError as exc:
            raise StorageError(f"cannot use {self.root} for files: {exc.strerror}") from None

    @asynccontextmanager
    async def writer(self, key: str) -> AsyncIterator[_FileWriter]:
        path = self.path(key)
        temp = path.with_name(f"{TEMP}{secrets.token_hex(6)}-{path.name}")
        out = await asyncio.to_thread(_create, temp)
        try:
            yield _FileWriter(out)
            await asyncio.to_thread(out.close)
            await asyncio.to_thread(os.replace, temp, path)
        except BaseException:
            await asyncio.to_thread(_discard, out, temp)
            raise

    async def open(self, key: str) -> _FileReading:
        path = self.path(key)
        try:
            handle = await asyncio.to_thread(open, path, "rb")
        except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
            raise FileMissing(key) from None
        return _FileReading(handle, os.fstat(handle.fileno()).st_size)

    async def delete(self, key: str) -> None:
        await asyncio.to_thread(self.path(key).unlink, missing_ok=True)

    async def delete_folder(self, folder: str) -> None:
        await asyncio.to_thread(shutil.rmtree, self.path(folder), True)

    async def exists(self, key: str) -> bool:
        return await asyncio.to_thread(self.path(key).is_file)

    async def listing(self, prefix: str) -> AsyncIterator[Listed]:
        for found in await asyncio.to_thread(self._list, prefix):
            yield found

    def _list(self, prefix: str) -> list[Listed]:
        folder, _, start = prefix.rpartition("/")
        base = self.root / folder if folder else self.root
        if folder:
            check_key(folder)
        if not base.is_dir():
            return []
        found = []
        for entry in base.iterdir():
            if not entry.name.startswith(start) or entry.name.startswith(TEMP):
                continue
            for path in [entry] if entry.is_file() else sorted(entry.rglob("*")):
                if path.is_file() and not path.name.startswith(TEMP):
                    stat = path.stat()
                    key = path.relative_to(self.root).as_posix()
                    found.append(Listed(key, stat.st_size, stat.st_mtime))
        return sorted(found, key=lambda f: f.key)

    async def close(self) -> None:
        return None


def _create(temp: Path) -> BinaryIO:
    temp.parent.mkdir(parents=True, exist_ok=True)
    return open(temp, "xb")  # noqa: SIM115 - closed by the writer


def _discard(out: BinaryIO, temp: Path) -> None:
    out.close()
    temp.unlink(missing_ok=True)
