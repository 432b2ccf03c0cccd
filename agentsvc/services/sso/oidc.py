"""The OpenID Connect authorization code flow of a team: state, nonce and PKCE S256 out;
the code exchanged, the ID token verified, the person signed in to the team back."""

from __future__ import annotations

import base64
import hashlib
import json
import logging
import secrets
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any
from urllib.parse import quote, urlencode

from agentsvc.db import Database, Tx
from agentsvc.errors import Unauthorized
from agentsvc.ids import iso, new_id, now_iso
from agentsvc.outbound import OutboundClient, OutboundError
from agentsvc.services.sso.config import OidcSettings, domain_of, redirect_uri, role_for
from agentsvc.services.sso.discovery import Discovery, ProviderDirectory, ProviderError
from agentsvc.services.sso.domains import sign_in_refusal
from agentsvc.services.sso.tokens import Identity, TokenRefused, identity_of, verify_id_token
from agentsvc.services.team.sessions import after, hash_token
from agentsvc.store import accounts, sso
from agentsvc.store import team as team_store
from agentsvc.store.accounts import User

log = logging.getLogger(__name__)

STATE_TTL_SECONDS = 600
TOKEN_TIMEOUT_SECONDS = 15.0
FAILED = "Single sign-on failed: {reason}. Start again, or ask your team's owner"


def refused(reason: str) -> Unauthorized:
    """The 401 of a sign-in that cannot go on, saying why."""
    return Unauthorized(FAILED.format(reason=reason))


def challenge(verifier: str) -> str:
    """PKCE S256: the verifier's SHA-256, URL-safe base64 without padding."""
    digest = hashlib.sha256(verifier.encode("ascii")).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")


@dataclass(frozen=True, slots=True)
class Tokens:
    """What the token endpoint answered that a sign-in uses."""

    id_token: str
    access_token: str | None


@dataclass(frozen=True, slots=True)
class Pending:
    """A sign-in under way, read back (once) from its state."""

    team_id: str
    nonce: str
    verifier: str
    callback: str


async def begin(
    db: Database,
    provider: Discovery,
    oidc: OidcSettings,
    public_url: str,
    team_id: str,
    callback: str,
) -> tuple[str, str]:
    """Store a state with its nonce and PKCE verifier; return the authorization address
    and the state (for the browser's cookie)."""
    state, nonce = secrets.token_urlsafe(32), secrets.token_urlsafe(32)
    verifier = secrets.token_urlsafe(64)  # 86 characters, within RFC 7636's 43-128
    now = now_iso()
    expires = after(STATE_TTL_SECONDS, now)
    async with db.write() as tx:
        await sso.insert_state(
            tx,
            state_hash=hash_token(state),
            team_id=team_id,
            nonce=nonce,
            code_verifier=verifier,
            callback_url=callback,
            now=now,
            expires_at=expires,
        )
    query = urlencode(
        {
            "response_type": "code",
            "client_id": oidc.client_id,
            "redirect_uri": redirect_uri(public_url),
            "scope": " ".join(oidc.scopes),
            "state": state,
            "nonce": nonce,
            "code_challenge": challenge(verifier),
            "code_challenge_method": "S256",
        }
    )
    endpoint = provider.authorization_endpoint
    return f"{endpoint}{'&' if '?' in endpoint else '?'}{query}", state


async def take_state(db: Database, state: str, browser_state: str | None) -> Pending:
    """The sign-in of this state, which must be the browser's own and live; used once."""
    if not browser_state or not secrets.compare_digest(browser_state, state):
        raise refused("this browser did not start this sign-in")
    async with db.write() as tx:
        found = await sso.consume_state(tx, hash_token(state), now_iso())
    if found is None:
        raise refused("the sign-in is unknown, used or expired")
    return Pending(*found)


