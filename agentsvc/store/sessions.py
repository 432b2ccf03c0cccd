"""Sign-in sessions, stored by the SHA-256 of their token."""

from __future__ import annotations

from dataclasses import dataclass

import aiosqlite


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
    conn: aiosqlite.Connection,
    *,
    id: str,
    token_hash: str,
    user_id: str,
    team_id: str,
    now: str,
    expires_at: str,
) -> None:
    await conn.execute(
        "INSERT INTO sessions (id, token_hash, user_id, team_id, created_at, expires_at)"
        " VALUES (?, ?, ?, ?, ?, ?)",
        (id, token_hash, user_id, team_id, now, expires_at),
    )


async def get_owner(conn: aiosqlite.Connection, token_hash: str, now: str) -> SessionOwner | None:
    """Resolve a live session in one query; expired sessions and ex-members resolve to None."""
    rows = await conn.execute_fetchall(
        "SELECT s.id, s.user_id, s.team_id, m.role, t.plan, s.expires_at"
        " FROM sessions s"
        " JOIN memberships m ON m.team_id = s.team_id AND m.user_id = s.user_id"
        " JOIN teams t ON t.id = s.team_id"
        " WHERE s.token_hash = ? AND s.expires_at > ?",
        (token_hash, now),
    )
    return SessionOwner(*rows[0]) if rows else None


async def extend(conn: aiosqlite.Connection, session_id: str, expires_at: str) -> None:
    await conn.execute("UPDATE sessions SET expires_at = ? WHERE id = ?", (expires_at, session_id))


async def set_team(conn: aiosqlite.Connection, session_id: str, team_id: str) -> None:
    await conn.execute("UPDATE sessions SET team_id = ? WHERE id = ?", (team_id, session_id))


async def delete_by_hash(conn: aiosqlite.Connection, token_hash: str) -> bool:
    cur = await conn.execute("DELETE FROM sessions WHERE token_hash = ?", (token_hash,))
    return cur.rowcount > 0


async def delete_for_member(conn: aiosqlite.Connection, team_id: str, user_id: str) -> int:
    """End every session of a user acting in a team (the user was removed from it)."""
    cur = await conn.execute(
        "DELETE FROM sessions WHERE team_id = ? AND user_id = ?", (team_id, user_id)
    )
    return cur.rowcount


async def delete_expired(conn: aiosqlite.Connection, now: str) -> int:
    cur = await conn.execute("DELETE FROM sessions WHERE expires_at <= ?", (now,))
    return cur.rowcount
