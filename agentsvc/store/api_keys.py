"""API keys, stored only as SHA-256 hashes."""

from __future__ import annotations

from dataclasses import dataclass

from agentsvc.db import Tx


@dataclass(frozen=True, slots=True)
class KeyOwner:
    """Who a key acts for: its team, user, role in that team and the team's plan."""

    key_id: str
    team_id: str
    user_id: str
    role: str
    plan: str


@dataclass(frozen=True, slots=True)
class ApiKey:
    id: str
    name: str
    prefix: str
    last4: str
    user_id: str
    created_at: str
    last_used_at: str | None


async def insert(
    tx: Tx,
    *,
    id: str,
    team_id: str,
    user_id: str,
    name: str,
    key_hash: str,
    prefix: str,
    last4: str,
    now: str,
) -> None:
    await tx.execute(
        "INSERT INTO api_keys (id, team_id, user_id, name, key_hash, prefix, last4, created_at)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        (id, team_id, user_id, name, key_hash, prefix, last4, now),
    )


async def get_owner(tx: Tx, key_hash: str) -> KeyOwner | None:
    """Resolve a key hash to its owner in one query; revoked keys and ex-members resolve to None."""
    rows = await tx.fetchall(
        "SELECT k.id, k.team_id, k.user_id, m.role, t.plan"
        " FROM api_keys k"
        " JOIN memberships m ON m.team_id = k.team_id AND m.user_id = k.user_id"
        " JOIN teams t ON t.id = k.team_id"
        " WHERE k.key_hash = ? AND k.revoked_at IS NULL",
        (key_hash,),
    )
    if not rows:
        return None
    r = rows[0]
    return KeyOwner(r[0], r[1], r[2], r[3], r[4])


async def list_for_team(tx: Tx, team_id: str) -> list[ApiKey]:
    rows = await tx.fetchall(
        "SELECT id, name, prefix, last4, user_id, created_at, last_used_at FROM api_keys"
        " WHERE team_id = ? AND revoked_at IS NULL ORDER BY created_at DESC",
        (team_id,),
    )
    return [ApiKey(*r) for r in rows]


async def revoke(tx: Tx, team_id: str, key_id: str, now: str) -> bool:
    changed = await tx.execute(
        "UPDATE api_keys SET revoked_at = ? WHERE id = ? AND team_id = ? AND revoked_at IS NULL",
        (now, key_id, team_id),
    )
    return changed > 0


async def list_for_user(tx: Tx, team_id: str, user_id: str) -> list[ApiKey]:
    rows = await tx.fetchall(
        "SELECT id, name, prefix, last4, user_id, created_at, last_used_at FROM api_keys"
        " WHERE team_id = ? AND user_id = ? AND revoked_at IS NULL ORDER BY created_at DESC",
        (team_id, user_id),
    )
    return [ApiKey(*r) for r in rows]


async def get(tx: Tx, team_id: str, key_id: str) -> ApiKey | None:
    """Return a live key of the team, or None (unknown, revoked, or another team's)."""
    rows = await tx.fetchall(
        "SELECT id, name, prefix, last4, user_id, created_at, last_used_at FROM api_keys"
        " WHERE id = ? AND team_id = ? AND revoked_at IS NULL",
        (key_id, team_id),
    )
    return ApiKey(*rows[0]) if rows else None


async def revoke_for_member(tx: Tx, team_id: str, user_id: str, now: str) -> int:
    """Revoke every key a user holds in a team (the user was removed from it)."""
    changed = await tx.execute(
        "UPDATE api_keys SET revoked_at = ?"
        " WHERE team_id = ? AND user_id = ? AND revoked_at IS NULL",
        (now, team_id, user_id),
    )
    return changed
