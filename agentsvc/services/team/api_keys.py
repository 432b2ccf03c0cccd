"""API key management for the dashboard: list, create (shown once), revoke at once."""

from __future__ import annotations

from agentsvc.db import Database
from agentsvc.errors import Forbidden, NotFound
from agentsvc.ids import now_iso
from agentsvc.services import audit, changes
from agentsvc.services.audit import Actor
from agentsvc.services.team.access import Principal
from agentsvc.services.team.accounts import CreatedKey, create_api_key
from agentsvc.store import api_keys
from agentsvc.store.api_keys import ApiKey


async def list_keys(db: Database, principal: Principal) -> list[ApiKey]:
    """The owner sees every live key of the team; a member sees their own."""
    if principal.is_owner:
        return await api_keys.list_for_team(db.reader, principal.team_id)
    return await api_keys.list_for_user(db.reader, principal.team_id, principal.user_id)


async def create_key(
    db: Database, principal: Principal, name: str, actor: Actor | None = None
) -> CreatedKey:
    """Create a key acting for the caller in the caller's team, with the caller's role."""
    async with db.write() as tx:
        created = await create_api_key(
            tx, team_id=principal.team_id, user_id=principal.user_id, name=name
        )
        await audit.record_in(
            tx,
            actor,
            "api_key.created",
            target_type="api_key",
            target_id=created.id,
            label=name or f"{created.prefix}…{created.last4}",
        )
    return created


async def revoke_key(
    db: Database, principal: Principal, key_id: str, actor: Actor | None = None
) -> None:
    """Revoke a key so that it stops working at once; members revoke only their own."""
    async with db.write() as tx:
        key = await api_keys.get(tx, principal.team_id, key_id)
        if key is None:
            raise NotFound("API key not found")
        if key.user_id != principal.user_id and not principal.is_owner:
            raise Forbidden("Only the team owner can revoke another member's key")
        await api_keys.revoke(tx, principal.team_id, key_id, now_iso())
        await audit.record_in(
            tx,
            actor,
            "api_key.revoked",
            target_type="api_key",
            target_id=key_id,
            label=key.name or f"{key.prefix}…{key.last4}",
        )
    await db.announce(changes.PRINCIPALS)
