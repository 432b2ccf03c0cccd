"""Signed widget identity: an agent's secret and the checks of `userToken` and `userHash`.

A site that knows the secret either signs the whole user as an HS256 JWT (`userToken`:
`sub`, `email`, `name`, `exp`) or only the id (`userHash = hex(HMAC-SHA256(secret, id))`).
A valid token vouches for every field it carries; a hash vouches for the id alone, so the
e-mail and name beside it are recorded as unverified. A token or hash that does not check
out makes the caller anonymous, so nobody can pose as another end user by editing the
configuration. Without a secret, declared users are taken as given (and unverified).
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import math
import secrets
import time
from dataclasses import dataclass
from typing import Any

import jwt

from agentsvc.db import Database
from agentsvc.errors import NotFound, ValidationFailed
from agentsvc.ids import now_iso
from agentsvc.secretbox import SecretBox, SecretBoxError
from agentsvc.services import changes
from agentsvc.store import agents as agents_store
from agentsvc.store import identity as identity_store

log = logging.getLogger(__name__)

MIN_SECRET_LENGTH = 16
MAX_SECRET_LENGTH = 200
# A userToken longer than this is refused before it is decoded (a JWT of a user is < 1 KB).
MAX_TOKEN_LENGTH = 4096
# Tolerated clock difference between the site that signs and this server.
TOKEN_LEEWAY_SECONDS = 30
# `[identity] max_token_lifetime_hours`: how far away a token's exp may be.
DEFAULT_MAX_TOKEN_LIFETIME_HOURS = 24
# Bounds of the signed claims, as for the `user` of a /chat body.
_CLAIM_LENGTHS = {"sub": 200, "email": 320, "name": 200}

# How the user recorded on a conversation was vouched for (None: declared, unchecked).
BY_TOKEN = "userToken"  # noqa: S105 (a label): every field, signed by the site
BY_HASH = "userHash"  # the id only; e-mail and name as declared
BY_API_KEY = "apiKey"  # declared by a caller holding the team's key or session


def profile_verified(verified_by: str | None) -> bool:
    """Whether a user's e-mail and name (not only the id) were vouched for."""
    return verified_by in (BY_TOKEN, BY_API_KEY)


def _context(agent_id: str) -> str:
    return f"identity:{agent_id}"


def user_hash(secret: str, user_id: str) -> str:
    """The expected `userHash` of a user id: hex HMAC-SHA256 keyed with the secret."""
    return hmac.new(secret.encode("utf-8"), user_id.encode("utf-8"), hashlib.sha256).hexdigest()


async def set_secret(
    db: Database, box: SecretBox, team_id: str, agent_id: str, secret: str | None
) -> str:
    """Set the agent's identity secret (generated when None) and return it."""
    if secret is None:
        secret = secrets.token_urlsafe(32)
    elif not MIN_SECRET_LENGTH <= len(secret) <= MAX_SECRET_LENGTH:
        raise ValidationFailed(
            f"secret: must be {MIN_SECRET_LENGTH} to {MAX_SECRET_LENGTH} characters"
        )
    sealed = box.seal(secret, _context(agent_id))
    async with db.write() as tx:
        if not await identity_store.set_sealed(tx, team_id, agent_id, sealed, now_iso()):
            raise NotFound("Agent not found")
    await db.announce(changes.agent(agent_id))  # its updatedAt moved
    return secret


async def clear_secret(db: Database, team_id: str, agent_id: str) -> None:
    """Remove the agent's identity secret: declared users are then taken as given."""
    async with db.write() as tx:
        if not await identity_store.set_sealed(tx, team_id, agent_id, None, now_iso()):
            raise NotFound("Agent not found")
    await db.announce(changes.agent(agent_id))


async def has_secret(db: Database, team_id: str, agent_id: str) -> bool:
    """Return whether the team's agent has an identity secret (NotFound when absent)."""
    if await agents_store.get(db.reader, team_id, agent_id) is None:
        raise NotFound("Agent not found")
    return await identity_store.get_sealed(db.reader, agent_id) is not None


def _exp_problem(exp: Any, max_lifetime_seconds: float) -> str | None:
    """Why a token's `exp` claim is refused, or None: it must be a JSON number (not a
    string, not a boolean), not past (beyond the leeway), and at most the configured
    lifetime away."""
    if isinstance(exp, bool) or not isinstance(exp, int | float) or not math.isfinite(exp):
        return "exp is not a number"
    now = time.time()
    if exp < now - TOKEN_LEEWAY_SECONDS:
        return "expired"
    if exp > now + max_lifetime_seconds + TOKEN_LEEWAY_SECONDS:
        hours = max_lifetime_seconds / 3600
        return (
            f"exp is more than {hours:g} hours away"
            " ([identity] max_token_lifetime_hours); sign tokens with a shorter lifetime"
        )
    return None


