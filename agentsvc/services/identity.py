"""Signed widget identity: an agent's secret and the check of `userHash` on public chat.

A site that knows the secret computes `userHash = hex(HMAC-SHA256(secret, userId))` on its
server and puts it in the widget configuration. When the agent has a secret, a user whose
hash is missing or wrong is treated as anonymous, so nobody can pose as another end user by
editing the configuration. Without a secret, declared users are taken as given.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from typing import Any

from agentsvc.db import Database
from agentsvc.errors import NotFound, ValidationFailed
from agentsvc.ids import now_iso
from agentsvc.secretbox import SecretBox, SecretBoxError
from agentsvc.services.agents import AgentCache
from agentsvc.store import agents as agents_store
from agentsvc.store import identity as identity_store

MIN_SECRET_LENGTH = 16
MAX_SECRET_LENGTH = 200


def _context(agent_id: str) -> str:
    return f"identity:{agent_id}"


def user_hash(secret: str, user_id: str) -> str:
    """The expected `userHash` of a user id: hex HMAC-SHA256 keyed with the secret."""
    return hmac.new(secret.encode("utf-8"), user_id.encode("utf-8"), hashlib.sha256).hexdigest()


async def set_secret(
    db: Database,
    cache: AgentCache,
    box: SecretBox,
    team_id: str,
    agent_id: str,
    secret: str | None,
) -> str:
    """Set the agent's identity secret (generated when None) and return it."""
    if secret is None:
        secret = secrets.token_urlsafe(32)
    elif not MIN_SECRET_LENGTH <= len(secret) <= MAX_SECRET_LENGTH:
        raise ValidationFailed(
            f"secret: must be {MIN_SECRET_LENGTH} to {MAX_SECRET_LENGTH} characters"
        )
    sealed = box.seal(secret, _context(agent_id))
    async with db.write() as conn:
        if not await identity_store.set_sealed(conn, team_id, agent_id, sealed, now_iso()):
            raise NotFound("Agent not found")
    cache.forget(agent_id)  # its updatedAt moved
    return secret


async def clear_secret(db: Database, cache: AgentCache, team_id: str, agent_id: str) -> None:
    """Remove the agent's identity secret: declared users are then taken as given."""
    async with db.write() as conn:
        if not await identity_store.set_sealed(conn, team_id, agent_id, None, now_iso()):
            raise NotFound("Agent not found")
    cache.forget(agent_id)


async def has_secret(db: Database, team_id: str, agent_id: str) -> bool:
    """Return whether the team's agent has an identity secret (NotFound when absent)."""
    if await agents_store.get(db.reader, team_id, agent_id) is None:
        raise NotFound("Agent not found")
    return await identity_store.get_sealed(db.reader, agent_id) is not None


async def verify_user_hash(
    db: Database,
    box: SecretBox,
    agent_id: str,
    user: dict[str, Any] | None,
    given_hash: str | None,
) -> dict[str, Any] | None:
    """Return the user to record on a public chat: as declared, or None (anonymous).

    With no secret on the agent the declared user stands. With a secret, the user stands
    only when it has an id and `given_hash` is its HMAC; otherwise the caller is anonymous.
    """
    if user is None:
        return None
    sealed = await identity_store.get_sealed(db.reader, agent_id)
    if sealed is None:
        return user
    try:
        secret = box.open(sealed, _context(agent_id))
    except SecretBoxError:
        return None  # a secret we cannot read cannot vouch for anyone
    user_id = user.get("id")
    if not user_id or not given_hash:
        return None
    if not hmac.compare_digest(user_hash(secret, user_id), given_hash.strip().lower()):
        return None
    return user
