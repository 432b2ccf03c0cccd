"""Team invitations: pending, then accepted, expired or cancelled."""

from __future__ import annotations

from dataclasses import dataclass

from agentsvc.db import Tx


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


async def insert(tx: Tx, invitation: Invitation, token_hash: str) -> None:
    await tx.execute(
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


async def list_for_team(tx: Tx, team_id: str) -> list[Invitation]:
    rows = await tx.fetchall(
        f"SELECT {_COLUMNS} FROM invitations WHERE team_id = ?"
        " ORDER BY created_at DESC, rowid DESC",
        (team_id,),
    )
    return [Invitation(*r) for r in rows]


async def get(tx: Tx, team_id: str, invitation_id: str) -> Invitation | None:
    rows = await tx.fetchall(
        f"SELECT {_COLUMNS} FROM invitations WHERE id = ? AND team_id = ?",
        (invitation_id, team_id),
    )
    return Invitation(*rows[0]) if rows else None


async def get_by_token(tx: Tx, token_hash: str) -> Invitation | None:
    rows = await tx.fetchall(
        f"SELECT {_COLUMNS} FROM invitations WHERE token_hash = ?", (token_hash,)
    )
    return Invitation(*rows[0]) if rows else None


async def transition(tx: Tx, invitation_id: str, status: str, now: str) -> bool:
    """Move a pending invitation to `status`; False when it was no longer pending."""
    changed = await tx.execute(
        "UPDATE invitations SET status = ?, updated_at = ? WHERE id = ? AND status = 'pending'",
        (status, now, invitation_id),
    )
    return changed > 0


async def cancel_pending_for_email(tx: Tx, team_id: str, email: str, now: str) -> int:
    """Cancel earlier pending invitations of an address (a new one replaces them); those
    already past their expiry stay expired."""
    changed = await tx.execute(
        "UPDATE invitations SET status = 'cancelled', updated_at = ?"
        " WHERE team_id = ? AND email = ? AND status = 'pending' AND expires_at > ?",
        (now, team_id, email, now),
    )
    return changed


async def expire_due(tx: Tx, now: str) -> int:
    """Mark every pending invitation past its time expired; return how many."""
    changed = await tx.execute(
        "UPDATE invitations SET status = 'expired', updated_at = ?"
        " WHERE status = 'pending' AND expires_at <= ?",
        (now, now),
    )
    return changed


async def pending_token_hashes(tx: Tx, team_id: str) -> dict[str, str]:
    """The stored token hash of each pending invitation of the team, by id."""
    rows = await tx.fetchall(
        "SELECT id, token_hash FROM invitations WHERE team_id = ? AND status = 'pending'",
        (team_id,),
    )
    return {r[0]: r[1] for r in rows}


async def pending_for_email(tx: Tx, email: str, now: str) -> list[Invitation]:
    """The address's pending invitations not yet past their expiry, in every team, newest
    first."""
    rows = await tx.fetchall(
        f"SELECT {_COLUMNS} FROM invitations WHERE email = ? AND status = 'pending'"
        " AND expires_at > ? ORDER BY created_at DESC, rowid DESC",
        (email, now),
    )
    return [Invitation(*r) for r in rows]
