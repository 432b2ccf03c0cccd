"""The data directory and the database files, kept private to the service's user.

The directory is created 0700 and the database file 0600 whatever the umask; SQLite gives
the `-wal` and `-shm` files it creates the database file's mode. They hold the teams'
data, sealed secrets and (by default) the secret key, so no other local user may read them.
"""

from __future__ import annotations

import asyncio
import logging
import os
import shutil
import stat
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

log = logging.getLogger(__name__)

DIR_MODE = 0o700
FILE_MODE = 0o600
DB_SUFFIXES = ("", "-wal", "-shm", "-journal")
# Directories already warned about: the database, the secret key and the server-url note
# each make sure of the directory, and the warning is said once per process.
_warned: set[Path] = set()


def ensure_private_dir(path: Path) -> None:
    """Create the directory 0700 (parents as needed); warn when an existing one is open."""
    try:
        path.mkdir(parents=True, mode=DIR_MODE)
    except FileExistsError:
        mode = stat.S_IMODE(path.stat().st_mode)
        if mode & 0o077 and path not in _warned:
            _warned.add(path)
            # An existing directory may be shared on purpose (`data_dir = "."`): say so,
            # but do not change what the operator set up.
            log.warning(
                "data directory %s has mode %o: other users may list it (chmod 700 %s)",
                path,
                mode,
                path,
            )
        return
    os.chmod(path, DIR_MODE)  # mkdir's mode is masked by the umask


def ensure_private_db_files(db_path: Path) -> None:
    """Create the database file 0600 when missing; make its existing files 0600."""
    ensure_private_dir(db_path.parent)
    try:
        # An empty file is a valid new database: SQLite writes its header on first use.
        os.close(os.open(db_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, FILE_MODE))
    except FileExistsError:
        pass
    else:
        os.chmod(db_path, FILE_MODE)  # os.open's mode is masked by the umask too
        return
    for suffix in DB_SUFFIXES:
        path = db_path.with_name(db_path.name + suffix)
        try:
            mode = stat.S_IMODE(path.stat().st_mode)
        except FileNotFoundError:
            continue
        if not mode & 0o077:
            continue
        try:
            os.chmod(path, FILE_MODE)
        except PermissionError:
            log.warning("%s has mode %o and cannot be made 600 by this user", path, mode)
        else:
            log.info("%s was mode %o; now 600", path, mode)


SWEEP_CHUNK = 500  # folder names asked about in one query


async def sweep_folders(
    root: Path,
    grace: float,
    still_used: Callable[[list[str]], Awaitable[set[str]]],
    prefix: str = "",
) -> list[str]:
    """Remove the folders under `root` (named `prefix`...) left alone for `grace` seconds
    that `still_used` does not claim; return their names. A young folder may belong to a
    write under way, so only old ones are asked about, a chunk at a time; the disk is read
    and written off the event loop."""
    names = await asyncio.to_thread(_old_folders, root, grace, prefix)
    gone: list[str] = []
    for i in range(0, len(names), SWEEP_CHUNK):
        chunk = names[i : i + SWEEP_CHUNK]
        used = await still_used(chunk)
        gone += [n for n in chunk if n not in used]
    for name in gone:
        await asyncio.to_thread(shutil.rmtree, root / name, True)
    return gone


def _old_folders(root: Path, grace: float, prefix: str) -> list[str]:
    if not root.is_dir():
        return []
    cutoff = time.time() - grace
    return [
        p.name
        for p in root.iterdir()
        if p.is_dir() and p.name.startswith(prefix) and p.stat().st_mtime <= cutoff
    ]
