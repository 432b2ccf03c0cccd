"""Members' pictures: what visitors see beside a member's name in the widget.

Only PNG, JPEG, WebP and GIF are kept (never SVG, which can carry script), at most
`MAX_BYTES`, and only when the bytes are of the type declared. Each upload gets a new
unguessable id, so a picture's address can be cached for good. The picture is kept in the
file storage (`avatars/<id>/image`, written before its row, removed after its row goes);
one uploaded before version 25 is still in its row.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from dataclasses import dataclass

from agentsvc.db import Database
from agentsvc.errors import NotFound, UnsupportedMediaType, ValidationFailed
from agentsvc.ids import new_id, now_iso
from agentsvc.storage import FileMissing, FileStore, write_all
from agentsvc.store import avatars as store
from agentsvc.store.avatars import Avatar

MAX_BYTES = 256 * 1024
TYPES = {
    "image/png": "PNG",
    "image/jpeg": "JPEG",
    "image/webp": "WebP",
    "image/gif": "GIF",
}


def _is(content_type: str, data: bytes) -> bool:
    """Whether the bytes start as an image of that type does."""
    if content_type == "image/png":
        return data.startswith(b"\x89PNG\r\n\x1a\n")
    if content_type == "image/jpeg":
        return data.startswith(b"\xff\xd8\xff")
    if content_type == "image/gif":
        return data.startswith((b"GIF87a", b"GIF89a"))
    if content_type == "image/webp":
        return len(data) >= 12 and data[:4] == b"RIFF" and data[8:12] == b"WEBP"
    return False


def check_type(content_type: str) -> None:
    """UnsupportedMediaType for anything but the four picture types."""
    if content_type not in TYPES:
        shown = content_type or "no Content-Type"
        raise UnsupportedMediaType(
            f"A picture must be PNG, JPEG, WebP or GIF (Content-Type image/png, image/jpeg,"
            f" image/webp or image/gif), not {shown}; SVG is not accepted"
        )


def _folder(avatar_id: str) -> str:
    return f"avatars/{avatar_id}"


@dataclass(frozen=True, slots=True)
class Picture:
    """A picture on its way out: its type, size and bytes as they are read."""

    content_type: str
    size: int
    chunks: AsyncGenerator[bytes, None]


async def set_avatar(
    db: Database, files: FileStore, user_id: str, content_type: str, data: bytes
) -> Avatar:
    """Keep the user's new picture; the old one's address stops working."""
    check_type(content_type)
    if not data:
        raise ValidationFailed("body: the picture is empty")
    if len(data) > MAX_BYTES:
        raise ValidationFailed(f"body: a picture is at most {MAX_BYTES // 1024} KB")
    if not _is(content_type, data):
        raise ValidationFailed(
            f"body: these bytes are not a {TYPES[content_type]} picture (Content-Type"
            f" {content_type})"
        )
    avatar = Avatar(new_id("avatar"), user_id, content_type, None, now_iso())
    await write_all(files, f"{_folder(avatar.id)}/image", [data])
    try:
        async with db.write() as tx:
            old = await store.get_for_user(tx, user_id)
            await store.replace(tx, avatar)
    except BaseException:
        await files.delete_folder(_folder(avatar.id))
        raise
    if old is not None:
        await files.delete_folder(_folder(old))
    return avatar


async def delete_avatar(db: Database, files: FileStore, user_id: str) -> None:
    """Remove the user's picture (nothing happens without one)."""
    async with db.write() as tx:
        old = await store.get_for_user(tx, user_id)
        await store.delete_for_user(tx, user_id)
    if old is not None:
        await files.delete_folder(_folder(old))


async def _once(data: bytes) -> AsyncGenerator[bytes, None]:
    yield data


async def get_avatar(db: Database, files: FileStore, avatar_id: str) -> Picture:
    """A picture by its id, opened to be sent, or NotFound."""
    found = await store.get(db.reader, avatar_id)
    if found is None:
        raise NotFound("Picture not found")
    if found.image is not None:  # uploaded before the file storage kept pictures
        return Picture(found.content_type, len(found.image), _once(found.image))
    try:
        reading = await files.open(f"{_folder(avatar_id)}/image")
    except FileMissing:
        raise NotFound("Picture not found") from None
    return Picture(found.content_type, reading.size, reading.chunks())
