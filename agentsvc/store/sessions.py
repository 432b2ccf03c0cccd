"""Sign-in sessions, stored by the SHA-256 of their token."""

from __future__ import annotations

from dataclasses import dataclass

from agentsvc.db import Tx


@dataclass(frozen=True, slots=True)
class SessionOwner:
    """What a live session acts as: its user in its team, with the role and the team's plan."""

    session_id: str
    user_id: str
    team_id: str
    role: str
    plan: str
    expires_at: str


async def insert(
    tx: Tx,
    *,
    id: str,
    token_hash: str,
    user_id: str,
    team_id: str,
    now: str,
    expires_at: str,
) -> None:
    await tx.execute(
        "INSERT INTO sessions (id, token_hash, user_id, team_id, created_at, expires_at)"
        " VALUES (?, ?, ?, ?, ?, ?)",
        (id, token_hash, user_id, team_id, now, expires_at),
    )


async def get_owner(tx: Tx, token_hash: str, now: str) -> SessionOwner | None:
    """Resolve a live session in one query; expired sessions and ex-members resolve to None."""
    rows = await tx.fetchall(
        "SELECT s.id, s.user_id, s.team_id, m.role, t.plan, s.expires_at"
        " FROM sessions s"
        " JOIN memberships m ON m.team_id = s.team_id AND m.user_id = s.user_id"
        " JOIN teams t ON t.id = s.team_id"
        " WHERE s.token_hash = ? AND s.expires_at > ?",
        (token_hash, now),
    )
    return SessionOwner(*rows[0]) if rows else None


async def extend(tx: Tx, session_id: str, expires_at: str) -> None:
    await tx.execute("UPDATE sessions SET expires_at = ? WHERE id = ?", (expires_at, session_id))


async def set_team(tx: Tx, session_id: str, team_id: str) -> None:
    await tx.execute("UPDATE sessions SET team_id = ? WHERE id = ?", (team_id, session_id))


async def delete_by_hash(tx: Tx, token_hash: str) -> bool:
    changed = await tx.execute("DELETE FROM sessions WHERE token_hash = ?", (token_hash,))
    return changed > 0


async def delete_for_member(tx: Tx, team_id: str, user_id: str) -> int:
    """End every session of a user acting in a team (the user was removed from it)."""
    changed = await tx.execute(
        "DELETE FROM sessions WHERE team_id = ? AND user_id = ?", (team_id, user_id)
    )
    return changed


async def delete_others_of_user(tx: Tx, user_id: str, keep_session_id: str) -> int:
    """End every session of a user but one (their password changed)."""
    return await tx.execute(
        "DELETE FROM sessions WHERE user_id = ? AND id <> ?", (user_id, keep_session_id)
    )


async def delete_expired(tx: Tx, now: str) -> int:
    changed = await tx.execute("DELETE FROM sessions WHERE expires_at <= ?", (now,))
    return changed
