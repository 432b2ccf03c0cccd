"""An e-mail's attachments kept as files, so a member can open them from the conversation.

When a message is read (in the worker thread, email_read.py), its first `MAX_ATTACHMENTS`
attachments are written under `<data_dir>/files/mail/<folder>/`, the folder named from the
channel's id and the message's Message-ID (`folder_of`): a message read twice finds its
folder there and writes nothing again. The folder is written whole under a temporary name
and renamed, so a folder that exists is complete. A file's name on disk is its MIME name
made safe (`safe_name`: no path separator, no control character, at most
`MAX_NAME_CHARS`), an index added on a collision; the MIME name never makes a path.

The folder's list (`MANIFEST`) is what the message's turn records on the user message
(store/attachments.py). Folders no message lists and no waiting message will (a message
never recorded, a conversation deleted, erased or purged) go with the hourly sweep
(`remove_orphan_folders`).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import secrets
import shutil
import unicodedata
from dataclasses import asdict, dataclass
from email.message import EmailMessage
from pathlib import Path

from agentsvc.datadir import sweep_folders
from agentsvc.db import Database
from agentsvc.services.forms.files import FILES_DIR
from agentsvc.store import attachments as store
from agentsvc.store import channels as channels_store
from agentsvc.store.attachments import KeptFile

log = logging.getLogger(__name__)

MAIL_DIR = "mail"  # under files/: <data_dir>/files/mail/<folder>/
MAX_ATTACHMENTS = 10
MAX_NAME_CHARS = 100
_MAX_NAME_BYTES = 200  # file systems take 255 bytes; room for a collision's index
MANIFEST = ".attachments.json"  # safe names never start with a dot
_TEMP = ".tmp-"
# A folder younger than this may belong to a message whose turn is still to record it.
ORPHAN_GRACE_SECONDS = 3600
# The types a download keeps (with Content-Disposition: attachment and nosniff); any
# other is served as application/octet-stream (HTML, SVG, scripts never run on our origin).
SAFE_TYPES = frozenset(
    {
        "application/pdf",
        "application/zip",
        "application/msword",
        "application/vnd.ms-excel",
        "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
        "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
        "application/vnd.openxmlformats-officedocument.presentationml.presentation",
        "application/vnd.oasis.opendocument.text",
        "application/vnd.oasis.opendocument.spreadsheet",
        "image/png",
        "image/jpeg",
        "image/gif",
        "image/webp",
        "text/plain",
        "text/csv",
        "audio/mpeg",
        "video/mp4",
    }
)


@dataclass(frozen=True, slots=True)
class Keep:
    """Where a channel's messages keep their attachments."""

    data_dir: Path
    channel_id: str


def folder_of(channel_id: str, message_id: str) -> str:
    """The folder of a channel's message (the Message-ID is the sender's: hashed, never a
    path)."""
    digest = hashlib.sha256(f"{channel_id}\n{message_id}".encode()).hexdigest()
    return f"m_{digest[:40]}"


def mail_root(data_dir: Path) -> Path:
    """The folder every e-mail's files are under."""
    return data_dir / FILES_DIR / MAIL_DIR


def served_type(content_type: str) -> str:
    """The type a download is sent with: the stored one when it is safe, else bytes."""
    return content_type if content_type in SAFE_TYPES else "application/octet-stream"


def _cap(name: str) -> str:
    """At most MAX_NAME_CHARS and _MAX_NAME_BYTES, the extension kept."""
    stem, dot, ext = name.rpartition(".")
    ext = f".{ext}" if dot and stem and len(ext) <= 10 else ""
    stem = name[: len(name) - len(ext)]
    room = MAX_NAME_CHARS - len(ext)
    stem = stem[:room]
    while len((stem + ext).encode()) > _MAX_NAME_BYTES:
        stem = stem[:-1]
    return (stem.rstrip(" .") or "attachment") + ext


def safe_name(raw: str | None, content_type: str) -> str:
    """A file name that is safe as one path segment and in a header: no separator, no
    control or invisible character, no leading dot, capped."""
    text = unicodedata.normalize("NFC", raw or "")
    text = "".join(
        "_" if ch in "/\\" else ch for ch in text if not unicodedata.category(ch).startswith("C")
    )
    text = " ".join(text.split()).strip(" .")
    if not text:
        text = "attachment." + (content_type.rpartition("/")[2][:10] or "bin")
    return _cap(text)


