"""The SCIM service: a team's provisioning token (owners), and the Users and Groups its
identity provider manages. A person deactivated or deleted leaves the team at once (their
sessions and API keys in it end); a role that comes from a group follows the group.
runtime.py builds it once."""

from __future__ import annotations

import json
import secrets
from dataclasses import dataclass

from agentsvc.config import Settings
from agentsvc.db import Database, Tx
from agentsvc.errors import Conflict, Forbidden, NotFound
from agentsvc.ids import new_id, now_iso
from agentsvc.services import audit, changes
from agentsvc.services.audit import Actor
from agentsvc.services.scim import members
from agentsvc.services.scim.resources import (
    GroupChange,
    GroupFields,
    ScimInvalid,
    UserFields,
    display_name_of,
    patched_user,
)
from agentsvc.services.sso.config import domain_of
from agentsvc.services.team.accounts import hash_api_key
from agentsvc.services.team.sessions import normalise_email
from agentsvc.store import accounts, scim
from agentsvc.store.scim import ScimGroup, ScimUser

BASE_PATH = "/api/v1/scim/v2"
TOKEN_PREFIX = "scim_"  # noqa: S105 (how a SCIM token starts, not a secret)
MAX_PAGE = 100  # resources in one list answer
# Plans have no member limit: a team's provider manages at most this many of each.
MAX_USERS = 10_000
MAX_GROUPS = 1_000


@dataclass(frozen=True, slots=True)
class ScimStatus:
    """Whether the team has a token, since when, and the base URL to paste."""

    enabled: bool
    created_at: str | None
    base_url: str


@dataclass(frozen=True, slots=True)
class Caller:
    """A provider calling with a team's token, from an address."""

    team_id: str
    plan: str
    ip: str | None = None

    @property
    def actor(self) -> Actor:
        # No person acts: the log shows the provider's calls as the system's, with the IP.
        return Actor(None, self.team_id, ip=self.ip)


@dataclass(frozen=True, slots=True)
class UserView:
    """A managed person as SCIM shows them (their groups with id and name)."""

    row: ScimUser
    attributes: dict
    groups: list[tuple[str, str]]


@dataclass(frozen=True, slots=True)
class GroupView:
    row: ScimGroup
    members: list[tuple[str, str]]  # (user id, address)


@dataclass(frozen=True, slots=True)
class Page:
    total: int
    start_index: int
    items: list


