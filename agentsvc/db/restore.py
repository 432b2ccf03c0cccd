"""`agentsvc restore PATH`: a backup becomes the database again, safely.

Before anything changes, the backup is checked (SQLite: an integrity check; PostgreSQL: a
pg_dump file whose schema_info says its version) and refused when this agentsvc cannot
run it (a newer schema version). Nothing runs on the database meanwhile: on SQLite the
data directory's serve lock is taken (a running server is named and the restore refused;
none can start until it ends); on PostgreSQL the restore is refused while any agentsvc
process is connected to the database, and holds the upgrade lock. The database it
replaces is first kept as a copy in the backups directory (`-before-restore` in its
name), so a restore is itself undone by another.

SQLite: the backup is written into the database file through SQLite's own backup API,
one step, so the file is never half-replaced and the WAL stays right. PostgreSQL:
pg_tools.restore, one transaction. A backup older than this agentsvc is restored as it
is; the next start upgrades it (taking a backup first).
"""

from __future__ import annotations

import os
import sqlite3
from dataclasses import dataclass
from pathlib import Path

from agentsvc.db.backups import BackupFailed, Backups, copy_sqlite
from agentsvc.db.migrations import schema_version
from agentsvc.db.pg_tools import Archive, ToolFailed, dump, read_archive, restore
from agentsvc.running import DirectoryInUse, lock_data_dir, other_server_pid


class RestoreRefused(Exception):
    """Nothing was restored; the message says why and what to do, in words."""


@dataclass(frozen=True)
class Restored:
    """What a restore did."""

    version: int  # the schema version restored
    kept: Path | None  # the copy of the database it replaced (None: there was none)


def _a_file(path: Path) -> None:
    if path.is_dir():
        raise RestoreRefused(f"{path} is a directory: name the backup file in it")
    if not path.is_file():
        raise RestoreRefused(f"{path}: no such file")


def _newer_refused(path: Path, version: int) -> RestoreRefused:
    return RestoreRefused(
        f"{path} holds schema version {version}, newer than this agentsvc's"
        f" {schema_version()}: restore it with the agentsvc that wrote it (or a newer one)"
    )


def sqlite_backup_version(path: Path) -> int:
    """The schema version a SQLite backup holds, once it is known to be whole."""
    _a_file(path)
    try:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            check = conn.execute("PRAGMA integrity_check").fetchone()[0]
            version = conn.execute("PRAGMA user_version").fetchone()[0]
        finally:
            conn.close()
    except sqlite3.DatabaseError:
        raise RestoreRefused(f"{path} is not a SQLite database") from None
    if check != "ok":
        raise RestoreRefused(f"{path} is damaged (SQLite's integrity check: {check})")
    if not version:
        raise RestoreRefused(f"{path} holds no agentsvc database (no schema version)")
    if version > schema_version():
        raise _newer_refused(path, version)
    return version


def restore_sqlite(db_path: Path, backup: Path, backups: Backups) -> Restored:
    """Write the backup into the database file (see the module's docstring)."""
    version = sqlite_backup_version(backup)
    data_dir = db_path.parent
    try:
        lock = lock_data_dir(data_dir)
    except DirectoryInUse:
        pid = other_server_pid(data_dir)
        shown = f" (pid {pid})" if pid else ""
        raise RestoreRefused(
            f"an agentsvc server{shown} serves {data_dir}: stop it before restoring;"
            " nothing was changed"
        ) from None
    try:
        kept = None
        if db_path.is_file() and db_path.stat().st_size:
            try:
                kept = backups.reserve(_user_version(db_path), "-before-restore")
                copy_sqlite(db_path, kept)
            except (BackupFailed, OSError, sqlite3.Error) as exc:
                raise RestoreRefused(
                    f"the database it would replace could not be kept first ({exc});"
                    " nothing was changed"
                ) from None
        _write_into(backup, db_path)
    finally:
        os.close(lock)
    return Restored(version, kept)


def _user_version(path: Path) -> int:
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return conn.execute("PRAGMA user_version").fetchone()[0]
    finally:
        conn.close()


