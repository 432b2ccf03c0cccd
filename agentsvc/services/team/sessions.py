"""Sign-in sessions: passwords, sign-out, magic links, team switching."""

from __future__ import annotations

import hashlib
import logging
import secrets
from dataclasses import dataclass
from datetime import timedelta

from agentsvc.config import Settings
from agentsvc.db import Database
from agentsvc.errors import Forbidden, NotFound, Unauthorized, ValidationFailed
from agentsvc.ids import iso, new_id, now_iso, parse_iso
from agentsvc.mail import Mailer
from agentsvc.passwords import MIN_PASSWORD_LENGTH, hash_password_async, verify_password_async
from agentsvc.services import changes
from agentsvc.services.team.access import Principal
from agentsvc.services.team.accounts import team_name_for
from agentsvc.services.team.trust import UntrustedUrl, safe_callback
from agentsvc.store import accounts, sessions, sign_in, sso
from agentsvc.store import team as team_store
from agentsvc.store.accounts import User

log = logging.getLogger(__name__)

SESSION_COOKIE = "agentsvc_session"
MAGIC_LINK_PATH = "/api/v1/auth/magic-link/verify"
BAD_CREDENTIALS = "Invalid email or password"
SSO_ENFORCED = (
    "Addresses at {domain} sign in with their team's single sign-on: choose"
    ' "Continue with SSO" on the sign-in page'
)


def new_token() -> str:
    """A fresh secret for a cookie or a link: 256 random bits, URL-safe."""
    return secrets.token_urlsafe(32)


def hash_token(token: str) -> str:
    """The SHA-256 hex digest under which a secret token is stored."""
    return hashlib.sha256(token.encode()).hexdigest()


def normalise_email(email: str) -> str:
    """Trim and lower-case an address (addresses are compared case-insensitively)."""
    return email.strip().lower()


def after(seconds: float, start: str | None = None) -> str:
    """The timestamp `seconds` after `start` (default now)."""
    return iso(parse_iso(start or now_iso()) + timedelta(seconds=seconds))


@dataclass(frozen=True, slots=True)
class SignedIn:
    """A new session: its user, the clear token for the cookie, and the team it acts in."""

    user: User
    token: str
    team_id: str


async def start_session(tx, settings: Settings, user: User, team_id: str | None = None) -> SignedIn:
    """Create a session inside a write transaction (team: given, or the latest joined)."""
    team_id = team_id or await team_store.latest_team_of_user(tx, user.id)
    if team_id is None:
        # A user who belongs to no team at all (every membership removed) gets a new one.
        now = now_iso()
        team = await accounts.insert_team(
            tx,
            id=new_id("team"),
            name=team_name_for(user.name),
            owner_user_id=user.id,
            plan=settings.plans.default,
            now=now,
        )
        await accounts.insert_membership(
            tx, id=new_id("membership"), team_id=team.id, user_id=user.id, role="owner", now=now
        )
        team_id = team.id
    token = new_token()
    now = now_iso()
    await sessions.insert(
        tx,
        id=new_id("session"),
        token_hash=hash_token(token),
        user_id=user.id,
        team_id=team_id,
        now=now,
        expires_at=after(settings.auth.session_ttl_seconds, now),
    )
    return SignedIn(user, token, team_id)


async def refuse_if_sso_enforced(db: Database, email: str) -> None:
    """Forbidden when the address's domain belongs to a team that enforces single sign-on
    (only the domain decides, which `GET /auth/sso` tells anyone: no account is revealed)."""
    domain = normalise_email(email).rpartition("@")[2]
    found = await sso.team_for_domain(db.reader, domain)
    if found is not None and found[2]:
        raise Forbidden(SSO_ENFORCED.format(domain=domain))


async def sign_in_with_password(
    db: Database, settings: Settings, email: str, password: str
) -> SignedIn:
    """Check e-mail and password; unknown address and wrong password fail alike. Refused
    for the domains of a team that enforces single sign-on."""
    await refuse_if_sso_enforced(db, email)
    user = await accounts.get_user_by_email(db.reader, normalise_email(email))
    # Always one argon2 verification, so an unknown address takes as long as a wrong password.
    ok = await verify_password_async(user.password_hash if user else None, password)
    if user is None or not ok:
        raise Unauthorized(BAD_CREDENTIALS)
    async with db.write() as tx:
        return await start_session(tx, settings, user)


async def sign_out(db: Database, token: str) -> None:
    """End the session of this token (nothing happens for an unknown token)."""
    async with db.write() as tx:
        await sessions.delete_by_hash(tx, hash_token(token))
    await db.announce(changes.PRINCIPALS)


