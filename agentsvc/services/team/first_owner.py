"""First run: create the owner account while the instance has no user at all."""

from __future__ import annotations

from agentsvc.config import Settings
from agentsvc.db import Database
from agentsvc.errors import Forbidden
from agentsvc.passwords import hash_password_async
from agentsvc.services.team import accounts
from agentsvc.services.team.sessions import SignedIn, normalise_email, start_session
from agentsvc.store import accounts as account_store

OWNER_EXISTS = "The owner account already exists; sign in instead"


async def needs_owner(db: Database) -> bool:
    """True while no user exists (a fresh install)."""
    return await account_store.count_users(db.reader) == 0


async def create_owner(
    db: Database, settings: Settings, *, email: str, password: str, name: str
) -> SignedIn:
    """Create the first user with their own team and sign them in; refused once any user exists."""
    if not await needs_owner(db):
        raise Forbidden(OWNER_EXISTS)
    name = accounts.optional_display_name(name)
    password_hash = await hash_password_async(password)
    async with db.write() as tx:
        # Checked again inside the write transaction: two first-run forms cannot both win.
        if await account_store.count_users(tx) > 0:
            raise Forbidden(OWNER_EXISTS)
        user, team = await accounts.create_user_with_team(
            tx,
            email=normalise_email(email),
            name=name,
            password_hash=password_hash,
            plan=settings.plans.default,
        )
        return await start_session(tx, settings, user, team.id)
