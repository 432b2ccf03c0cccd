"""A server running on a data directory: its lock (one SQLite server per directory) and
the `server-url` note that commands run beside it read.

The lock is `flock` on `serve.lock`, held by the open file for the life of the process:
the operating system releases it when the process ends, however it ends, so a crash
leaves no stale lock to remove. The file keeps the holder's pid only for the message of
the process it refuses. The note is replaced atomically and removed at exit only while
it is still the one this process wrote.
"""

from __future__ import annotations

import fcntl
import os
from dataclasses import dataclass
from pathlib import Path

from agentsvc.datadir import FILE_MODE, ensure_private_dir

LOCK_FILE = "serve.lock"
# `serve` writes where it can be reached, so commands run beside it (`login-link`) build
# links to the port it actually listens on.
RUNNING_FILE = "server-url"


class DirectoryInUse(Exception):
    """Another process serves this data directory."""


def lock_data_dir(data_dir: Path) -> int:
    """Take the data directory's serve lock for this process's life; return its descriptor.

    Raise DirectoryInUse, naming the holder's pid and the directory, when another process
    holds it. The descriptor must stay open: closing it releases the lock.
    """
    if not data_dir.is_dir():  # an existing one is checked (and warned about) at start-up
        ensure_private_dir(data_dir)
    path = data_dir / LOCK_FILE
    fd = os.open(path, os.O_RDWR | os.O_CREAT, FILE_MODE)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = os.read(fd, 32).decode("ascii", "replace").strip()
        os.close(fd)
        pid = f" (pid {holder})" if holder.isdigit() else ""
        raise DirectoryInUse(
            f"another agentsvc{pid} serves this data directory ({data_dir}); stop it first,"
            " or give this one another --data-dir"
        ) from None
    except OSError:
        os.close(fd)
        raise
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"{os.getpid()}\n".encode("ascii"), 0)
    return fd


def other_server_pid(data_dir: Path) -> int | None:
    """The pid of another process holding the directory's serve lock (0 when it cannot be
    read), or None when no other process holds it (this one may: `serve` migrates after
    taking it)."""
    try:
        fd = os.open(data_dir / LOCK_FILE, os.O_RDONLY)
    except FileNotFoundError:
        return None
    try:
        # A lock of this process's own open of the file conflicts too: told apart by pid.
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = os.read(fd, 32).decode("ascii", "replace").strip()
        pid = int(holder) if holder.isdigit() else 0
        return None if pid == os.getpid() else pid
    else:
        fcntl.flock(fd, fcntl.LOCK_UN)
        return None
    finally:
        os.close(fd)


@dataclass(frozen=True)
class RunningNote:
    """What this process wrote to `server-url`: removed at exit only if still there."""

    path: Path
    content: str
    inode: tuple[int, int]


def record_running(data_dir: Path, public_url: str) -> RunningNote:
    """Note this process's public URL in the data directory (replacing any older note)."""
    ensure_private_dir(data_dir)  # PostgreSQL creates no database file that would make it
    path = data_dir / RUNNING_FILE
    content = f"{os.getpid()} {public_url}\n"
    temporary = data_dir / f".{RUNNING_FILE}.{os.getpid()}"
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, FILE_MODE)
    with os.fdopen(fd, "w", encoding="utf-8") as file:
        file.write(content)
    os.replace(temporary, path)  # a reader sees the old note or the new one, never half
    stat = path.stat()
    return RunningNote(path, content, (stat.st_dev, stat.st_ino))


def forget_running(note: RunningNote) -> None:
    """Remove the note, unless another server has replaced it since (same file, same text)."""
    try:
        stat = note.path.stat()
        if (stat.st_dev, stat.st_ino) != note.inode:
            return
        if note.path.read_text(encoding="utf-8") == note.content:
            note.path.unlink()
    except OSError:
        pass


def running_public_url(data_dir: Path) -> str | None:
    """The public URL of a server running on this data directory, if one is."""
    try:
        pid, url = (data_dir / RUNNING_FILE).read_text(encoding="utf-8").split()
        os.kill(int(pid), 0)  # a stale note (the server was killed) is ignored
    except (OSError, ValueError):
        return None
    return url
