"""SCIM provisioning: a team's token, the people and groups its identity provider manages."""

from __future__ import annotations

from dataclasses import dataclass

from agentsvc.db import Tx


@dataclass(frozen=True, slots=True)
class ScimUser:
    """A person the provider manages in a team, with their account's address and name."""

    team_id: str
    user_id: str
    email: str
    external_id: str | None
    active: bool
    owner_by_groups: bool
    attributes: str  # JSON: the SCIM attributes as last sent
    created_at: str
    updated_at: str


@dataclass(frozen=True, slots=True)
class ScimGroup:
    id: str
    team_id: str
    display_name: str
    external_id: str | None
    created_at: str
    updated_at: str


_USER = (
    "SELECT s.team_id, s.user_id, u.email, s.external_id, s.active, s.owner_by_groups,"
    " s.attributes, s.created_at, s.updated_at FROM scim_users s JOIN users u ON u.id = s.user_id"
)


def _user(row) -> ScimUser:
    return ScimUser(
        row[0], row[1], row[2], row[3], bool(row[4]), bool(row[5]), row[6], row[7], row[8]
    )


_GROUP = "SELECT id, team_id, display_name, external_id, created_at, updated_at FROM scim_groups"


async def get_token_info(tx: Tx, team_id: str) -> str | None:
    """When the team's token was made, or None without one."""
    rows = await tx.fetchall("SELECT created_at FROM team_scim WHERE team_id = ?", (team_id,))
    return rows[0][0] if rows else None


async def set_token(tx: Tx, team_id: str, token_hash: str, now: str) -> None:
    """Make this the team's one token (an earlier one stops at once)."""
    await tx.execute(
        "INSERT INTO team_scim (team_id, token_hash, created_at) VALUES (?, ?, ?)"
        " ON CONFLICT (team_id) DO UPDATE SET token_hash = excluded.token_hash,"
        " created_at = excluded.created_at",
        (team_id, token_hash, now),
    )


async def delete_token(tx: Tx, team_id: str) -> bool:
    """Remove the team's token; False when it had none."""
    return await tx.execute("DELETE FROM team_scim WHERE team_id = ?", (team_id,)) > 0


async def team_of_token(tx: Tx, token_hash: str) -> tuple[str, str] | None:
    """(team id, plan) of the team holding this token, or None."""
    rows = await tx.fetchall(
        "SELECT t.id, t.plan FROM team_scim s JOIN teams t ON t.id = s.team_id"
        " WHERE s.token_hash = ?",
        (token_hash,),
    )
    return (rows[0][0], rows[0][1]) if rows else None


async def get_user(tx: Tx, team_id: str, user_id: str) -> ScimUser | None:
    rows = await tx.fetchall(f"{_USER} WHERE s.team_id = ? AND s.user_id = ?", (team_id, user_id))
    return _user(rows[0]) if rows else None


async def list_users(
    tx: Tx, team_id: str, *, email: str | None, external_id: str | None, offset: int, limit: int
) -> tuple[int, list[ScimUser]]:
    """The team's managed people (filtered by address or external id), oldest first: the
    total and one page."""
    where, args = "s.team_id = ?", [team_id]
    if email is not None:
        where += " AND u.email = ?"
        args.append(email)
    if external_id is not None:
        where += " AND s.external_id = ?"
        args.append(external_id)
    count = await tx.fetchall(
        f"SELECT COUNT(*) FROM scim_users s JOIN users u ON u.id = s.user_id WHERE {where}",  # noqa: S608
        tuple(args),
    )
    rows = await tx.fetchall(
        f"{_USER} WHERE {where} ORDER BY s.created_at, s.user_id LIMIT ? OFFSET ?",  # noqa: S608
        (*args, limit, offset),
    )
    return count[0][0], [_user(r) for r in rows]


async def count_users(tx: Tx, team_id: str) -> int:
    rows = await tx.fetchall("SELECT COUNT(*) FROM scim_users WHERE team_id = ?", (team_id,))
    return rows[0][0]


async def insert_user(
    tx: Tx, team_id: str, user_id: str, external_id: str | None, attributes: str, now: str
) -> None:
    await tx.execute(
        "INSERT INTO scim_users (team_id, user_id, external_id, active, owner_by_groups,"
        " attributes, created_at, updated_at) VALUES (?, ?, ?, 1, 0, ?, ?, ?)",
        (team_id, user_id, external_id, attributes, now, now),
    )


async def update_user(
    tx: Tx,
    team_id: str,
    user_id: str,
    *,
    external_id: str | None,
    active: bool,
    attributes: str,
    now: str,
) -> None:
    await tx.execute(
        "UPDATE scim_users SET external_id = ?, active = ?, attributes = ?, updated_at = ?"
        " WHERE team_id = ? AND user_id = ?",
        (external_id, int(active), attributes, now, team_id, user_id),
    )


async def set_owner_by_groups(tx: Tx, team_id: str, user_id: str, value: bool) -> None:
    await tx.execute(
        "UPDATE scim_users SET owner_by_groups = ? WHERE team_id = ? AND user_id = ?",
        (int(value), team_id, user_id),
    )