def user_from_token(
    secret: str,
    token: str,
    agent_id: str,
    max_lifetime_seconds: float = DEFAULT_MAX_TOKEN_LIFETIME_HOURS * 3600,
) -> dict[str, Any] | None:
    """Return the user a `userToken` signs (id, email, name), or None when it is not valid.

    Only HS256 with the agent's secret is accepted (never `none` or another algorithm);
    `sub` and `exp` are required, `exp` a number at most `max_lifetime_seconds` away; an
    `aud`, when present, must name the agent.
    """
    if len(token) > MAX_TOKEN_LENGTH:
        log.debug("userToken for %s refused: longer than %d", agent_id, MAX_TOKEN_LENGTH)
        return None
    try:
        claims = jwt.decode(
            token,
            secret,
            algorithms=["HS256"],
            leeway=TOKEN_LEEWAY_SECONDS,
            options={
                "require": ["sub", "exp"],
                # Checked below: PyJWT takes a numeric string ("99999999999") for a number.
                "verify_exp": False,
                "verify_aud": False,  # checked below: the agent id, when present
                # RFC 7518: an HS256 key has at least 256 bits; shorter secrets sign no token.
                "enforce_minimum_key_length": True,
            },
        )
    except jwt.PyJWTError as exc:
        log.debug("userToken for %s refused: %s", agent_id, exc)
        return None
    problem = _exp_problem(claims.get("exp"), max_lifetime_seconds)
    if problem is not None:
        log.debug("userToken for %s refused: %s", agent_id, problem)
        return None
    aud = claims.get("aud")
    if aud is not None and agent_id not in (aud if isinstance(aud, list) else [aud]):
        log.debug("userToken for %s refused: aud names another agent", agent_id)
        return None
    for name, limit in _CLAIM_LENGTHS.items():
        value = claims.get(name)
        if value is None and name != "sub":
            continue
        if not isinstance(value, str) or not value or len(value) > limit:
            log.debug("userToken for %s refused: bad %s claim", agent_id, name)
            return None
    return {
        "id": claims["sub"],
        "email": claims.get("email"),
        "name": claims.get("name"),
        "verified_by": BY_TOKEN,
    }


def _open_secret(box: SecretBox, agent_id: str, sealed: str) -> str | None:
    """The agent's identity secret in clear, or None when this key cannot open it."""
    try:
        return box.open(sealed, _context(agent_id))
    except SecretBoxError:
        log.warning("identity secret of %s cannot be decrypted with this key", agent_id)
        return None


@dataclass(frozen=True, slots=True)
class EndUserClaim:
    """Who a chat's caller says its end user is, and what vouches for it."""

    user: dict[str, Any] | None  # the declared user: id, email, name
    given_hash: str | None  # `userHash`
    token: str | None  # `userToken`
    trusted: bool  # the caller holds the team's key or session


async def verify_end_user(
    db: Database,
    box: SecretBox,
    agent_id: str,
    claim: EndUserClaim,
    max_token_lifetime_hours: float = DEFAULT_MAX_TOKEN_LIFETIME_HOURS,
) -> dict[str, Any] | None:
    """Return the end user to record on a chat (with `verified_by`), or None (anonymous).

    A `token` decides alone: the user it signs, or anonymous when it does not verify, its
    `exp` is further than `max_token_lifetime_hours` away (or the agent has no secret).
    Otherwise a `trusted` caller (the team's key or session) is taken at its word; a public
    caller's user stands as declared when the agent has no secret, and with a secret only
    when `given_hash` is the HMAC of its id.
    """
    user, given_hash, token = claim.user, claim.given_hash, claim.token
    if token is not None:
        sealed = await identity_store.get_sealed(db.reader, agent_id)
        secret = None if sealed is None else _open_secret(box, agent_id, sealed)
        if secret is None:
            return None
        return user_from_token(secret, token, agent_id, max_token_lifetime_hours * 3600)
    if user is None:
        return None
    if claim.trusted:
        return {**user, "verified_by": BY_API_KEY}
    sealed = await identity_store.get_sealed(db.reader, agent_id)
    if sealed is None:
        return {**user, "verified_by": None}
    secret = _open_secret(box, agent_id, sealed)
    if secret is None:
        return None  # a secret we cannot read cannot vouch for anyone
    user_id = user.get("id")
    if not user_id or not given_hash:
        return None
    if not hmac.compare_digest(user_hash(secret, user_id), given_hash.strip().lower()):
        return None
    return {**user, "verified_by": BY_HASH}
