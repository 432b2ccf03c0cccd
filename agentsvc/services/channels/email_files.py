"""An e-mail's attachments kept as files, so a member can open them from the conversation.

When a message is read (in a worker thread, email_read.py), its first `MAX_ATTACHMENTS`
attachments are taken out with their names; the poller then writes them into the file
storage under `mail/<folder>/`, the folder named from the channel's id and the message's
Message-ID (`folder_of`): a message read twice finds its folder there and writes nothing
again. The folder's list (`MANIFEST`) is written last, so a folder with a list is complete.
A file's name is its MIME name made safe (`safe_name`: no path separator, no control
character, at most `MAX_NAME_CHARS`), an index added on a collision; the MIME name never
makes a path.

The folder's list is what the message's turn records on the user message
(store/attachments.py). Folders no message lists and no waiting message will (a message
never recorded, a conversation deleted, erased or purged) go with the hourly sweep
(`remove_orphan_folders`).
"""

from __future__ import annotations

import hashlib
import json
import logging
import unicodedata
from dataclasses import asdict, dataclass
from email.message import EmailMessage

from agentsvc.db import Database
from agentsvc.storage import FileMissing, FileStore, read_all, write_all
from agentsvc.storage.sweep import sweep_folders
from agentsvc.store import attachments as store
from agentsvc.store import channels as channels_store
from agentsvc.store.attachments import KeptFile

log = logging.getLogger(__name__)

MAIL_DIR = "mail"  # the storage's mail/<folder>/
MAX_ATTACHMENTS = 10
MAX_NAME_CHARS = 100
_MAX_NAME_BYTES = 200  # file systems take 255 bytes; room for a collision's index
MANIFEST = ".attachments.json"  # safe names never start with a dot
MAX_MANIFEST_BYTES = 64 * 1024
# A folder younger than this may belong to a message whose turn is still to record it.
ORPHAN_GRACE_SECONDS = 3600


@dataclass(frozen=True, slots=True)
class Part:
    """An attachment as read from its message: the name it is kept under, its type and
    bytes (the message, at most 10 MB, is in memory already)."""

    name: str
    content_type: str
    data: bytes


def folder_of(channel_id: str, message_id: str) -> str:
    """The folder of a channel's message (the Message-ID is the sender's: hashed, never a
    path)."""
    digest = hashlib.sha256(f"{channel_id}\n{message_id}".encode()).hexdigest()
    return f"m_{digest[:40]}"


def _folder_key(folder: str) -> str:
    return f"{MAIL_DIR}/{folder}"


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


def parts_of(msg: EmailMessage) -> tuple[Part, ...]:
    """The message's first attachments, named, typed and decoded (in the reading thread)."""
    return tuple(Part(name, _content_type(p), _content(p)) for name, p in named_parts(msg))


async def _read_manifest(files: FileStore, folder: str) -> tuple[KeptFile, ...]:
    try:
        raw = await read_all(files, f"{_folder_key(folder)}/{MANIFEST}", MAX_MANIFEST_BYTES)
        items = json.loads(raw)
        return tuple(KeptFile(folder=folder, **item) for item in items)
    except (FileMissing, ValueError, TypeError):
        return ()


async def write_files(
    files: FileStore, channel_id: str, message_id: str, parts: tuple[Part, ...]
) -> tuple[tuple[KeptFile, ...], bool]:
    """Write a message's attachments to its folder, once; return them and whether this
    call wrote them. Raises StorageUnavailable with nothing left behind."""
    if not parts:
        return (), False
    folder = folder_of(channel_id, message_id)
    found = await _read_manifest(files, folder)
    if found:
        return found, False
    kept = []
    try:
        for part in parts:
            await write_all(files, f"{_folder_key(folder)}/{part.name}", [part.data])
            kept.append(KeptFile(folder, part.name, part.name, part.content_type, len(part.data)))
        listed = [{k: v for k, v in asdict(f).items() if k != "folder"} for f in kept]
        manifest = json.dumps(listed).encode()
        await write_all(files, f"{_folder_key(folder)}/{MANIFEST}", [manifest])
    except BaseException:
        await remove(files, folder)
        raise
    return tuple(kept), True


async def kept(files: FileStore, channel_id: str, message_id: str) -> tuple[KeptFile, ...]:
    """The files a channel's message was read with (none when it had none)."""
    return await _read_manifest(files, folder_of(channel_id, message_id))


async def remove(files: FileStore, folder: str) -> None:
    """Remove a message's folder (it was never recorded, or it is gone)."""
    await files.delete_folder(_folder_key(folder))


def key_of(folder: str, file: str) -> str:
    """The storage key of a kept file."""
    return f"{_folder_key(folder)}/{file}"


async def remove_unlisted(db: Database, files: FileStore, folders: list[str]) -> None:
    """Remove those folders no message lists any more (their conversations deleted)."""
    if not folders:
        return
    listed = await store.existing_folders(db.reader, folders)
    for folder in sorted(set(folders) - listed):
        await remove(files, folder)


async def remove_orphan_folders(
    db: Database, files: FileStore, grace: float = ORPHAN_GRACE_SECONDS
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

    gone = await sweep_folders(files, f"{MAIL_DIR}/", grace, still_used)
    if gone:
        log.info("removed the attachments of %d deleted or unrecorded e-mails", len(gone))
    return len(gone)
