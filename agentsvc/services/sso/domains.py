"""A team's claimed e-mail domains and their proof: a claimed domain does nothing (no
routing, no enforce, no SSO sign-in, no SCIM) until its DNS TXT record is found or the
server's operator vouches for it; once proven for one team, other teams' claims of it go."""

from __future__ import annotations

from dataclasses import dataclass

from agentsvc.db import ConstraintViolation, Database
from agentsvc.errors import NotFound
from agentsvc.ids import now_iso
from agentsvc.services import audit
from agentsvc.services.audit import Actor
from agentsvc.services.sso.domain_proof import DnsChecker, record_name, record_value
from agentsvc.store import sso
from agentsvc.store.sso import DomainClaim

NOT_VERIFIED = (
    "{domain} is not verified for this team yet: its owner must prove the domain"
    " (a DNS TXT record) before anyone there can sign in by single sign-on"
)


def sign_in_refusal(domain: str, claimed: tuple[str, ...], verified: tuple[str, ...]) -> str | None:
    """Why an address at this domain cannot sign in to the team by SSO, or None."""
    if domain in verified:
        return None
    if domain in claimed:
        return NOT_VERIFIED.format(domain=domain)
    return f"{domain} addresses do not sign in to this team"


@dataclass(frozen=True, slots=True)
class DomainState:
    """A claimed domain as its owner sees it: proven or not, and the record that proves it."""

    domain: str
    verified_at: str | None
    record_name: str
    record_value: str
    problem: str | None = None  # after a check: why it is still unproven


def state_of(claim: DomainClaim, problem: str | None = None) -> DomainState:
    """The owner's view of one claim."""
    return DomainState(
        claim.domain,
        claim.verified_at,
        record_name(claim.domain),
        record_value(claim.token),
        problem,
    )


async def _mark(db: Database, team_id: str, domain: str, actor: Actor | None, how: str) -> bool:
    try:
        return await _mark_in(db, team_id, domain, actor, how)
    except ConstraintViolation:
        return False  # another team proved it at the same moment (one verified team each)


async def _mark_in(db: Database, team_id: str, domain: str, actor: Actor | None, how: str) -> bool:
    async with db.write() as tx:
        if not await sso.mark_verified(tx, team_id, domain, now_iso()):
            return False
        await audit.record_in(
            tx,
            actor,
            "sso.domain_verified",
            target_type="team",
            target_id=team_id,
            label=domain,
            details={"domain": domain, "by": how},
        )
    return True


async def check(
    db: Database, checker: DnsChecker, team_id: str, only: str | None, actor: Actor | None
) -> tuple[DomainState, ...]:
    """Look up the TXT record of each unproven claim (or of `only`), record the proven ones,
    and answer every claim with a sentence for those still unproven."""
    claims = await sso.claims_of(db.reader, team_id)
    if only is not None and only not in {c.domain for c in claims}:
        raise NotFound(f"domain: {only} is not one of this team's single sign-on domains")
    problems: dict[str, str] = {}
    for claim in claims:
        if claim.verified_at is not None or only not in (None, claim.domain):
            continue
        problem = await checker.problem(claim.domain, claim.token)
        if problem is None and not await _mark(db, team_id, claim.domain, actor, "dns"):
            problem = f"{claim.domain} is already verified by another team"
        if problem is not None:
            problems[claim.domain] = problem
    claims = await sso.claims_of(db.reader, team_id)
    return tuple(state_of(c, problems.get(c.domain)) for c in claims)


async def verify_by_operator(db: Database, team_id: str, domain: str) -> bool:
    """The server's operator vouches for the team's claim (for internal domains without
    public DNS); False when it was already proven. LookupError when the team does not
    claim it (or another team has proven it)."""
    claims = {c.domain: c for c in await sso.claims_of(db.reader, team_id)}
    claim = claims.get(domain)
    if claim is None:
        raise LookupError(f"team {team_id} does not claim {domain} for single sign-on")
    if claim.verified_at is not None:
        return False
    # In the team's audit log as the server's doing ("by": "operator").
    if not await _mark(db, team_id, domain, Actor(None, team_id), "operator"):
        raise LookupError(f"{domain} is already verified by another team")
    return True