async def delete_user(tx: Tx, team_id: str, user_id: str) -> None:
    """Forget a managed person and their groups in the team."""
    await tx.execute(
        "DELETE FROM scim_group_members WHERE user_id = ?"
        " AND group_id IN (SELECT id FROM scim_groups WHERE team_id = ?)",
        (user_id, team_id),
    )
    await tx.execute("DELETE FROM scim_users WHERE team_id = ? AND user_id = ?", (team_id, user_id))


async def count_owners(tx: Tx, team_id: str) -> int:
    rows = await tx.fetchall(
        "SELECT COUNT(*) FROM memberships WHERE team_id = ? AND role = 'owner'", (team_id,)
    )
    return rows[0][0]


async def get_group(tx: Tx, team_id: str, group_id: str) -> ScimGroup | None:
    rows = await tx.fetchall(f"{_GROUP} WHERE team_id = ? AND id = ?", (team_id, group_id))
    return ScimGroup(*rows[0]) if rows else None


async def list_groups(
    tx: Tx, team_id: str, *, display_name: str | None, offset: int, limit: int
) -> tuple[int, list[ScimGroup]]:
    """The team's groups (filtered by name), oldest first: the total and one page."""
    where, args = "team_id = ?", [team_id]
    if display_name is not None:
        where += " AND display_name = ?"
        args.append(display_name)
    count = await tx.fetchall(
        f"SELECT COUNT(*) FROM scim_groups WHERE {where}",  # noqa: S608
        tuple(args),
    )
    rows = await tx.fetchall(
        f"{_GROUP} WHERE {where} ORDER BY created_at, id LIMIT ? OFFSET ?",  # noqa: S608
        (*args, limit, offset),
    )
    return count[0][0], [ScimGroup(*r) for r in rows]


async def count_groups(tx: Tx, team_id: str) -> int:
    rows = await tx.fetchall("SELECT COUNT(*) FROM scim_groups WHERE team_id = ?", (team_id,))
    return rows[0][0]


async def insert_group(
    tx: Tx, group_id: str, team_id: str, display_name: str, external_id: str | None, now: str
) -> bool:
    """Store a group; False when the team already has one of this name."""
    changed = await tx.execute(
        "INSERT INTO scim_groups (id, team_id, display_name, external_id, created_at,"
        " updated_at) VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (team_id, display_name) DO NOTHING",
        (group_id, team_id, display_name, external_id, now, now),
    )
    return changed > 0


async def rename_group(
    tx: Tx, group: ScimGroup, display_name: str, external_id: str | None, now: str
) -> bool:
    """Rename a group; False when another group of the team has the name."""
    taken = await tx.fetchall(
        "SELECT 1 FROM scim_groups WHERE team_id = ? AND display_name = ? AND id <> ?",
        (group.team_id, display_name, group.id),
    )
    if taken:
        return False
    await tx.execute(
        "UPDATE scim_groups SET display_name = ?, external_id = ?, updated_at = ? WHERE id = ?",
        (display_name, external_id, now, group.id),
    )
    return True


async def delete_group(tx: Tx, group_id: str) -> list[str]:
    """Delete a group; return the users who were in it."""
    members = await group_members(tx, group_id)
    await tx.execute("DELETE FROM scim_group_members WHERE group_id = ?", (group_id,))
    await tx.execute("DELETE FROM scim_groups WHERE id = ?", (group_id,))
    return members


async def group_members(tx: Tx, group_id: str) -> list[str]:
    rows = await tx.fetchall(
        "SELECT user_id FROM scim_group_members WHERE group_id = ? ORDER BY user_id", (group_id,)
    )
    return [r[0] for r in rows]


async def group_member_addresses(tx: Tx, group: ScimGroup) -> list[tuple[str, str]]:
    """(user id, address) of the group's members, in one query."""
    rows = await tx.fetchall(
        "SELECT m.user_id, u.email FROM scim_group_members m JOIN users u ON u.id = m.user_id"
        " JOIN scim_users s ON s.user_id = m.user_id AND s.team_id = ?"
        " WHERE m.group_id = ? ORDER BY m.user_id",
        (group.team_id, group.id),
    )
    return [(r[0], r[1]) for r in rows]


async def add_group_member(tx: Tx, group_id: str, user_id: str) -> None:
    await tx.execute(
        "INSERT INTO scim_group_members (group_id, user_id) VALUES (?, ?)"
        " ON CONFLICT (group_id, user_id) DO NOTHING",
        (group_id, user_id),
    )


async def remove_group_member(tx: Tx, group_id: str, user_id: str) -> None:
    await tx.execute(
        "DELETE FROM scim_group_members WHERE group_id = ? AND user_id = ?", (group_id, user_id)
    )


async def groups_of_user(tx: Tx, team_id: str, user_id: str) -> list[tuple[str, str]]:
    """(id, displayName) of the team's groups the person is in."""
    rows = await tx.fetchall(
        "SELECT g.id, g.display_name FROM scim_group_members m JOIN scim_groups g"
        " ON g.id = m.group_id WHERE g.team_id = ? AND m.user_id = ? ORDER BY g.display_name",
        (team_id, user_id),
    )
    return [(r[0], r[1]) for r in rows]
