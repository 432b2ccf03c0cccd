"""What SCIM changes in a team's membership: a provisioned person joins or leaves (sessions
and API keys in the team end with the membership), and their role follows their groups
through the team's SSO `roleMapping`.

Roles: a group mapped to "admin" makes its members owners; the highest role wins; no mapped
group means member. SCIM never demotes an owner it did not make (the team's founder, or
someone an owner promoted in the dashboard), and never removes the team's last owner.
"""

from __future__ import annotations

import json

from agentsvc.db import Tx
from agentsvc.errors import Conflict, Forbidden, NotFound
from agentsvc.ids import new_id, now_iso
from agentsvc.services import audit
from agentsvc.services.audit import Actor
from agentsvc.services.scim.resources import GroupChange, ScimInvalid
from agentsvc.services.sso.config import ROLES
from agentsvc.store import accounts, api_keys, scim, sessions, sso
from agentsvc.store import team as team_store
from agentsvc.store.scim import ScimUser


async def team_domains(tx: Tx, team_id: str) -> tuple[str, ...]:
    """The team's proven single sign-on domains: only addresses there may be provisioned
    (an unproven claim proves nothing about who owns the addresses)."""
    return await sso.verified_domains_of(tx, team_id)


async def _role_mapping(tx: Tx, team_id: str) -> dict[str, str]:
    row = await sso.get(tx, team_id)
    if row is None:
        return {}
    mapping = json.loads(row.settings).get("roleMapping") or {}
    return {str(group).casefold(): role for group, role in mapping.items()}


async def rename(tx: Tx, user_id: str, name: str) -> None:
    """Give the account the name the provider sends (blank: kept as it is)."""
    user = await accounts.get_user(tx, user_id)
    if name and user is not None and user.name != name:
        await accounts.set_name(tx, user_id, name, now_iso())


async def join(tx: Tx, team_id: str, user_id: str) -> None:
    """Make a provisioned person a member (again), with the role their groups give."""
    await team_store.add_membership(
        tx, id=new_id("membership"), team_id=team_id, user_id=user_id, role="member", now=now_iso()
    )
    await apply_role(tx, team_id, user_id, None)


async def leave(tx: Tx, team_id: str, row: ScimUser) -> None:
    """Take a person out of the team: membership, sessions in it and API keys in it end.
    The team's founder and its last owner are refused."""
    team = await accounts.get_team(tx, team_id)
    assert team is not None
    if row.user_id == team.owner_user_id:
        raise Forbidden(
            "The team's owner cannot be deprovisioned; unassign them in the identity provider"
            " or transfer the team first"
        )
    member = await team_store.find_member(tx, team_id, row.user_id)
    if member is None:
        return
    if member.role == "owner" and await scim.count_owners(tx, team_id) <= 1:
        raise Forbidden("The team's last owner cannot be deprovisioned")
    await team_store.delete_membership(tx, team_id, member.member_id)
    await sessions.delete_for_member(tx, team_id, row.user_id)
    await api_keys.revoke_for_member(tx, team_id, row.user_id, now_iso())
    await scim.set_owner_by_groups(tx, team_id, row.user_id, False)


async def set_active(tx: Tx, team_id: str, row: ScimUser, active: bool, actor: Actor) -> None:
    """Reactivate (a member again) or deactivate (out of the team) a person; recorded."""
    if active:
        await join(tx, team_id, row.user_id)
    else:
        await leave(tx, team_id, row)
    await audit.record_in(
        tx,
        actor,
        "scim.user_reactivated" if active else "scim.user_deactivated",
        target_type="member",
        target_id=row.user_id,
        label=row.email,
    )


async def apply_role(tx: Tx, team_id: str, user_id: str, actor: Actor | None) -> bool:
    """Give an active member the role their groups map to; True when it changed."""
    row = await scim.get_user(tx, team_id, user_id)
    current = await accounts.get_role(tx, team_id, user_id)
    if row is None or not row.active or current is None:
        return False
    mapping = await _role_mapping(tx, team_id)
    groups = await scim.groups_of_user(tx, team_id, user_id)
    admin = any(ROLES.get(mapping.get(name.casefold(), "")) == "owner" for _, name in groups)
    team = await accounts.get_team(tx, team_id)
    assert team is not None
    if admin and current == "member":
        role = "owner"
    elif not admin and current == "owner" and row.owner_by_groups:
        role = "member"  # only an owner SCIM made; the founder is never one of them
    else:
        return False
    if user_id == team.owner_user_id:
        return False
    await sso.set_role(tx, team_id, user_id, role)
    await scim.set_owner_by_groups(tx, team_id, user_id, role == "owner")
    await audit.record_in(
        tx,
        actor,
        "scim.role_changed",
        target_type="member",
        target_id=user_id,
        label=row.email,
        details={"from": current, "to": role},
    )
    return True


async def follow_groups(
    tx: Tx, team_id: str, user_ids: list[str] | set[str], actor: Actor | None
) -> bool:
    """Each person's role after their groups changed; True when any role changed."""
    changed = False
    for user_id in sorted(user_ids):
        changed |= await apply_role(tx, team_id, user_id, actor)
    return changed


async def _checked_members(tx: Tx, team_id: str, ids: tuple[str, ...]) -> set[str]:
    for user_id in ids:
        if await scim.get_user(tx, team_id, user_id) is None:
            raise ScimInvalid(f"members: no provisioned user of this team has the id {user_id}")
    return set(ids)


async def change_group(
    tx: Tx,
    team_id: str,
    group_id: str,
    change: GroupChange,
    actor: Actor | None,
    external_id: str | None = None,
) -> bool:
    """Apply one change to a group; True when a member's role changed because of it."""
    group = await scim.get_group(tx, team_id, group_id)
    if group is None:
        raise NotFound("No group has this id")
    before = set(await scim.group_members(tx, group_id))
    affected: set[str] = set()
    if change.display_name is not None or change.external_id is not None or external_id:
        name = change.display_name or group.display_name
        external = change.external_id or external_id or group.external_id
        if not await scim.rename_group(tx, group, name, external, now_iso()):
            raise Conflict(f"displayName: the team already has a group {name}")
        if name != group.display_name:
            affected |= before  # the new name may map to another role
    if change.members is not None:
        named = await _checked_members(tx, team_id, change.members)
        if change.op == "add":
            added, removed = named - before, set()
        elif change.op == "remove":
            added, removed = set(), named & before
        else:
            added, removed = named - before, before - named
        for user_id in added:
            await scim.add_group_member(tx, group_id, user_id)
        for user_id in removed:
            await scim.remove_group_member(tx, group_id, user_id)
        affected |= added | removed
    return await follow_groups(tx, team_id, affected, actor)
