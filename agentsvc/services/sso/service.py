"""The single sign-on service: a team's settings (owners), where an address signs in, and
the OpenID Connect and SAML 2.0 sign-ins. runtime.py builds it once with its collaborators."""

from __future__ import annotations

from dataclasses import dataclass

from agentsvc.config import Settings
from agentsvc.db import Database, Tx
from agentsvc.errors import Conflict, NotFound, ValidationFailed
from agentsvc.ids import now_iso
from agentsvc.outbound import OutboundClient
from agentsvc.secretbox import SecretBox, SecretBoxError
from agentsvc.services import audit, changes
from agentsvc.services.audit import Actor
from agentsvc.services.sso import domains, oidc, saml_flow
from agentsvc.services.sso.config import (
    OidcRequest,
    OidcSettings,
    checked_issuer,
    domain_of,
    masked,
    redirect_uri,
)
from agentsvc.services.sso.discovery import ProviderDirectory, ProviderError
from agentsvc.services.sso.domain_proof import DnsChecker, new_token
from agentsvc.services.sso.domains import DomainState, state_of
from agentsvc.services.sso.saml import read_response
from agentsvc.services.sso.saml_config import (
    SamlRequest,
    SamlSettings,
    SpAddresses,
    sp_addresses,
    sp_metadata,
)
from agentsvc.services.sso.tokens import Identity, TokenRefused
from agentsvc.services.team.access import Principal
from agentsvc.services.team.sessions import SignedIn, normalise_email, start_session
from agentsvc.services.team.trust import UntrustedUrl, location_for, safe_callback
from agentsvc.store import accounts, sso
from agentsvc.store.sso import SsoRow


@dataclass(frozen=True, slots=True)
class SsoView:
    """A team's SSO settings as the owner sees them (the secret masked)."""

    type: str
    settings: OidcSettings | SamlSettings
    secret_masked: str | None
    domains: tuple[str, ...]
    enforce: bool
    redirect_uri: str
    updated_at: str
    saml: SpAddresses | None = None  # what to paste into a SAML provider
    claims: tuple[DomainState, ...] = ()  # each domain's proof


@dataclass(frozen=True, slots=True)
class Route:
    """Where an address signs in: its team's SSO (with the start address) or the usual way."""

    sso: bool
    start_path: str | None = None
    enforced: bool = False
    protocol: str | None = None  # "oidc" or "saml"


def _context(team_id: str) -> str:
    return f"sso-secret:{team_id}"


