"""A team's canned responses: any member reads and writes them; a shortcut is unique in
the team, and a team keeps at most `MAX_PER_TEAM`."""

from __future__ import annotations

from dataclasses import dataclass

from agentsvc.db import ConstraintViolation, Database
from agentsvc.errors import CannedResponseLimitReached, Conflict, NotFound
from agentsvc.ids import new_id, now_iso
from agentsvc.store import canned_responses as store
from agentsvc.store.canned_responses import CannedResponse

MAX_PER_TEAM = 500


@dataclass(frozen=True, slots=True)
class CannedChange:
    """What a member writes (None: unchanged, or absent from a new one)."""

    shortcut: str | None = None
    title: str | None = None
    content: str | None = None


def _taken(shortcut: str | None) -> Conflict:
    return Conflict(f"shortcut: the team already has a canned response /{shortcut}")


async def list_canned(db: Database, team_id: str) -> list[CannedResponse]:
    """The team's canned responses by shortcut."""
    return await store.list_for_team(db.reader, team_id)


async def create_canned(db: Database, team_id: str, change: CannedChange) -> CannedResponse:
    """Add a canned response; Conflict for a shortcut the team has, refused past the cap."""
    assert change.shortcut and change.title and change.content
    now = now_iso()
    canned = CannedResponse(
        new_id("canned"),
        team_id,
        change.shortcut,
        change.title.strip(),
        change.content,
        now,
        now,
    )
    try:
        async with db.write() as tx:
            if await store.count_for_team(tx, team_id) >= MAX_PER_TEAM:
                raise CannedResponseLimitReached(
                    f"The team has {MAX_PER_TEAM} canned responses, the most allowed: delete"
                    " or edit one instead"
                )
            await store.insert(tx, canned)
    except ConstraintViolation:
        raise _taken(change.shortcut) from None
    return canned


async def update_canned(
    db: Database, team_id: str, canned_id: str, change: CannedChange
) -> CannedResponse:
    """Change a canned response's shortcut, title or content."""
    fields = {
        name: value.strip() if name == "title" else value
        for name, value in (
            ("shortcut", change.shortcut),
            ("title", change.title),
            ("content", change.content),
        )
        if value is not None
    }
    try:
        async with db.write() as tx:
            if not await store.update(tx, team_id, canned_id, fields, now_iso()):
                raise NotFound("Canned response not found")
            updated = await store.get(tx, team_id, canned_id)
    except ConstraintViolation:
        raise _taken(change.shortcut) from None
    assert updated is not None
    return updated


async def delete_canned(db: Database, team_id: str, canned_id: str) -> None:
    """Delete the team's canned response, or NotFound."""
    async with db.write() as tx:
        if not await store.delete(tx, team_id, canned_id):
            raise NotFound("Canned response not found")
