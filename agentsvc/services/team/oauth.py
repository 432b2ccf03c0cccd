"""Sign-in through GitHub or Google: authorization code flow with state and PKCE."""

from __future__ import annotations

import base64
import hashlib
import logging
import secrets
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

import aiohttp

from agentsvc.config import OAuthProviderSettings, Settings
from agentsvc.db import Database
from agentsvc.errors import NotFound, Unauthorized, ValidationFailed
from agentsvc.ids import now_iso
from agentsvc.services.team import membership
from agentsvc.services.team.accounts import create_user_with_team
from agentsvc.services.team.sessions import (
    SignedIn,
    after,
    hash_token,
    normalise_email,
    start_session,
)
from agentsvc.services.team.trust import UntrustedUrl, safe_callback
from agentsvc.store import accounts, sign_in

log = logging.getLogger(__name__)

PROVIDERS = ("github", "google")
STATE_TTL_SECONDS = 600
CALLBACK_PATH = "/api/v1/auth/callback/{provider}"
HTTP_TIMEOUT = aiohttp.ClientTimeout(total=15)
FAILED = "Sign-in with {provider} failed"


@dataclass(frozen=True, slots=True)
class Started:
    """Where to send the browser, and the state to bind to it in a cookie."""

    authorize_url: str
    state: str


def provider_settings(settings: Settings, provider: str) -> OAuthProviderSettings:
    """The provider's settings; NotFound for an unknown or unconfigured provider."""
    if provider not in PROVIDERS:
        raise NotFound("No such sign-in provider")
    config: OAuthProviderSettings = getattr(settings.oauth, provider)
    if not config.client_id:
        raise NotFound(f"Sign-in with {provider} is not configured")
    return config


def configured_providers(settings: Settings) -> list[str]:
    """The providers with credentials, in a stable order."""
    return [p for p in PROVIDERS if getattr(settings.oauth, p).client_id]


def redirect_uri(settings: Settings, provider: str) -> str:
    """The callback address registered with the provider."""
    return settings.server.public_url.rstrip("/") + CALLBACK_PATH.format(provider=provider)


def _challenge(verifier: str) -> str:
    digest = hashlib.sha256(verifier.encode("ascii")).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")


async def _json(response: aiohttp.ClientResponse, provider: str) -> Any:
    if response.status != 200:
        log.warning("%s answered %s at %s", provider, response.status, response.url)
        raise Unauthorized(FAILED.format(provider=provider))
    try:
        return await response.json(content_type=None)
    except ValueError as exc:
        raise Unauthorized(FAILED.format(provider=provider)) from exc


async def _verified_email(
    http: aiohttp.ClientSession, config: OAuthProviderSettings, provider: str, token: str
) -> tuple[str | None, str]:
    """Return the account's verified e-mail address (None if it has none) and its name."""
    headers = {"Authorization": f"Bearer {token}", "Accept": "application/json"}
    async with http.get(config.userinfo_url, headers=headers) as response:
        profile = await _json(response, provider)
    if not isinstance(profile, dict):
        raise Unauthorized(FAILED.format(provider=provider))
    name = str(profile.get("name") or profile.get("login") or "")[:200]
    if provider == "google":
        verified = profile.get("email_verified") is True
        email = profile.get("email") if verified else None
        return (email if isinstance(email, str) else None), name
    # GitHub's profile e-mail is whatever the user made public, verified or not: ask the
    # e-mails endpoint for the primary verified address instead.
    if not config.emails_url:
        return None, name
    async with http.get(config.emails_url, headers=headers) as response:
        emails = await _json(response, provider)
    candidates = [
        e
        for e in (emails if isinstance(emails, list) else [])
        if isinstance(e, dict) and e.get("verified") is True and isinstance(e.get("email"), str)
    ]
    candidates.sort(key=lambda e: e.get("primary") is not True)
    return (candidates[0]["email"] if candidates else None), name


