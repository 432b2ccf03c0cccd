"""Members' pictures: one per user, under an unguessable id that changes with each upload."""

from __future__ import annotations

from dataclasses import dataclass

from agentsvc.db import Tx


@dataclass(frozen=True, slots=True)
class Avatar:
    id: str
    user_id: str
    content_type: str
    image: bytes
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


async def get(tx: Tx, avatar_id: str) -> Avatar | None:
    row = await tx.fetchone(
        "SELECT id, user_id, content_type, image, created_at FROM avatars WHERE id = ?",
        (avatar_id,),
    )
    if row is None:
        return None
    return Avatar(row[0], row[1], row[2], bytes(row[3]), row[4])
