"""Users, their own teams, and API keys."""

from __future__ import annotations

import hashlib
import secrets
import unicodedata
from dataclasses import dataclass

from agentsvc.db import Database, Tx
from agentsvc.errors import Conflict, ValidationFailed
from agentsvc.ids import new_id, now_iso
from agentsvc.input_types import MAX_DISPLAY_NAME
from agentsvc.services import changes
from agentsvc.store import accounts, api_keys
from agentsvc.store.accounts import Team, User

API_KEY_PREFIX = "asvc_"


def display_name(raw: str, field: str = "name") -> str:
    """A member's display name, trimmed: 1 to 80 characters, no control characters (it
    is what visitors see of the member, in the widget and in e-mailed replies)."""
    name = raw.strip()
    if not name:
        raise ValidationFailed(f"{field}: must not be empty")
    if len(name) > MAX_DISPLAY_NAME:
        raise ValidationFailed(f"{field}: must be at most {MAX_DISPLAY_NAME} characters")
    if any(unicodedata.category(c) in ("Cc", "Zl", "Zp") for c in name):
        raise ValidationFailed(f"{field}: must not contain control characters or line breaks")
    return name


def optional_display_name(raw: str | None, field: str = "name") -> str:
    """A display name given at sign-up (setup, accepting an invitation): blank is none."""
    return display_name(raw, field) if raw and raw.strip() else ""


def hash_api_key(key: str) -> str:
    """Return the SHA-256 hex digest under which a key is stored."""
    return hashlib.sha256(key.encode()).hexdigest()


def generate_api_key() -> str:
    """Return a new key: a recognisable prefix and 256 random bits."""
    return API_KEY_PREFIX + secrets.token_urlsafe(32)


@dataclass(frozen=True, slots=True)
class CreatedKey:
    id: str
    key: str
    name: str
    prefix: str
    last4: str
    created_at: str


# What an unnamed user's own team is called: no part of the address, which visitors
# would see in place of the member's name (a local part such as "john.smith" gives the
# address away on the company's own domain).
UNNAMED_TEAM = "Support"


def team_name_for(name: str) -> str:
    """A new user's own team: "NAME's team", or "Support" for a user with no name."""
    return f"{name.strip()}'s team" if name.strip() else UNNAMED_TEAM


async def create_user_with_team(
    tx: Tx, *, email: str, name: str, password_hash: str | None, plan: str
) -> tuple[User, Team]:
    """Create a user and the user's own team (as owner) inside a write transaction."""
    now = now_iso()
    user = await accounts.insert_user(
        tx, id=new_id("user"), email=email, name=name, password_hash=password_hash, now=now
    )
    team_name = team_name_for(name)
    team = await accounts.insert_team(
        tx, id=new_id("team"), name=team_name, owner_user_id=user.id, plan=plan, now=now
    )
    await accounts.insert_membership(
        tx, id=new_id("membership"), team_id=team.id, user_id=user.id, role="owner", now=now
    )
    return user, team


async def ensure_user_with_team(
    db: Database, *, email: str, name: str, plan: str
) -> tuple[User, Team]:
    """Return the user with this e-mail and the team it owns, creating either when missing."""
    async with db.write() as tx:
        user = await accounts.get_user_by_email(tx, email)
        if user is None:
            return await create_user_with_team(
                tx, email=email, name=name, password_hash=None, plan=plan
            )
        team = await accounts.get_owned_team(tx, user.id)
        if team is None:
            now = now_iso()
            team = await accounts.insert_team(
                tx,
                id=new_id("team"),
                name=team_name_for(user.name),
                owner_user_id=user.id,
                plan=plan,
                now=now,
            )
            await accounts.insert_membership(
                tx,
                id=new_id("membership"),
                team_id=team.id,
                user_id=user.id,
                role="owner",
                now=now,
            )
        return user, team


async def create_api_key(tx: Tx, *, team_id: str, user_id: str, name: str) -> CreatedKey:
    """Create a key for a user acting in a team; the clear key is returned only here."""
    key = generate_api_key()
    created = CreatedKey(
        id=new_id("api_key"),
        key=key,
        name=name,
        prefix=key[: len(API_KEY_PREFIX) + 4],
        last4=key[-4:],
        created_at=now_iso(),
    )
    await api_keys.insert(
        tx,
        id=created.id,
        team_id=team_id,
        user_id=user_id,
        name=name,
        key_hash=hash_api_key(key),
        prefix=created.prefix,
        last4=created.last4,
        now=created.created_at,
    )
    return created


async def user_by_email(db: Database, email: str) -> User | None:
    """The user with this (normalised) e-mail address, if any."""
    return await accounts.get_user_by_email(db.reader, email)


async def create_user(
    db: Database, *, email: str, name: str, password_hash: str, plan: str
) -> User:
    """Create a user with a password and its own team; Conflict when the e-mail is taken."""
    async with db.write() as tx:
        if await accounts.get_user_by_email(tx, email):
            raise Conflict(f"a user with e-mail {email} already exists")
        user, _ = await create_user_with_team(
            tx, email=email, name=name, password_hash=password_hash, plan=plan
        )
        return user


async def create_key_for(db: Database, *, team_id: str, user_id: str, name: str) -> CreatedKey:
    """`create_api_key` in a transaction of its own."""
    async with db.write() as tx:
        return await create_api_key(tx, team_id=team_id, user_id=user_id, name=name)


async def set_team_plan(db: Database, *, email: str, plan: str) -> Team:
    """Set the plan of the team the user owns; raise LookupError when there is none."""
    async with db.write() as tx:
        user = await accounts.get_user_by_email(tx, email)
        team = await accounts.get_owned_team(tx, user.id) if user else None
        if team is None:
            raise LookupError(f"no team owned by {email}")
        await accounts.set_plan(tx, team.id, plan, now_iso())
    await db.announce(changes.PRINCIPALS)  # limits are read with the caller's key
    return team


async def set_password(db: Database, *, email: str, password_hash: str) -> User:
    """Set or replace a user's password; raise LookupError when there is no such user."""
    async with db.write() as tx:
        user = await accounts.get_user_by_email(tx, email)
        if user is None:
            raise LookupError(f"no user with e-mail {email}")
        await accounts.set_password(tx, user.id, password_hash, now_iso())
        return user
