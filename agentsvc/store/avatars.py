"""Members' pictures: one per user, under an unguessable id that changes with each upload."""

from __future__ import annotations

from dataclasses import dataclass

from agentsvc.db import Tx


@dataclass(frozen=True, slots=True)
class Avatar:
    id: str
    user_id: str
    content_type: str
    image: bytes | None  # a picture uploaded before version 25; later ones: file storage
    created_at: str


async def replace(tx: Tx, avatar: Avatar) -> None:
    """Make `avatar` the user's picture (the previous one, and its address, are gone)."""
    await tx.execute("DELETE FROM avatars WHERE user_id = ?", (avatar.user_id,))
    await tx.execute(
        "INSERT INTO avatars (id, user_id, content_type, image, created_at) VALUES (?, ?, ?, ?, ?)",
        (avatar.id, avatar.user_id, avatar.content_type, avatar.image, avatar.created_at),
    )


async def delete_for_user(tx: Tx, user_id: str) -> bool:
    changed = await tx.execute("DELETE FROM avatars WHERE user_id = ?", (user_id,))
    return changed > 0


async def get_for_user(tx: Tx, user_id: str) -> str | None:
    """The id of the user's picture, or None."""
    return await tx.fetchval("SELECT id FROM avatars WHERE user_id = ?", (user_id,))


async def get(tx: Tx, avatar_id: str) -> Avatar | None:
    row = await tx.fetchone(
        "SELECT id, user_id, content_type, image, created_at FROM avatars WHERE id = ?",
        (avatar_id,),
    )
    if row is None:
        return None
    return Avatar(row[0], row[1], row[2], bytes(row[3]) if row[3] is not None else None, row[4])


async def existing_ids(tx: Tx, ids: list[str]) -> set[str]:
    """Which of these picture ids exist."""
    if not ids:
        return set()
    marks = ", ".join("?" for _ in ids)
    rows = await tx.fetchall(f"SELECT id FROM avatars WHERE id IN ({marks})", ids)
    return {r[0] for r in rows}