async def change_password(
    db: Database, principal: Principal, current: str | None, new: str
) -> None:
    """Set or change the signed-in user's password (the current one is required when one
    is set); every other session of the user ends."""
    assert principal.session_id is not None
    user = await accounts.get_user(db.reader, principal.user_id)
    assert user is not None
    if user.password_hash is not None:
        if not current:
            raise ValidationFailed("currentPassword: give your current password")
        if not await verify_password_async(user.password_hash, current):
            raise Forbidden("currentPassword: that is not your current password")
    if len(new) < MIN_PASSWORD_LENGTH:
        raise ValidationFailed(f"newPassword: at least {MIN_PASSWORD_LENGTH} characters")
    if new.strip().lower() == user.email.lower():
        raise ValidationFailed("newPassword: must not be your e-mail address")
    password_hash = await hash_password_async(new)
    async with db.write() as tx:
        await accounts.set_password(tx, user.id, password_hash, now_iso())
        await sessions.delete_others_of_user(tx, user.id, principal.session_id)
    await db.announce(changes.PRINCIPALS)


async def request_magic_link(
    db: Database, mailer: Mailer, settings: Settings, email: str, callback_url: str
) -> None:
    """E-mail a single-use sign-in link when the address has an account; answer alike if not.
    Refused for the domains of a team that enforces single sign-on (`agentsvc login-link`
    on the server still makes a link: the owner's way in)."""
    callback = _checked_callback(settings, callback_url)
    await refuse_if_sso_enforced(db, email)
    user = await accounts.get_user_by_email(db.reader, normalise_email(email))
    if user is None:
        log.info("magic link asked for an address without an account")
        return
    link = await create_magic_link(db, settings, user, callback)
    ttl = settings.auth.magic_link_ttl_seconds
    minutes = max(1, round(ttl / 60))
    mailer.send_soon(
        user.email,
        "Your sign-in link",
        f"Open this link to sign in to agentsvc:\n\n{link}\n\n"
        f"It works once, within {minutes} minutes. If you did not ask for it, ignore this "
        "message.\n",
    )


def _checked_callback(settings: Settings, callback_url: str) -> str:
    try:
        return safe_callback(settings, callback_url)
    except UntrustedUrl as exc:
        raise ValidationFailed(f"callbackUrl: {exc}") from exc


async def create_magic_link(db: Database, settings: Settings, user: User, callback_url: str) -> str:
    """Store a single-use sign-in link for a user (hashed) and return it; nothing is sent.

    The e-mailed links and `agentsvc login-link` (which prints it for the owner) both
    come from here.
    """
    callback = _checked_callback(settings, callback_url)
    token = new_token()
    now = now_iso()
    async with db.write() as tx:
        await sign_in.insert_magic_link(
            tx,
            token_hash=hash_token(token),
            user_id=user.id,
            callback_url=callback,
            now=now,
            expires_at=after(settings.auth.magic_link_ttl_seconds, now),
        )
    return f"{settings.server.public_url.rstrip('/')}{MAGIC_LINK_PATH}?token={token}"


async def use_magic_link(db: Database, settings: Settings, token: str) -> tuple[SignedIn, str]:
    """Consume a magic link (once, atomically) and start a session; return it and the callback."""
    async with db.write() as tx:
        found = await sign_in.consume_magic_link(tx, hash_token(token), now_iso())
        if found is None:
            raise Unauthorized("This sign-in link is invalid, used or expired")
        user_id, callback = found
        try:
            # Checked again on use: the trusted origins may have changed since.
            callback = safe_callback(settings, callback)
        except UntrustedUrl as exc:
            raise Unauthorized("This sign-in link's callback is no longer trusted") from exc
        user = await accounts.get_user(tx, user_id)
        assert user is not None  # magic links cascade with their user
        signed_in = await start_session(tx, settings, user)
    return signed_in, callback


async def session_info(db: Database, principal: Principal) -> dict:
    """The signed-in user, the team acted in with its role, and every team of the user."""
    user = await accounts.get_user(db.reader, principal.user_id)
    team = await accounts.get_team(db.reader, principal.team_id)
    if user is None or team is None:
        raise Unauthorized()
    teams = await team_store.teams_of_user(db.reader, user.id)
    return {
        "user": {"id": user.id, "email": user.email, "name": user.name},
        "team": {"id": team.id, "name": team.name, "role": principal.role, "plan": team.plan},
        "teams": [{"id": t[0], "name": t[1], "role": t[2]} for t in teams],
        "authenticatedBy": "session" if principal.session_id else "apiKey",
    }


async def switch_team(db: Database, principal: Principal, team_id: str) -> Principal:
    """Make the caller's session act in another team the user belongs to; return its principal."""
    assert principal.session_id is not None
    async with db.write() as tx:
        role = await accounts.get_role(tx, team_id, principal.user_id)
        team = await accounts.get_team(tx, team_id)
        if role is None or team is None:
            raise NotFound("Team not found")
        await sessions.set_team(tx, principal.session_id, team_id)
    await db.announce(changes.PRINCIPALS)
    return Principal(principal.user_id, team_id, role, team.plan, session_id=principal.session_id)


async def prune(db: Database) -> None:
    """Delete expired sessions, magic links, OAuth and SSO states (a periodic job)."""
    now = now_iso()
    async with db.write() as tx:
        await sessions.delete_expired(tx, now)
        await sign_in.delete_expired(tx, now)
        await sso.delete_expired(tx, now)
