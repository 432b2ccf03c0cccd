"""Users, teams and memberships."""

from __future__ import annotations

from dataclasses import dataclass

from agentsvc.db import Tx


@dataclass(frozen=True, slots=True)
class User:
    id: str
    email: str
    name: str
    password_hash: str | None
    created_at: str


@dataclass(frozen=True, slots=True)
class Team:
    id: str
    name: str
    owner_user_id: str
    plan: str
    created_at: str


def _user(row) -> User:
    return User(row["id"], row["email"], row["name"], row["password_hash"], row["created_at"])


def _team(row) -> Team:
    return Team(row["id"], row["name"], row["owner_user_id"], row["plan"], row["created_at"])


async def insert_user(
    tx: Tx,
    *,
    id: str,
    email: str,
    name: str,
    password_hash: str | None,
    now: str,
) -> User:
    await tx.execute(
        "INSERT INTO users (id, email, name, password_hash, created_at, updated_at)"
        " VALUES (?, ?, ?, ?, ?, ?)",
        (id, email, name, password_hash, now, now),
    )
    return User(id, email, name, password_hash, now)


async def get_user_by_email(tx: Tx, email: str) -> User | None:
    rows = await tx.fetchall("SELECT * FROM users WHERE email = ?", (email,))
    return _user(rows[0]) if rows else None


async def get_user(tx: Tx, user_id: str) -> User | None:
    rows = await tx.fetchall("SELECT * FROM users WHERE id = ?", (user_id,))
    return _user(rows[0]) if rows else None


async def set_password(tx: Tx, user_id: str, password_hash: str, now: str):
    await tx.execute(
        "UPDATE users SET password_hash = ?, updated_at = ? WHERE id = ?",
        (password_hash, now, user_id),
    )


async def set_name(tx: Tx, user_id: str, name: str, now: str) -> None:
    """Set a user's display name."""
    await tx.execute("UPDATE users SET name = ?, updated_at = ? WHERE id = ?", (name, now, user_id))


async def count_users(tx: Tx) -> int:
    rows = await tx.fetchall("SELECT COUNT(*) FROM users")
    return rows[0][0]


async def insert_team(
    tx: Tx, *, id: str, name: str, owner_user_id: str, plan: str, now: str
) -> Team:
    await tx.execute(
        "INSERT INTO teams (id, name, owner_user_id, plan, created_at, updated_at)"
        " VALUES (?, ?, ?, ?, ?, ?)",
        (id, name, owner_user_id, plan, now, now),
    )
    return Team(id, name, owner_user_id, plan, now)


async def get_owned_team(tx: Tx, owner_user_id: str) -> Team | None:
    rows = await tx.fetchall("SELECT * FROM teams WHERE owner_user_id = ?", (owner_user_id,))
    return _team(rows[0]) if rows else None


async def get_team(tx: Tx, team_id: str) -> Team | None:
    rows = await tx.fetchall("SELECT * FROM teams WHERE id = ?", (team_id,))
    return _team(rows[0]) if rows else None


async def set_team_name(tx: Tx, team_id: str, name: str, now: str) -> None:
    """Rename a team."""
    await tx.execute("UPDATE teams SET name = ?, updated_at = ? WHERE id = ?", (name, now, team_id))


async def set_plan(tx: Tx, team_id: str, plan: str, now: str) -> None:
    await tx.execute("UPDATE teams SET plan = ?, updated_at = ? WHERE id = ?", (plan, now, team_id))


async def insert_membership(
    tx: Tx, *, id: str, team_id: str, user_id: str, role: str, now: str
) -> None:
    await tx.execute(
        "INSERT INTO memberships (id, team_id, user_id, role, created_at) VALUES (?, ?, ?, ?, ?)",
        (id, team_id, user_id, role, now),
    )


async def get_role(tx: Tx, team_id: str, user_id: str) -> str | None:
    rows = await tx.fetchall(
        "SELECT role FROM memberships WHERE team_id = ? AND user_id = ?", (team_id, user_id)
    )
    return rows[0][0] if rows else None