class ScimService:
    """Provisioning by SCIM 2.0: the token, Users and Groups of a team."""

    def __init__(self, db: Database, settings: Settings):
        self._db = db
        self._settings = settings

    def base_url(self) -> str:
        """The SCIM base URL a provider is given."""
        return self._settings.server.public_url.rstrip("/") + BASE_PATH

    # -- the token ------------------------------------------------------------------------

    async def status(self, team_id: str) -> ScimStatus:
        """Whether provisioning is on for the team, and the base URL (never the token)."""
        created = await scim.get_token_info(self._db.reader, team_id)
        return ScimStatus(created is not None, created, self.base_url())

    async def create_token(self, team_id: str, actor: Actor | None) -> tuple[str, ScimStatus]:
        """A new token, shown this once; an earlier one stops working at once."""
        token = TOKEN_PREFIX + secrets.token_urlsafe(32)
        now = now_iso()
        async with self._db.write() as tx:
            replaced = await scim.get_token_info(tx, team_id) is not None
            await scim.set_token(tx, team_id, hash_api_key(token), now)
            await audit.record_in(
                tx,
                actor,
                "scim.token_created",
                target_type="team",
                target_id=team_id,
                details={"replaced": replaced},
            )
        return token, ScimStatus(True, now, self.base_url())

    async def revoke_token(self, team_id: str, actor: Actor | None) -> None:
        """Stop provisioning: the token no longer works; NotFound without one."""
        async with self._db.write() as tx:
            if not await scim.delete_token(tx, team_id):
                raise NotFound("SCIM provisioning has no token to revoke")
            await audit.record_in(
                tx, actor, "scim.token_revoked", target_type="team", target_id=team_id
            )

    async def caller(self, token: str, ip: str | None) -> Caller | None:
        """The team a token belongs to, or None (tokens are compared by their hash)."""
        if not token.startswith(TOKEN_PREFIX) or len(token) > 200:
            return None
        found = await scim.team_of_token(self._db.reader, hash_api_key(token))
        return Caller(found[0], found[1], ip) if found else None

    # -- Users ----------------------------------------------------------------------------

    async def list_users(
        self, team_id: str, where: tuple[str, str] | None, start: int, count: int
    ) -> Page:
        """One page of the team's managed people, filtered by userName or externalId."""
        email = normalise_email(where[1]) if where and where[0] == "userName" else None
        external = where[1] if where and where[0] == "externalId" else None
        total, rows = await scim.list_users(
            self._db.reader,
            team_id,
            email=email,
            external_id=external,
            offset=start - 1,
            limit=min(count, MAX_PAGE),
        )
        return Page(total, start, [await self._user_view(self._db.reader, r) for r in rows])

    async def get_user(self, team_id: str, user_id: str) -> UserView:
        """A managed person; NotFound for anyone else (another team's too)."""
        row = await scim.get_user(self._db.reader, team_id, user_id)
        if row is None:
            raise NotFound("No provisioned user has this id")
        return await self._user_view(self._db.reader, row)

    async def _user_view(self, tx: Tx, row: ScimUser) -> UserView:
        groups = await scim.groups_of_user(tx, row.team_id, row.user_id)
        return UserView(row, json.loads(row.attributes), groups)

    async def _checked_address(self, tx: Tx, team_id: str, user_name: str) -> str:
        email = normalise_email(user_name)
        domains = await members.team_domains(tx, team_id)
        if "@" not in email or domain_of(email) not in domains:
            listed = ", ".join(domains) or "none yet: set up single sign-on and prove a domain"
            raise ScimInvalid(
                f"userName: {user_name} is not an address at one of the team's verified"
                f" single sign-on domains ({listed})"
            )
        return email

    async def create_user(self, caller: Caller, fields: UserFields) -> UserView:
        """Provision a person: a new account, or the existing one at this address (the
        team's domain vouches for it), made a member; Conflict when already provisioned."""
        team_id = caller.team_id
        async with self._db.write() as tx:
            email = await self._checked_address(tx, team_id, fields.user_name)
            if await scim.count_users(tx, team_id) >= MAX_USERS:
                raise Forbidden(f"A team's provider can provision at most {MAX_USERS} people")
            user = await accounts.get_user_by_email(tx, email)
            now = now_iso()
            if user is None:
                user = await accounts.insert_user(
                    tx,
                    id=new_id("user"),
                    email=email,
                    name=display_name_of(fields),
                    password_hash=None,
                    now=now,
                )
            elif await scim.get_user(tx, team_id, user.id) is not None:
                raise Conflict(f"userName: {email} is already provisioned in this team")
            await scim.insert_user(
                tx, team_id, user.id, fields.external_id, json.dumps(fields.attributes), now
            )
            if fields.active:
                await members.join(tx, team_id, user.id)
            await audit.record_in(
                tx,
                caller.actor,
                "scim.user_created",
                target_type="member",
                target_id=user.id,
                label=email,
                details={"active": fields.active},
            )
            row = await scim.get_user(tx, team_id, user.id)
            assert row is not None
            # A new membership changes no principal a cache holds: nothing to announce.
            return await self._user_view(tx, row)

    async def replace_user(self, caller: Caller, user_id: str, fields: UserFields) -> UserView:
        """Replace a person's attributes (PUT): what is left out is removed."""
        return await self._update_user(caller, user_id, lambda _: fields)

    async def patch_user(self, caller: Caller, user_id: str, body: object) -> UserView:
        """Apply PATCH operations to a person (active, name, displayName, emails...)."""
        return await self._update_user(caller, user_id, lambda now: patched_user(now, body))

    async def _update_user(self, caller: Caller, user_id: str, change) -> UserView:
        team_id = caller.team_id
        async with self._db.write() as tx:
            row = await scim.get_user(tx, team_id, user_id)
            if row is None:
                raise NotFound("No provisioned user has this id")
            current = UserFields(row.email, row.external_id, row.active, json.loads(row.attributes))
            fields: UserFields = change(current)
            if normalise_email(fields.user_name) != row.email:
                raise ScimInvalid(
                    "userName: the address of a provisioned person cannot change; deprovision"
                    " them and provision the new address",
                    "mutability",
                )
            await scim.update_user(
                tx,
                team_id,
                user_id,
                external_id=fields.external_id,
                active=fields.active,
                attributes=json.dumps(fields.attributes),
                now=now_iso(),
            )
            await members.rename(tx, user_id, display_name_of(fields))
            if fields.active != row.active:
                await members.set_active(tx, team_id, row, fields.active, caller.actor)
            updated = await scim.get_user(tx, team_id, user_id)
            assert updated is not None
            view = await self._user_view(tx, updated)
        if fields.active != row.active:
            await self._db.announce(changes.PRINCIPALS)  # every process forgets them
        return view

    async def delete_user(self, caller: Caller, user_id: str) -> None:
        """Deprovision a person: they leave the team and the provider's list."""
        async with self._db.write() as tx:
            row = await scim.get_user(tx, caller.team_id, user_id)
            if row is None:
                raise NotFound("No provisioned user has this id")
            if row.active:
                await members.leave(tx, caller.team_id, row)
            await scim.delete_user(tx, caller.team_id, user_id)
            await audit.record_in(
                tx,
                caller.actor,
                "scim.user_deleted",
                target_type="member",
                target_id=user_id,
                label=row.email,
            )
        await self._db.announce(changes.PRINCIPALS)

    # -- Groups ---------------------------------------------------------------------------

    async def list_groups(self, team_id: str, name: str | None, start: int, count: int) -> Page:
        """One page of the team's groups, filtered by displayName."""
        limit = min(count, MAX_PAGE)
        total, rows = await scim.list_groups(
            self._db.reader, team_id, display_name=name, offset=start - 1, limit=limit
        )
        return Page(total, start, [await self._group_view(self._db.reader, r) for r in rows])

    async def get_group(self, team_id: str, group_id: str) -> GroupView:
        group = await scim.get_group(self._db.reader, team_id, group_id)
        if group is None:
            raise NotFound("No group has this id")
        return await self._group_view(self._db.reader, group)

    async def _group_view(self, tx: Tx, group: ScimGroup) -> GroupView:
        return GroupView(group, await scim.group_member_addresses(tx, group))

    async def create_group(self, caller: Caller, fields: GroupFields) -> GroupView:
        """Create a group (its members get the role its name maps to)."""
        team_id = caller.team_id
        group_id = new_id("scim_group")
        async with self._db.write() as tx:
            if await scim.count_groups(tx, team_id) >= MAX_GROUPS:
                raise Forbidden(f"A team's provider can create at most {MAX_GROUPS} groups")
            now = now_iso()
            if not await scim.insert_group(
                tx, group_id, team_id, fields.display_name, fields.external_id, now
            ):
                raise Conflict(f"displayName: the team already has a group {fields.display_name}")
            change = GroupChange("replace", fields.members or ())
            roles_changed = await members.change_group(tx, team_id, group_id, change, caller.actor)
            group = await scim.get_group(tx, team_id, group_id)
            assert group is not None
            view = await self._group_view(tx, group)
        if roles_changed:
            await self._db.announce(changes.PRINCIPALS)
        return view

    async def replace_group(self, caller: Caller, group_id: str, fields: GroupFields) -> GroupView:
        """Replace a group's name and members (PUT)."""
        change = GroupChange("replace", fields.members or (), fields.display_name, None)
        return await self.patch_group(caller, group_id, [change], external_id=fields.external_id)

    async def patch_group(
        self,
        caller: Caller,
        group_id: str,
        group_changes: list[GroupChange],
        external_id: str | None = None,
    ) -> GroupView:
        """Apply changes to a group: members added, removed or replaced; a new name."""
        team_id = caller.team_id
        async with self._db.write() as tx:
            if await scim.get_group(tx, team_id, group_id) is None:
                raise NotFound("No group has this id")
            roles_changed = False
            for change in group_changes:
                roles_changed |= await members.change_group(
                    tx, team_id, group_id, change, caller.actor, external_id
                )
            group = await scim.get_group(tx, team_id, group_id)
            assert group is not None
            view = await self._group_view(tx, group)
        if roles_changed:
            await self._db.announce(changes.PRINCIPALS)
        return view

    async def delete_group(self, caller: Caller, group_id: str) -> None:
        """Delete a group: its members' roles follow their other groups."""
        async with self._db.write() as tx:
            if await scim.get_group(tx, caller.team_id, group_id) is None:
                raise NotFound("No group has this id")
            former = await scim.delete_group(tx, group_id)
            roles_changed = await members.follow_groups(tx, caller.team_id, former, caller.actor)
        if roles_changed:
            await self._db.announce(changes.PRINCIPALS)
