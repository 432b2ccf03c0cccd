"""Who is calling: API-key and session principals, resolved through a short-lived cache."""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from agentsvc.db import Database
from agentsvc.ids import iso, now_iso, parse_iso
from agentsvc.services.team.accounts import hash_api_key
from agentsvc.store import api_keys, sessions

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
        self._cache: dict[str, tuple[float, Any]] = {}

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

    async def resolve_session(
        self, token: str, ttl_seconds: float
    ) -> tuple[Principal | None, bool]:
        """Return a session token's principal and whether its rolling expiry moved forward.

        The expiry is pushed to `ttl_seconds` from now at most every tenth of the TTL (and
        at least hourly), so a busy session costs a write now and then, not per request.
        """
        token_hash = "s:" + hash_api_key(token)
        now = time.monotonic()
        hit = self._cache.get(token_hash)
        if hit is not None and hit[0] > now:
            # Expiry as an epoch number: no timestamp formatting on the hot path.
            principal, expires_epoch = hit[1]
            if principal is None or expires_epoch > time.time():
                return principal, False
        now_text = now_iso()
        owner = await sessions.get_owner(self._db.reader, token_hash[2:], now_text)
        if owner is None:
            self._remember(token_hash, now, (None, 0.0))
            return None, False
        principal = Principal(
            owner.user_id, owner.team_id, owner.role, owner.plan, session_id=owner.session_id
        )
        expires_at = owner.expires_at
        renewed = parse_iso(now_text) + timedelta(seconds=ttl_seconds)
        step = timedelta(seconds=min(3600.0, ttl_seconds / 10))
        extended = parse_iso(expires_at) < renewed - step
        if extended:
            expires_at = iso(renewed)
            async with self._db.write() as tx:
                await sessions.extend(tx, owner.session_id, expires_at)
        self._remember(token_hash, now, (principal, parse_iso(expires_at).timestamp()))
        return principal, extended

    def _remember(self, cache_key: str, now: float, value) -> None:
        if len(self._cache) >= CACHE_MAX_ENTRIES:
            self._cache.clear()
        self._cache[cache_key] = (now + self._ttl, value)

    def invalidate(self) -> None:
        """Forget every cached key and session (after a revocation, removal, sign-out...)."""
        self._cache.clear()