async def exchange_code(
    outbound: OutboundClient,
    provider: Discovery,
    oidc: OidcSettings,
    secret: str,
    public_url: str,
    code: str,
    verifier: str,
) -> Tokens:
    """Exchange the code (with the PKCE verifier) for the ID token (and access token),
    authenticating as the provider asks: HTTP Basic, or the secret in the form."""
    form = {
        "grant_type": "authorization_code",
        "code": code,
        "redirect_uri": redirect_uri(public_url),
        "code_verifier": verifier,
    }
    headers = {"Accept": "application/json", "Content-Type": "application/x-www-form-urlencoded"}
    if provider.auth_method == "client_secret_basic":
        # RFC 6749 2.3.1: each part form-encoded before the Basic encoding.
        pair = f"{quote(oidc.client_id, safe='')}:{quote(secret, safe='')}"
        headers["Authorization"] = "Basic " + base64.b64encode(pair.encode()).decode("ascii")
    else:
        form |= {"client_id": oidc.client_id, "client_secret": secret}
    try:
        response = await outbound.request(
            "POST",
            provider.token_endpoint,
            headers=headers,
            data=urlencode(form),
            timeout=TOKEN_TIMEOUT_SECONDS,
        )
    except OutboundError as exc:
        log.warning("SSO token endpoint: %s", exc.message)
        raise refused("the identity provider could not be reached") from exc
    tokens: Any = None
    if response.ok:
        try:
            tokens = json.loads(response.body)
        except ValueError:
            tokens = None
    id_token = tokens.get("id_token") if isinstance(tokens, dict) else None
    if not isinstance(id_token, str) or not id_token:
        log.warning("SSO token endpoint answered %s without an ID token", response.status)
        raise refused("the identity provider did not accept the sign-in")
    access_token = tokens.get("access_token")
    return Tokens(id_token, access_token if isinstance(access_token, str) else None)


async def verified_identity(
    tokens: Tokens,
    *,
    provider: Discovery,
    directory: ProviderDirectory,
    outbound: OutboundClient,
    oidc: OidcSettings,
    nonce: str,
    domains: tuple[str, ...],
    verified: tuple[str, ...],
) -> Identity:
    """The person the verified ID token names, whose verified address is in the team's
    proven domains; the address (and name and groups) from the userinfo endpoint when the ID
    token carries none, as providers that keep scope claims out of it do."""
    try:
        claims = await verify_id_token(
            tokens.id_token,
            provider=provider,
            directory=directory,
            client_id=oidc.client_id,
            nonce=nonce,
        )
        if "email" not in claims and provider.userinfo_endpoint and tokens.access_token:
            claims = await _with_userinfo(
                outbound, provider.userinfo_endpoint, tokens.access_token, claims, oidc
            )
        person = identity_of(claims, oidc.groups_claim)
    except (TokenRefused, ProviderError) as exc:
        raise refused(str(exc)) from exc
    problem = sign_in_refusal(domain_of(person.email), domains, verified)
    if problem is not None:
        raise refused(problem)
    return person


async def _with_userinfo(
    outbound: OutboundClient, url: str, access_token: str, claims: dict, oidc: OidcSettings
) -> dict:
    """The ID token's claims completed from userinfo, which must be about the same subject
    (OpenID Connect Core 5.3.2); the ID token's own claims win."""
    try:
        response = await outbound.request(
            "GET",
            url,
            headers={"Authorization": f"Bearer {access_token}", "Accept": "application/json"},
            timeout=TOKEN_TIMEOUT_SECONDS,
        )
        info = json.loads(response.body) if response.ok else None
    except (OutboundError, ValueError) as exc:
        raise TokenRefused("the provider's userinfo could not be read") from exc
    if not isinstance(info, dict) or info.get("sub") != claims.get("sub"):
        raise TokenRefused("the provider's userinfo is not about the person signed in")
    wanted = ("email", "email_verified", "name", oidc.groups_claim)
    return {**{k: info[k] for k in wanted if k in info}, **claims}


async def remember_nonce(tx: Tx, team_id: str, nonce: str, expires_at: int) -> None:
    """A nonce is accepted once: a second ID token carrying it is a replay."""
    key = "oidc-nonce:" + hash_token(nonce)
    if not await sso.remember(
        tx, key, team_id, iso(datetime.fromtimestamp(max(expires_at, 0) + 60, UTC))
    ):
        raise refused("this ID token was already used")


async def member_of_team(
    tx: Tx, team_id: str, person: Identity, owner_user_id: str, mapping: dict[str, str]
) -> tuple[User, bool]:
    """The team's member with this address, created on first sign-in, with the role the
    groups give (never the team's founding owner's); return it and whether a role changed.

    An address that already has an account elsewhere but is not in this team is refused:
    the team's provider vouches for the team's people, not for other teams' accounts.
    """
    now = now_iso()
    role = role_for(mapping, person.groups)
    user = await accounts.get_user_by_email(tx, person.email)
    if user is None:
        user = await accounts.insert_user(
            tx,
            id=new_id("user"),
            email=person.email,
            name=person.name,
            password_hash=None,
            now=now,
        )
        await accounts.insert_membership(
            tx,
            id=new_id("membership"),
            team_id=team_id,
            user_id=user.id,
            role=role or "member",
            now=now,
        )
        return user, False
    if not await team_store.is_member(tx, team_id, user.id):
        raise refused(
            "this address already has an account that is not in this team; ask the team's"
            " owner to invite it once"
        )
    if role is None or user.id == owner_user_id:
        return user, False
    return user, await sso.set_role(tx, team_id, user.id, role)
