"""The copies of the database taken before an upgrade, in `data_dir/backups/`.

Each is named for the schema version it holds and when it was taken
(`agentsvc-schema18-20261128T101500.123Z.db`, `.dump` for PostgreSQL's pg_dump), so a
refusal can point at the one an older agentsvc can run, and `restore` can say what it
restores. Copies are created 0600 in a 0700 directory (they hold every team's data), and
only the newest `[database] backups_kept` of them are kept: files of other names there are
never touched. A SQLite copy is SQLite's online backup, taken while a server may write.
"""

from __future__ import annotations

import os
import re
import sqlite3
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from agentsvc.datadir import FILE_MODE, ensure_private_dir

_NAME = re.compile(
    r"^agentsvc-schema(?P<version>\d+)-(?P<stamp>\d{8}T\d{6}\.\d{3}Z)(?P<why>-before-restore)?"
    r"\.(?P<kind>db|dump)$"
)


class BackupFailed(Exception):
    """The copy of the database could not be made (the message says why, in words)."""


@dataclass(frozen=True)
class Backup:
    """One copy in the backups directory."""

    path: Path
    version: int
    taken: str  # the stamp in its name, which sorts as time does


def version_in_name(path: Path) -> int | None:
    """The schema version a copy's name says it holds (None: not one of ours)."""
    match = _NAME.match(path.name)
    return int(match["version"]) if match else None


class Backups:
    """The backups directory of one database: new copies' names, rotation, look-ups."""

    def __init__(self, directory: Path, keep: int, kind: str):
        self.directory = directory
        self.keep = keep
        self.kind = kind  # "db" (SQLite) or "dump" (pg_dump's custom format)

    def listed(self) -> list[Backup]:
        """Every copy of this kind, oldest first."""
        try:
            names = os.listdir(self.directory)
        except FileNotFoundError:
            return []
        found = []
        for name in names:
            match = _NAME.match(name)
            if match and match["kind"] == self.kind:
                found.append(Backup(self.directory / name, int(match["version"]), match["stamp"]))
        return sorted(found, key=lambda b: (b.taken, b.path.name))

    def newest(self, at_most: int | None = None) -> Backup | None:
        """The newest copy, or the newest of a schema version up to `at_most`."""
        fitting = [b for b in self.listed() if at_most is None or b.version <= at_most]
        return fitting[-1] if fitting else None

    def reserve(self, version: int, why: str = "") -> Path:
        """A new, empty file (0600) for a copy of a database of `version`."""
        ensure_private_dir(self.directory)
        while True:
            now = datetime.now(UTC)
            stamp = now.strftime("%Y%m%dT%H%M%S.") + f"{now.microsecond // 1000:03d}Z"
            path = self.directory / f"agentsvc-schema{version}-{stamp}{why}.{self.kind}"
            try:
                os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, FILE_MODE))
            except FileExistsError:  # two in one millisecond: the next millisecond's name
                continue
            os.chmod(path, FILE_MODE)  # os.open's mode is masked by the umask
            return path

    def rotate(self) -> list[Path]:
        """Remove all but the newest `keep` copies; return what was removed."""
        removed = []
        for old in self.listed()[: -self.keep]:
            old.path.unlink(missing_ok=True)
            removed.append(old.path)
        return removed


def copy_sqlite(source_path: Path, target: Path) -> None:
    """Copy a consistent snapshot of a SQLite database into `target` (an empty file) while
    a server may write: SQLite's online backup, then an integrity check. A failed copy is
    removed, so no half-written file is left to restore from."""
    source = sqlite3.connect(f"file:{source_path}?mode=ro", uri=True)
    dest = sqlite3.connect(target)
    try:
        with dest:
            source.backup(dest, pages=1024)
        # A copy of a WAL database is one too: opening it (even read-only) would then make
        # -wal and -shm files beside it. A copy is one file.
        dest.execute("PRAGMA journal_mode = DELETE").fetchall()
        check = dest.execute("PRAGMA integrity_check").fetchone()[0]
        if check != "ok":
            raise BackupFailed(f"the copy failed its integrity check: {check}")
    except sqlite3.Error as exc:
        dest.close()
        target.unlink(missing_ok=True)
        raise BackupFailed(f"the copy could not be written: {_said(exc)}") from exc
    except BaseException:
        dest.close()
        target.unlink(missing_ok=True)
        raise
    finally:
        dest.close()
        source.close()


def _said(exc: sqlite3.Error) -> str:
    """SQLite's own words for a failure (a full disk is "database or disk is full")."""
    return str(exc) or "an unknown error"
