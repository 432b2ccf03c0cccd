"""The data directory and the database files, kept private to the service's user.

The directory is created 0700 and the database file 0600 whatever the umask; SQLite gives
the `-wal` and `-shm` files it creates the database file's mode. They hold the teams'
data, sealed secrets and (by default) the secret key, so no other local user may read them.
"""

from __future__ import annotations

import logging
import os
import stat
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
