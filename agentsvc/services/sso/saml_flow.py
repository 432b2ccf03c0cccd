"""A team's SAML sign-in around the protocol: the request id kept with a one-use
RelayState, pysaml2's blocking work run off the event loop (a few at a time), the
assertion id remembered until it expires."""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import Callable
from datetime import UTC, datetime
from typing import TypeVar

from agentsvc.db import Database, Tx
from agentsvc.errors import ValidationFailed
from agentsvc.ids import iso, now_iso
from agentsvc.services.sso import saml
from agentsvc.services.sso.oidc import STATE_TTL_SECONDS, Pending, refused
from agentsvc.services.sso.saml_config import SamlSettings, SpAddresses
from agentsvc.services.team.sessions import after, hash_token
from agentsvc.store import sso

# Marks a SAML sign-in's state (sso_states.code_verifier, which OIDC uses for PKCE).
SAML_MARK = "saml"
NO_XMLSEC = "this server cannot check SAML signatures: its operator must install xmlsec1"
# xmlsec1 runs as a subprocess per signature: a few at once, however many arrive.
MAX_CONCURRENT = 4

T = TypeVar("T")


class Crypto:
    """Runs pysaml2's blocking calls in threads, at most MAX_CONCURRENT at a time."""

    def __init__(self) -> None:
        self._slots = asyncio.Semaphore(MAX_CONCURRENT)

    async def run(self, work: Callable[..., T], *args: object) -> T:
        async with self._slots:
            return await asyncio.to_thread(work, *args)


def provider(settings: SamlSettings, sp: SpAddresses, skew: float) -> saml.Provider:
    """The exchange's parameters; the sign-in is refused when xmlsec1 is missing."""
    program = saml.xmlsec_program()
    if program is None:
        raise refused(NO_XMLSEC)
    return saml.Provider(settings, sp, skew, program)


async def check_usable(crypto: Crypto, settings: SamlSettings, sp: SpAddresses) -> None:
    """The saved settings must load in pysaml2 (ValidationFailed otherwise)."""
    program = saml.xmlsec_program()
    if program is None:
        raise ValidationFailed(
            "type: SAML needs xmlsec1 on the server; ask its operator to install it"
        )
    try:
        await crypto.run(saml.check_config, saml.Provider(settings, sp, 0, program))
    except Exception as exc:
        raise ValidationFailed(
            "idpMetadataXml: this identity provider's metadata cannot be used"
        ) from exc


async def begin(
    db: Database, crypto: Crypto, exchange: saml.Provider, team_id: str, callback: str
) -> tuple[str, str]:
    """Store a one-use RelayState with the AuthnRequest's id; return the provider's
    address (HTTP-Redirect) and the RelayState (for the browser's cookie)."""
    relay = secrets.token_urlsafe(32)  # 43 characters: RelayState allows 80 bytes
    request_id, location = await crypto.run(saml.authn_request, exchange, relay)
    now = now_iso()
    async with db.write() as tx:
        await sso.insert_state(
            tx,
            state_hash=hash_token(relay),
            team_id=team_id,
            nonce=request_id,
            code_verifier=SAML_MARK,
            callback_url=callback,
            now=now,
            expires_at=after(STATE_TTL_SECONDS, now),
        )
    return location, relay


async def take_state(
    db: Database, team_id: str, relay: str | None, browser_relay: str | None
) -> Pending:
    """The SAML sign-in of this RelayState, which must be this browser's, this team's,
    and live; used once."""
    if not relay:
        raise refused("the answer is not for a sign-in started here (no RelayState)")
    if not browser_relay or not secrets.compare_digest(browser_relay, relay):
        raise refused("this browser did not start this sign-in")
    async with db.write() as tx:
        found = await sso.consume_state(tx, hash_token(relay), now_iso())
    if found is None:
        raise refused("the sign-in is unknown, used or expired")
    pending = Pending(*found)
    if pending.team_id != team_id or pending.verifier != SAML_MARK:
        raise refused("the sign-in is unknown, used or expired")
    return pending


async def remember_assertion(tx: Tx, team_id: str, assertion_id: str, expires_at: int) -> None:
    """An assertion is accepted once, until it expires: a second use is a replay."""
    key = "saml-assertion:" + hash_token(f"{team_id}:{assertion_id}")
    until = iso(datetime.fromtimestamp(max(expires_at, 0), UTC))
    if not await sso.remember(tx, key, team_id, until):
        raise refused("this assertion was already used")