class SsoService:
    """Single sign-on: settings per team, where an address signs in, OIDC sign-in."""

    def __init__(self, db: Database, settings: Settings, box: SecretBox, outbound: OutboundClient):
        self._db = db
        self._settings = settings
        self._box = box
        self._outbound = outbound
        self._directory = ProviderDirectory(outbound)
        self._crypto = saml_flow.Crypto()
        self._dns = DnsChecker(settings.sso.dns_nameservers)

    @property
    def _public_url(self) -> str:
        return self._settings.server.public_url

    async def get_settings(self, team_id: str) -> SsoView:
        """The team's SSO settings; NotFound when none are set."""
        row = await sso.get(self._db.reader, team_id)
        if row is None:
            raise NotFound("Single sign-on is not set up for this team")
        if row.type == "saml":
            return SsoView(
                "saml",
                SamlSettings.from_json(row.settings),
                None,
                row.domains,
                row.enforce,
                redirect_uri(self._public_url),
                row.updated_at,
                sp_addresses(self._public_url, team_id),
                tuple(state_of(c) for c in row.claims),
            )
        secret = self._open(team_id, row.secret_sealed)
        return SsoView(
            row.type,
            OidcSettings.from_json(row.settings),
            masked(secret),
            row.domains,
            row.enforce,
            redirect_uri(self._public_url),
            row.updated_at,
            claims=tuple(state_of(c) for c in row.claims),
        )

    def _open(self, team_id: str, sealed: str | None) -> str | None:
        if sealed is None:
            return None
        try:
            return self._box.open(sealed, _context(team_id))
        except SecretBoxError:
            return None  # sealed under another key: the owner sets the secret again

    async def save_oidc(
        self, principal: Principal, request: OidcRequest, actor: Actor | None = None
    ) -> SsoView:
        """Check and save the team's OpenID Connect settings: the issuer's discovery must
        be readable, no domain proven by another team (a new one waits for its proof)."""
        team_id = principal.team_id
        issuer = checked_issuer(
            request.settings.issuer, allow_http=self._settings.outbound.allow_private
        )
        await self._check_domains_are_free(self._db.reader, team_id, request.domains)
        try:
            await self._directory.discover(issuer, fresh=True)
        except ProviderError as exc:
            raise ValidationFailed(
                f"issuer: the provider at {issuer} cannot be used: {exc}"
            ) from exc
        stored = await sso.get(self._db.reader, team_id)
        secret = request.client_secret
        sealed = self._box.seal(secret, _context(team_id)) if secret else None
        if sealed is None and stored is not None and self._open(team_id, stored.secret_sealed):
            sealed = stored.secret_sealed
        if sealed is None:
            raise ValidationFailed("clientSecret: give the client secret from your provider")
        details = {
            "issuer": issuer,
            "domains": list(request.domains),
            "enforce": request.enforce,
            "secretChanged": bool(secret),
        }
        await self._save(team_id, "oidc", request, sealed, actor, details)
        return await self.get_settings(team_id)

    async def save_saml(
        self, principal: Principal, request: SamlRequest, actor: Actor | None = None
    ) -> SsoView:
        """Check and save the team's SAML settings (the metadata was read by the caller;
        here pysaml2 must accept it), no domain proven by another team."""
        team_id = principal.team_id
        await self._check_domains_are_free(self._db.reader, team_id, request.domains)
        addresses = sp_addresses(self._public_url, team_id)
        await saml_flow.check_usable(self._crypto, request.settings, addresses)
        details = {
            "idpEntityId": request.settings.idp_entity_id,
            "domains": list(request.domains),
            "enforce": request.enforce,
        }
        await self._save(team_id, "saml", request, None, actor, details)
        return await self.get_settings(team_id)

    async def _save(
        self,
        team_id: str,
        kind: str,
        request: OidcRequest | SamlRequest,
        secret_sealed: str | None,
        actor: Actor | None,
        details: dict[str, object],
    ) -> None:
        """One write: the claimed domains (each with a new proof token), the settings, and
        the audit entry."""
        now = now_iso()
        async with self._db.write() as tx:
            await self._save_domains(tx, team_id, request.domains, now)
            await sso.upsert(
                tx,
                team_id=team_id,
                type=kind,
                settings=request.settings.to_json(),
                secret_sealed=secret_sealed,
                enforce=request.enforce,
                now=now,
            )
            await audit.record_in(
                tx,
                actor,
                "sso.updated",
                target_type="team",
                target_id=team_id,
                label=kind,
                details=details,
            )

    async def _check_domains_are_free(self, tx: Tx, team_id: str, domains: tuple[str, ...]) -> None:
        # A claim proves nothing (domains.py): only a domain another team has already proven
        # is refused; anyone may claim the rest, which do nothing until proven.
        taken = await sso.verified_by_other(tx, team_id, list(domains))
        if taken is not None:
            raise Conflict(f"domains: {taken} already signs in through another team")

    async def _save_domains(self, tx: Tx, team_id: str, domains: tuple[str, ...], now: str) -> None:
        await self._check_domains_are_free(tx, team_id, domains)
        tokens = [new_token() for _ in domains]
        await sso.replace_domains(tx, team_id, list(domains), tokens, now)

    async def check_domains(
        self, team_id: str, only: str | None, actor: Actor | None = None
    ) -> tuple[DomainState, ...]:
        """Look up the DNS TXT record of the team's unproven domains (or of `only`) now."""
        if await sso.get(self._db.reader, team_id) is None:
            raise NotFound("Single sign-on is not set up for this team")
        return await domains.check(self._db, self._dns, team_id, only, actor)

    async def delete(self, team_id: str, actor: Actor | None = None) -> None:
        """Remove the team's SSO settings and domains; NotFound when none are set."""
        async with self._db.write() as tx:
            row = await sso.get(tx, team_id)
            if row is None or not await sso.delete(tx, team_id):
                raise NotFound("Single sign-on is not set up for this team")
            await audit.record_in(
                tx, actor, "sso.removed", target_type="team", target_id=team_id, label=row.type
            )

    async def route_for(self, email: str) -> Route:
        """Where this address signs in (only the domain decides: nothing about any
        account is revealed)."""
        found = await sso.team_for_domain(self._db.reader, domain_of(normalise_email(email)))
        if found is None:
            return Route(sso=False)
        team_id, kind, enforce = found
        path = "saml" if kind == "saml" else "sso"
        return Route(True, f"/api/v1/auth/{path}/{team_id}/start", enforce, kind)

    async def _team_oidc(self, team_id: str) -> tuple[OidcSettings, str | None, SsoRow]:
        row = await sso.get(self._db.reader, team_id)
        if row is None or row.type != "oidc":
            raise NotFound("This team does not sign in with OpenID Connect")
        return OidcSettings.from_json(row.settings), row.secret_sealed, row

    async def start(self, team_id: str, callback_url: str) -> tuple[str, str]:
        """Begin signing in to the team: the provider's address to go to, and the state."""
        try:
            callback = safe_callback(self._settings, callback_url)
        except UntrustedUrl as exc:
            raise ValidationFailed(f"query.callbackUrl: {exc}") from exc
        settings, _, _ = await self._team_oidc(team_id)
        try:
            provider = await self._directory.discover(settings.issuer)
        except ProviderError as exc:
            raise oidc.refused(f"the identity provider cannot be read ({exc})") from exc
        return await oidc.begin(self._db, provider, settings, self._public_url, team_id, callback)

    async def finish(
        self, *, code: str, state: str, browser_state: str | None
    ) -> tuple[SignedIn, str]:
        """Check the state, exchange the code, verify the ID token, sign the person in to
        the team (created on first sign-in, role from the mapped groups); return the
        session and where to go."""
        pending = await oidc.take_state(self._db, state, browser_state)
        settings, sealed, row = await self._team_oidc(pending.team_id)
        secret = self._open(pending.team_id, sealed)
        if secret is None:
            raise oidc.refused("the team's client secret must be set again by its owner")
        try:
            provider = await self._directory.discover(settings.issuer)
        except ProviderError as exc:
            raise oidc.refused(f"the identity provider cannot be read ({exc})") from exc
        tokens = await oidc.exchange_code(
            self._outbound, provider, settings, secret, self._public_url, code, pending.verifier
        )
        person = await oidc.verified_identity(
            tokens,
            provider=provider,
            directory=self._directory,
            outbound=self._outbound,
            oidc=settings,
            nonce=pending.nonce,
            domains=row.domains,
            verified=row.verified,
        )
        return await self._sign_in(pending, settings.role_mapping, person)

    async def _sign_in(
        self,
        pending: oidc.Pending,
        mapping: dict[str, str],
        person: Identity,
        assertion_id: str | None = None,
    ) -> tuple[SignedIn, str]:
        try:
            callback = safe_callback(self._settings, pending.callback)
        except UntrustedUrl as exc:
            raise oidc.refused("the address to return to is no longer trusted") from exc
        async with self._db.write() as tx:
            if assertion_id is None:
                await oidc.remember_nonce(tx, pending.team_id, pending.nonce, person.expires_at)
            else:
                await saml_flow.remember_assertion(
                    tx, pending.team_id, assertion_id, person.expires_at
                )
            team = await accounts.get_team(tx, pending.team_id)
            if team is None:
                raise NotFound("Team not found")
            user, role_changed = await oidc.member_of_team(
                tx, team.id, person, team.owner_user_id, mapping
            )
            signed_in = await start_session(tx, self._settings, user, team.id)
        if role_changed:
            await self._db.announce(changes.PRINCIPALS)
        return signed_in, location_for(self._settings, callback)

    async def enforced_for(self, email: str) -> bool:
        """Whether this address must sign in through its team's SSO."""
        found = await sso.team_for_domain(self._db.reader, domain_of(normalise_email(email)))
        return bool(found and found[2])

    async def _team_saml(self, team_id: str) -> tuple[SamlSettings, SsoRow]:
        row = await sso.get(self._db.reader, team_id)
        if row is None or row.type != "saml":
            raise NotFound("This team does not sign in with SAML")
        return SamlSettings.from_json(row.settings), row

    async def saml_metadata(self, team_id: str) -> str:
        """Our service provider metadata for the team's SAML provider."""
        await self._team_saml(team_id)
        return sp_metadata(sp_addresses(self._public_url, team_id))

    def _exchange(self, team_id: str, settings: SamlSettings):
        skew = self._settings.auth.saml_clock_skew_seconds
        return saml_flow.provider(settings, sp_addresses(self._public_url, team_id), skew)

    async def saml_start(self, team_id: str, callback_url: str) -> tuple[str, str]:
        """Begin signing in to the team by SAML: the provider's address (an AuthnRequest
        by HTTP-Redirect) and the RelayState."""
        try:
            callback = safe_callback(self._settings, callback_url)
        except UntrustedUrl as exc:
            raise ValidationFailed(f"query.callbackUrl: {exc}") from exc
        settings, _ = await self._team_saml(team_id)
        exchange = self._exchange(team_id, settings)
        return await saml_flow.begin(self._db, self._crypto, exchange, team_id, callback)

    async def saml_finish(
        self, team_id: str, encoded: str, relay: str | None, browser_relay: str | None
    ) -> tuple[SignedIn, str]:
        """Check the RelayState, verify the response's signed assertion (ours, for this
        request, in time, not seen before), sign the person in to the team."""
        settings, row = await self._team_saml(team_id)
        exchange = self._exchange(team_id, settings)
        pending = await saml_flow.take_state(self._db, team_id, relay, browser_relay)
        try:
            asserted = await self._crypto.run(read_response, exchange, encoded, pending.nonce)
        except TokenRefused as exc:
            raise oidc.refused(str(exc)) from exc
        person = asserted.person
        problem = domains.sign_in_refusal(domain_of(person.email), row.domains, row.verified)
        if problem is not None:
            raise oidc.refused(problem)
        return await self._sign_in(pending, settings.role_mapping, person, asserted.assertion_id)
