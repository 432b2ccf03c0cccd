"""Who is calling: API-key principals, resolved through a short-lived cache."""

from __future__ import annotations

import time
from dataclasses import dataclass

from agentsvc.db import Database
from agentsvc.services.accounts import hash_api_key
from agentsvc.store import api_keys

# Plan and key changes made by another process (the CLI) must apply within 5 seconds.
CACHE_TTL_SECONDS = 2.0
CACHE_MAX_ENTRIES = 10_000


@dataclass(frozen=True, slots=True)
class Principal:
    """The authenticated caller: a user acting in a team with a role."""

    user_id: str
    team_id: str
    role: str
    plan: str
    key_id: str | None = None  # set when authenticated by API key
    session_id: str | None = None  # set when authenticated by cookie session

    @property
    def is_owner(self) -> bool:
        return self.role == "owner"


class KeyResolver:
    """Resolve bearer keys to principals with one query, cached for a couple of seconds."""

    def __init__(self, db: Database, ttl: float = CACHE_TTL_SECONDS):
        self._db = db
        self._ttl = ttl
        self._cache: dict[str, tuple[float, Principal | None]] = {}

    async def resolve(self, key: str) -> Principal | None:
        """Return the key's principal, or None for an unknown or revoked key."""
        key_hash = hash_api_key(key)
        now = time.monotonic()
        hit = self._cache.get(key_hash)
        if hit is not None and hit[0] > now:
            return hit[1]
        owner = await api_keys.get_owner(self._db.reader, key_hash)
        principal = (
            Principal(owner.user_id, owner.team_id, owner.role, owner.plan, key_id=owner.key_id)
            if owner
            else None
        )
        if len(self._cache) >= CACHE_MAX_ENTRIES:
            self._cache.clear()
        self._cache[key_hash] = (now + self._ttl, principal)
        return principal

    def invalidate(self) -> None:
        """Forget every cached key (after a revocation, removal or plan change)."""
        self._cache.clear()
