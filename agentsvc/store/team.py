"""Team membership as the team endpoints see it: members with their user details."""

from __future__ import annotations

from dataclasses import dataclass

from agentsvc.db import Tx


@dataclass(frozen=True, slots=True)
class Member:
    user_id: str
    member_id: str
    role: str
    email: str
    name: str
    created_at: str
    notify_handoffs: bool = False
    notify_browser: bool = False  # the desk's browser notifications, and its sound
    notify_sound: bool = False
    avatar_id: str | None = None  # the member's picture (None without one)


_MEMBER = (
    "SELECT u.id, m.id, m.role, u.email, u.name, m.created_at, m.notify_handoffs = 1,"
    " m.notify_browser = 1, m.notify_sound = 1,"
    " (SELECT av.id FROM avatars av WHERE av.user_id = u.id)"
    " FROM memberships m JOIN users u ON u.id = m.user_id"
)


async def list_members(tx: Tx, team_id: str) -> list[Member]:
    """The team's members, the team's owner first, then by joining time."""
    rows = await tx.fetchall(
        f"{_MEMBER} JOIN teams t ON t.id = m.team_id WHERE m.team_id = ?"
        " ORDER BY (u.id = t.owner_user_id) DESC, m.created_at, m.rowid",
        (team_id,),
    )
    return [Member(*r) for r in rows]


async def get_member(tx: Tx, team_id: str, member_id: str) -> Member | None:
    rows = await tx.fetchall(f"{_MEMBER} WHERE m.team_id = ? AND m.id = ?", (team_id, member_id))
    return Member(*rows[0]) if rows else None


async def find_member(tx: Tx, team_id: str, ref: str) -> Member | None:
    """The team's member by membership id or user id, or None."""
    rows = await tx.fetchall(
        f"{_MEMBER} WHERE m.team_id = ? AND (m.id = ? OR u.id = ?)", (team_id, ref, ref)
    )
    return Member(*rows[0]) if rows else None


async def set_notify_handoffs(tx: Tx, team_id: str, user_id: str, notify: bool) -> bool:
    """Whether the member is e-mailed about handoffs; False when not a member."""
    changed = await tx.execute(
        "UPDATE memberships SET notify_handoffs = ? WHERE team_id = ? AND user_id = ?",
        (1 if notify else 0, team_id, user_id),
    )
    return changed > 0


async def set_desk_notifications(
    tx: Tx, team_id: str, user_id: str, browser: bool | None, sound: bool | None
) -> None:
    """Whether the member's desk notifies in the browser, and with a sound (None: as is)."""
    for column, value in (("notify_browser", browser), ("notify_sound", sound)):
        if value is not None:
            await tx.execute(
                f"UPDATE memberships SET {column} = ? WHERE team_id = ? AND user_id = ?",  # noqa: S608
                (1 if value else 0, team_id, user_id),
            )


async def handoff_recipients(tx: Tx, team_id: str) -> list[str]:
    """E-mail addresses of the members who asked to hear of handoffs."""
    rows = await tx.fetchall(
        "SELECT u.email FROM memberships m JOIN users u ON u.id = m.user_id"
        " WHERE m.team_id = ? AND m.notify_handoffs = 1 ORDER BY m.rowid",
        (team_id,),
    )
    return [r[0] for r in rows]


async def delete_membership(tx: Tx, team_id: str, member_id: str) -> bool:
    changed = await tx.execute(
        "DELETE FROM memberships WHERE team_id = ? AND id = ?", (team_id, member_id)
    )
    return changed > 0


async def add_membership(
    tx: Tx, *, id: str, team_id: str, user_id: str, role: str, now: str
) -> bool:
    """Add a user to a team; False when the user already belongs to it."""
    changed = await tx.execute(
        "INSERT INTO memberships (id, team_id, user_id, role, created_at)"
        " VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
        (id, team_id, user_id, role, now),
    )
    return changed > 0


async def latest_team_of_user(tx: Tx, user_id: str) -> str | None:
    """The team the user joined most recently (an invited user lands in the inviting team)."""
    rows = await tx.fetchall(
        "SELECT team_id FROM memberships WHERE user_id = ?"
        " ORDER BY created_at DESC, rowid DESC LIMIT 1",
        (user_id,),
    )
    return rows[0][0] if rows else None


async def is_member(tx: Tx, team_id: str, user_id: str) -> bool:
    rows = await tx.fetchall(
        "SELECT 1 FROM memberships WHERE team_id = ? AND user_id = ?", (team_id, user_id)
    )
    return bool(rows)


async def teams_of_user(tx: Tx, user_id: str) -> list[tuple[str, str, str]]:
    """Every team the user belongs to, as (team id, team name, role), oldest first."""
    rows = await tx.fetchall(
        "SELECT t.id, t.name, m.role FROM memberships m JOIN teams t ON t.id = m.team_id"
        " WHERE m.user_id = ? ORDER BY m.created_at, m.rowid",
        (user_id,),
    )
    return [(r[0], r[1], r[2]) for r in rows]


async def owner_addresses(tx: Tx, team_id: str) -> list[str]:
    """E-mail addresses of the team's owners (a budget's warnings go to them)."""
    rows = await tx.fetchall(
        "SELECT u.email FROM memberships m JOIN users u ON u.id = m.user_id"
        " WHERE m.team_id = ? AND m.role = 'owner' ORDER BY m.rowid",
        (team_id,),
    )
    return [r[0] for r in rows]
