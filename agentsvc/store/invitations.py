"""Team invitations: pending, then accepted, expired or cancelled."""

from __future__ import annotations

from dataclasses import dataclass

import aiosqlite


@dataclass(frozen=True, slots=True)
class Invitation:
    id: str
    team_id: str
    email: str
    role: str
    status: str
    invited_by_user_id: str | None
    created_at: str
    updated_at: str
    expires_at: str


_COLUMNS = (
    "id, team_id, email, role, status, invited_by_user_id, created_at, updated_at, expires_at"
)


async def insert(conn: aiosqlite.Connection, invitation: Invitation, token_hash: str) -> None:
    await conn.execute(
        f"INSERT INTO invitations ({_COLUMNS}, token_hash) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            invitation.id,
            invitation.team_id,
            invitation.email,
            invitation.role,
            invitation.status,
            invitation.invited_by_user_id,
            invitation.created_at,
            invitation.updated_at,
            invitation.expires_at,
            token_hash,
        ),
    )


async def list_for_team(conn: aiosqlite.Connection, team_id: str) -> list[Invitation]:
    rows = await conn.execute_fetchall(
        f"SELECT {_COLUMNS} FROM invitations WHERE team_id = ?"
        " ORDER BY created_at DESC, rowid DESC",
        (team_id,),
    )
    return [Invitation(*r) for r in rows]


async def get(conn: aiosqlite.Connection, team_id: str, invitation_id: str) -> Invitation | None:
    rows = await conn.execute_fetchall(
        f"SELECT {_COLUMNS} FROM invitations WHERE id = ? AND team_id = ?",
        (invitation_id, team_id),
    )
    return Invitation(*rows[0]) if rows else None


async def get_by_token(conn: aiosqlite.Connection, token_hash: str) -> Invitation | None:
    rows = await conn.execute_fetchall(
        f"SELECT {_COLUMNS} FROM invitations WHERE token_hash = ?", (token_hash,)
    )
    return Invitation(*rows[0]) if rows else None


async def transition(conn: aiosqlite.Connection, invitation_id: str, status: str, now: str) -> bool:
    """Move a pending invitation to `status`; False when it was no longer pending."""
    cur = await conn.execute(
        "UPDATE invitations SET status = ?, updated_at = ? WHERE id = ? AND status = 'pending'",
        (status, now, invitation_id),
    )
    return cur.rowcount > 0


async def cancel_pending_for_email(
    conn: aiosqlite.Connection, team_id: str, email: str, now: str
) -> int:
    """Cancel earlier pending invitations of an address (a new one replaces them); those
    already past their expiry stay expired."""
    cur = await conn.execute(
        "UPDATE invitations SET status = 'cancelled', updated_at = ?"
        " WHERE team_id = ? AND email = ? AND status = 'pending' AND expires_at > ?",
        (now, team_id, email, now),
    )
    return cur.rowcount


async def expire_due(conn: aiosqlite.Connection, now: str) -> int:
    """Mark every pending invitation past its time expired; return how many."""
    cur = await conn.execute(
        "UPDATE invitations SET status = 'expired', updated_at = ?"
        " WHERE status = 'pending' AND expires_at <= ?",
        (now, now),
    )
    return cur.rowcount