class OAuthSignIn:
    """The authorization code flow with its collaborators: the database (states, users,
    sessions), the HTTP client that talks to the providers, and the settings."""

    def __init__(self, db: Database, http: aiohttp.ClientSession, settings: Settings):
        self._db = db
        self._http = http
        self._settings = settings

    async def start(self, provider: str, callback_url: str) -> Started:
        """Store a state with its PKCE verifier and return the provider's authorize
        address."""
        settings = self._settings
        config = provider_settings(settings, provider)
        try:
            callback = safe_callback(settings, callback_url)
        except UntrustedUrl as exc:
            raise ValidationFailed(f"query.callbackUrl: {exc}") from exc
        state = secrets.token_urlsafe(32)
        verifier = secrets.token_urlsafe(64)  # 86 characters, within RFC 7636's 43-128
        now = now_iso()
        async with self._db.write() as tx:
            await sign_in.insert_oauth_state(
                tx,
                state_hash=hash_token(state),
                provider=provider,
                code_verifier=verifier,
                callback_url=callback,
                now=now,
                expires_at=after(STATE_TTL_SECONDS, now),
            )
        query = urlencode(
            {
                "response_type": "code",
                "client_id": config.client_id,
                "redirect_uri": redirect_uri(settings, provider),
                "scope": config.scope,
                "state": state,
                "code_challenge": _challenge(verifier),
                "code_challenge_method": "S256",
            }
        )
        separator = "&" if "?" in config.authorize_url else "?"
        return Started(f"{config.authorize_url}{separator}{query}", state)

    async def finish(
        self, provider: str, *, code: str, state: str, browser_state: str | None
    ) -> tuple[SignedIn, str]:
        """Verify state and PKCE, exchange the code, find or create the user by verified
        e-mail (a new user with a pending invitation joins its team instead of getting one
        of their own); return the new session and the callback address."""
        settings = self._settings
        config = provider_settings(settings, provider)
        # The state must be the one this browser was given, and one we issued (once).
        if not browser_state or not secrets.compare_digest(browser_state, state):
            raise Unauthorized("Sign-in state does not match this browser; start again")
        async with self._db.write() as tx:
            found = await sign_in.consume_oauth_state(tx, hash_token(state), provider, now_iso())
        if found is None:
            raise Unauthorized("Sign-in state is unknown, used or expired; start again")
        verifier, callback = found
        email, name = await self._identity(config, provider, code, verifier)
        if not email:
            raise Unauthorized(f"Your {provider} account has no verified e-mail address")
        email = normalise_email(email)
        try:
            callback = safe_callback(settings, callback)
        except UntrustedUrl as exc:
            raise Unauthorized("The sign-in callback is no longer trusted") from exc
        async with self._db.write() as tx:
            user = await accounts.get_user_by_email(tx, email)
            team_id = None
            if user is None:
                # Invited (the address is verified): join that team, with none of one's own.
                joined = await membership.join_on_sign_up(tx, email, name, now_iso())
                if joined is not None:
                    user, team_id = joined
            if user is None:
                user, _ = await create_user_with_team(
                    tx, email=email, name=name, password_hash=None, plan=settings.plans.default
                )
            signed_in = await start_session(tx, settings, user, team_id)
        return signed_in, callback

    async def _identity(
        self, config: OAuthProviderSettings, provider: str, code: str, verifier: str
    ) -> tuple[str | None, str]:
        """Exchange the code for a token, then read the account's verified e-mail address
        (None if it has none) and its name; Unauthorized when the provider fails."""
        form = {
            "grant_type": "authorization_code",
            "code": code,
            "redirect_uri": redirect_uri(self._settings, provider),
            "client_id": config.client_id,
            "client_secret": config.client_secret,
            "code_verifier": verifier,
        }
        http = self._http
        try:
            async with http.post(
                config.token_url, data=form, headers={"Accept": "application/json"}
            ) as response:
                tokens = await _json(response, provider)
            access_token = tokens.get("access_token") if isinstance(tokens, dict) else None
            if not isinstance(access_token, str) or not access_token:
                raise Unauthorized(FAILED.format(provider=provider))
            return await _verified_email(http, config, provider, access_token)
        except (aiohttp.ClientError, TimeoutError) as exc:
            log.warning("%s sign-in: %s", provider, exc)
            raise Unauthorized(FAILED.format(provider=provider)) from exc