def _write_into(backup: Path, db_path: Path) -> None:
    """SQLite's backup API from the backup into the live file, in one step (one
    transaction of the destination: on failure it is unchanged)."""
    from agentsvc.datadir import ensure_private_db_files

    ensure_private_db_files(db_path)
    source = sqlite3.connect(f"file:{backup}?mode=ro", uri=True)
    dest = sqlite3.connect(db_path, timeout=5)
    try:
        source.backup(dest)
        check = dest.execute("PRAGMA integrity_check").fetchone()[0]
        if check != "ok":  # pragma: no cover - the source passed the same check
            raise RestoreRefused(f"the restored database failed its integrity check: {check}")
    except sqlite3.Error as exc:
        raise RestoreRefused(f"the restore could not write {db_path}: {exc}") from None
    finally:
        dest.close()
        source.close()


# ── PostgreSQL ─────────────────────────────────────────────────────────────────────────
def postgres_archive(path: Path, bin_dir: str) -> Archive:
    """What a pg_dump file holds, once this agentsvc can run it."""
    _a_file(path)
    try:
        archive = read_archive(path, bin_dir)
    except ToolFailed as exc:
        raise RestoreRefused(str(exc)) from None
    if archive.version > schema_version():
        raise _newer_refused(path, archive.version)
    return archive


_OTHERS = """
    SELECT application_name, coalesce(host(client_addr), 'this host') FROM pg_stat_activity
    WHERE datname = current_database() AND pid <> pg_backend_pid()
        AND application_name LIKE 'agentsvc-%'
    ORDER BY 2, 1
"""


async def restore_postgres(
    url: str, path: Path, archive: Archive, backups: Backups, bin_dir: str
) -> Restored:
    """Replace agentsvc's schema of the database with the backup (module docstring)."""
    import asyncio

    import asyncpg

    from agentsvc.db.postgres import MIGRATION_LOCK  # the driver, only when configured

    conn = await asyncpg.connect(url)
    try:
        schema = await conn.fetchval("SELECT current_schema()")
        if archive.schema != schema:
            raise RestoreRefused(
                f"{path} holds the schema {archive.schema}, but the configured database keeps"
                f" agentsvc's tables in {schema}; restore it with that schema's URL"
                f" (?search_path={archive.schema})"
            )
        others = await conn.fetch(_OTHERS)
        if others:
            shown = ", ".join(f"{r[0]} on {r[1]}" for r in others[:5])
            raise RestoreRefused(
                f"{len(others)} connections of agentsvc processes use the database ({shown}):"
                " stop every agentsvc process first; nothing was changed"
            )
        if not await conn.fetchval("SELECT pg_try_advisory_lock($1)", MIGRATION_LOCK):
            raise RestoreRefused(
                "another process is upgrading or restoring the database; nothing was changed"
            )
        try:
            extensions = [
                row[0]
                for row in await conn.fetch(
                    "SELECT extname FROM pg_extension"
                    " WHERE extnamespace = current_schema()::regnamespace"
                )
            ]
            kept = None
            current = await _pg_version(conn)
            if current is not None:
                kept = backups.reserve(current, "-before-restore")
                try:
                    await asyncio.to_thread(dump, url, kept, schema, bin_dir)
                except ToolFailed as exc:
                    raise RestoreRefused(
                        f"the database it would replace could not be kept first ({exc});"
                        " nothing was changed"
                    ) from None
            try:
                await asyncio.to_thread(restore, url, path, archive, extensions, bin_dir)
            except ToolFailed as exc:
                raise RestoreRefused(str(exc)) from None
        finally:
            await conn.execute("SELECT pg_advisory_unlock($1)", MIGRATION_LOCK)
    finally:
        await conn.close()
    return Restored(archive.version, kept)


async def _pg_version(conn) -> int | None:
    if not await conn.fetchval("SELECT to_regclass('schema_info') IS NOT NULL"):
        return None
    return await conn.fetchval("SELECT max(version) FROM schema_info")