def _unique(name: str, taken: set[str]) -> str:
    """The name, or the name with an index ("a (2).pdf") when another file has it."""
    if name.lower() not in taken:
        taken.add(name.lower())
        return name
    stem, dot, ext = name.rpartition(".")
    stem, ext = (stem, dot + ext) if dot and stem else (name, "")
    n = 2
    while (found := f"{stem[: MAX_NAME_CHARS - len(ext) - 5]} ({n}){ext}").lower() in taken:
        n += 1
    taken.add(found.lower())
    return found


def named_parts(msg: EmailMessage) -> list[tuple[str, EmailMessage]]:
    """The message's first attachments with the names they are kept and named under."""
    taken: set[str] = set()
    found = []
    for part in msg.iter_attachments():
        kind = part.get_content_type()
        found.append((_unique(safe_name(part.get_filename(), kind), taken), part))
        if len(found) == MAX_ATTACHMENTS:
            break
    return found


def _content(part: EmailMessage) -> bytes:
    if part.is_multipart():  # an attached message: its own bytes
        inner = part.get_payload()
        return inner[0].as_bytes() if isinstance(inner, list) and inner else b""
    data = part.get_payload(decode=True)
    return data if isinstance(data, bytes) else b""


def _content_type(part: EmailMessage) -> str:
    kind = part.get_content_type()[:100]
    return kind if kind.isascii() and kind.count("/") == 1 else "application/octet-stream"


def _read_manifest(folder: Path) -> tuple[KeptFile, ...]:
    try:
        items = json.loads((folder / MANIFEST).read_text(encoding="utf-8"))
        return tuple(KeptFile(folder=folder.name, **item) for item in items)
    except (OSError, ValueError, TypeError):
        return ()


def write_files(
    keep: Keep, message_id: str, parts: list[tuple[str, EmailMessage]]
) -> tuple[tuple[KeptFile, ...], bool]:
    """Write a message's attachments to its folder, once; return them and whether this
    call wrote them. Raises OSError (a full disk) with nothing left behind."""
    if not parts:
        return (), False
    name = folder_of(keep.channel_id, message_id)
    root = mail_root(keep.data_dir)
    final = root / name
    if final.is_dir():
        return _read_manifest(final), False
    temp = root / f"{_TEMP}{name}-{secrets.token_hex(4)}"
    temp.mkdir(parents=True)
    try:
        files = []
        for file, part in parts:
            data = _content(part)
            (temp / file).write_bytes(data)
            files.append(KeptFile(name, file, file, _content_type(part), len(data)))
        listed = [{k: v for k, v in asdict(f).items() if k != "folder"} for f in files]
        (temp / MANIFEST).write_text(json.dumps(listed), encoding="utf-8")
        os.rename(temp, final)
    except OSError:
        shutil.rmtree(temp, ignore_errors=True)
        if final.is_dir():  # another process read the same message first
            return _read_manifest(final), False
        raise
    return tuple(files), True


def kept(data_dir: Path, channel_id: str, message_id: str) -> tuple[KeptFile, ...]:
    """The files a channel's message was read with (none when it had none)."""
    return _read_manifest(mail_root(data_dir) / folder_of(channel_id, message_id))


def remove(data_dir: Path, folder: str) -> None:
    """Remove a message's folder (it was never recorded, or it is gone)."""
    shutil.rmtree(mail_root(data_dir) / folder, ignore_errors=True)


def path_of(data_dir: Path, folder: str, file: str) -> Path | None:
    """A kept file's path, or None when it is not (no longer) on disk."""
    root = mail_root(data_dir).resolve()
    path = (root / folder / file).resolve()
    if path.parent.parent != root or not path.is_file():
        return None
    return path


async def remove_orphan_folders(
    db: Database, data_dir: Path, grace: float = ORPHAN_GRACE_SECONDS
) -> int:
    """Delete the folders of e-mails no message lists and no waiting message will (deleted,
    erased or purged conversations, messages never recorded); return how many went."""
    waiting: set[str] | None = None

    async def still_used(names: list[str]) -> set[str]:
        nonlocal waiting
        if waiting is None:  # read once, when there is an old folder at all
            found = await channels_store.waiting_ids(db.reader, "email")
            waiting = {folder_of(channel_id, message_id) for channel_id, message_id in found}
        listed = await store.existing_folders(db.reader, [n for n in names if n not in waiting])
        return waiting | set(listed)

    gone = await sweep_folders(mail_root(data_dir), grace, still_used)
    if gone:
        log.info("removed the attachments of %d deleted or unrecorded e-mails", len(gone))
    return len(gone)
