"""Files kept in the database (agentsvc/storage/database.py): `stored_files` names each file
by its key, `stored_file_chunks` holds its bytes in numbered chunks of its upload.

Chunks are written one statement each under a new upload id; the file row that names the
upload is written last, in one short transaction that also drops the chunks of the file it
replaces. Chunks no file row names (an upload that failed or was cut off) are removed by
`delete_unclaimed_chunks`.
"""

from __future__ import annotations

from dataclasses import dataclass

from agentsvc.db import Tx


@dataclass(frozen=True, slots=True)
class StoredFile:
    key: str
    folder: str  # the key up to its last "/"
    upload_id: str
    size: int
    chunks: int
    created_at: str


_FILE_COLUMNS = "key, folder, upload_id, size, chunks, created_at"


async def insert_chunk(tx: Tx, upload_id: str, seq: int, data: bytes, now: str) -> None:
    await tx.execute(
        "INSERT INTO stored_file_chunks (upload_id, seq, data, created_at) VALUES (?, ?, ?, ?)",
        (upload_id, seq, data, now),
    )


async def claim(tx: Tx, file: StoredFile) -> None:
    """Name the upload's chunks as the file under its key (the file it replaces goes)."""
    await delete(tx, file.key)
    await tx.execute(
        f"INSERT INTO stored_files ({_FILE_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?)",
        (file.key, file.folder, file.upload_id, file.size, file.chunks, file.created_at),
    )


async def delete(tx: Tx, key: str) -> bool:
    """Delete the file under `key` with its chunks; whether there was one."""
    await tx.execute(
        "DELETE FROM stored_file_chunks WHERE upload_id IN"
        " (SELECT upload_id FROM stored_files WHERE key = ?)",
        (key,),
    )
    return await tx.execute("DELETE FROM stored_files WHERE key = ?", (key,)) > 0


async def delete_chunks(tx: Tx, upload_id: str) -> None:
    await tx.execute("DELETE FROM stored_file_chunks WHERE upload_id = ?", (upload_id,))


async def get(tx: Tx, key: str) -> StoredFile | None:
    row = await tx.fetchone(f"SELECT {_FILE_COLUMNS} FROM stored_files WHERE key = ?", (key,))
    return StoredFile(*row) if row is not None else None


async def chunk(tx: Tx, upload_id: str, seq: int) -> bytes | None:
    data = await tx.fetchval(
        "SELECT data FROM stored_file_chunks WHERE upload_id = ? AND seq = ?", (upload_id, seq)
    )
    return bytes(data) if data is not None else None


# Keys under a prefix (listings: the hourly sweep, copy-data): compared as text, not by a
# range, since PostgreSQL orders text by the database's collation (where "sub_" and "sub`"
# need not sort as their bytes do).
_UNDER = "substr(key, 1, ?) = ?"


async def delete_folder(tx: Tx, folder: str) -> int:
    """Delete the files of a folder (the service's folders hold files, never folders), with
    their chunks; return how many files went."""
    await tx.execute(
        "DELETE FROM stored_file_chunks WHERE upload_id IN"
        " (SELECT upload_id FROM stored_files WHERE folder = ?)",
        (folder,),
    )
    return await tx.execute("DELETE FROM stored_files WHERE folder = ?", (folder,))


async def list_under(tx: Tx, prefix: str, after: str, limit: int) -> list[StoredFile]:
    """A page of the files whose keys start with `prefix`, after the key `after`, in key
    order."""
    rows = await tx.fetchall(
        f"SELECT {_FILE_COLUMNS} FROM stored_files WHERE {_UNDER} AND key > ? ORDER BY key LIMIT ?",
        (len(prefix), prefix, after, limit),
    )
    return [StoredFile(*r) for r in rows]


async def delete_unclaimed_chunks(tx: Tx, before: str) -> int:
    """Remove the chunks of uploads begun before `before` that no file names."""
    return await tx.execute(
        "DELETE FROM stored_file_chunks WHERE created_at < ? AND upload_id NOT IN"
        " (SELECT upload_id FROM stored_files)",
        (before,),
    )
