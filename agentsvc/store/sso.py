"""Single sign-on: a team's settings and domains, sign-in states, one-use values seen."""

from __future__ import annotations

from dataclasses import dataclass

from agentsvc.db import Tx


@dataclass(frozen=True, slots=True)
class SsoRow:
    """A team's stored SSO settings (the secret still sealed) and its domains."""

    team_id: str
    type: str
    settings: str  # JSON
    secret_sealed: str | None
    enforce: bool
    domains: tuple[str, ...]  # claimed, proven or not
    updated_at: str
    claims: tuple[DomainClaim, ...] = ()

    @property
    def verified(self) -> tuple[str, ...]:
        """The proven domains: only these sign in."""
        return tuple(c.domain for c in self.claims if c.verified_at is not None)


async def get(tx: Tx, team_id: str) -> SsoRow | None:
    """The team's SSO settings with its domains, or None."""
    rows = await tx.fetchall(
        "SELECT team_id, type, settings, secret_sealed, enforce, updated_at FROM team_sso"
        " WHERE team_id = ?",
        (team_id,),
    )
    if not rows:
        return None
    row = rows[0]
    claims = await claims_of(tx, team_id)
    domains = tuple(c.domain for c in claims)
    return SsoRow(row[0], row[1], row[2], row[3], bool(row[4]), domains, row[5], claims)


async def domains_of(tx: Tx, team_id: str) -> tuple[str, ...]:
    """The team's claimed SSO domains (proven or not), sorted."""
    rows = await tx.fetchall(
        "SELECT domain FROM team_domains WHERE team_id = ? ORDER BY domain", (team_id,)
    )
    return tuple(r[0] for r in rows)


async def upsert(
    tx: Tx,
    *,
    team_id: str,
    type: str,
    settings: str,
    secret_sealed: str | None,
    enforce: bool,
    now: str,
) -> None:
    """Create or replace the team's SSO settings."""
    await tx.execute(
        "INSERT INTO team_sso (team_id, type, settings, secret_sealed, enforce, created_at,"
        " updated_at) VALUES (?, ?, ?, ?, ?, ?, ?)"
        " ON CONFLICT (team_id) DO UPDATE SET type = excluded.type,"
        " settings = excluded.settings, secret_sealed = excluded.secret_sealed,"
        " enforce = excluded.enforce, updated_at = excluded.updated_at",
        (team_id, type, settings, secret_sealed, int(enforce), now, now),
    )


@dataclass(frozen=True, slots=True)
class DomainClaim:
    """A domain a team claims, the token its DNS TXT record must hold, when it was proven."""

    domain: str
    token: str
    verified_at: str | None


async def claims_of(tx: Tx, team_id: str) -> tuple[DomainClaim, ...]:
    """The team's claimed domains with their proof, sorted by domain."""
    rows = await tx.fetchall(
        "SELECT domain, token, verified_at FROM team_domains WHERE team_id = ? ORDER BY domain",
        (team_id,),
    )
    return tuple(DomainClaim(r[0], r[1], r[2]) for r in rows)


async def verified_domains_of(tx: Tx, team_id: str) -> tuple[str, ...]:
    """The team's proven domains, sorted: only these route, enforce, sign in, provision."""
    rows = await tx.fetchall(
        "SELECT domain FROM team_domains WHERE team_id = ? AND verified_at IS NOT NULL"
        " ORDER BY domain",
        (team_id,),
    )
    return tuple(r[0] for r in rows)


async def verified_by_other(tx: Tx, team_id: str, domains: list[str]) -> str | None:
    """The first of these domains another team has proven, or None."""
    for domain in domains:
        rows = await tx.fetchall(
            "SELECT 1 FROM team_domains WHERE domain = ? AND team_id <> ?"
            " AND verified_at IS NOT NULL",
            (domain, team_id),
        )
        if rows:
            return domain
    return None


async def replace_domains(
    tx: Tx, team_id: str, domains: list[str], tokens: list[str], now: str
) -> None:
    """Make these the team's claimed domains: a domain kept keeps its token and proof, a
    new one is unproven with its token (from `tokens`, one per domain), a dropped one is
    forgotten (claimed again, it must be proven again)."""
    held = await claims_of(tx, team_id)
    for claim in held:
        if claim.domain not in domains:
            await tx.execute(
                "DELETE FROM team_domains WHERE team_id = ? AND domain = ?",
                (team_id, claim.domain),
            )
    for domain, token in zip(domains, tokens, strict=True):
        await tx.execute(
            "INSERT INTO team_domains (domain, team_id, token, verified_at, created_at)"
            " VALUES (?, ?, ?, NULL, ?) ON CONFLICT (domain, team_id) DO NOTHING",
            (domain, team_id, token, now),
        )


async def mark_verified(tx: Tx, team_id: str, domain: str, now: str) -> bool:
    """Record the team's proof of the domain and drop every other team's (unproven) claim
    of it; False when the team does not claim it or another team has proven it."""
    if await verified_by_other(tx, team_id, [domain]):
        return False
    changed = await tx.execute(
        "UPDATE team_domains SET verified_at = ? WHERE team_id = ? AND domain = ?"
        " AND verified_at IS NULL",
        (now, team_id, domain),
    )
    if changed:
        await tx.execute(
            "DELETE FROM team_domains WHERE domain = ? AND team_id <> ?", (domain, team_id)
        )
    return changed > 0


async def delete(tx: Tx, team_id: str) -> bool:
    """Remove the team's SSO settings and domains; False when it had none."""
    await tx.execute("DELETE FROM team_domains WHERE team_id = ?", (team_id,))
    await tx.execute("DELETE FROM sso_states WHERE team_id = ?", (team_id,))
    changed = await tx.execute("DELETE FROM team_sso WHERE team_id = ?", (team_id,))
    return changed > 0


async def team_for_domain(tx: Tx, domain: str) -> tuple[str, str, bool] | None:
    """(team id, type, enforce) of the team whose SSO holds this domain proven, or None
    (an unproven claim does nothing)."""
    rows = await tx.fetchall(
        "SELECT s.team_id, s.type, s.enforce FROM team_domains d"
        " JOIN team_sso s ON s.team_id = d.team_id"
        " WHERE d.domain = ? AND d.verified_at IS NOT NULL",
        (domain,),
    )
    return (rows[0][0], rows[0][1], bool(rows[0][2])) if rows else None


async def insert_state(
    tx: Tx,
    *,
    state_hash: str,
    team_id: str,
    nonce: str,
    code_verifier: str,
    callback_url: str,
    now: str,
    expires_at: str,
) -> None:
    await tx.execute(
        "INSERT INTO sso_states (state_hash, team_id, nonce, code_verifier, callback_url,"
        " created_at, expires_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
        (state_hash, team_id, nonce, code_verifier, callback_url, now, expires_at),
    )


async def consume_state(tx: Tx, state_hash: str, now: str) -> tuple[str, str, str, str] | None:
    """Delete a live state in one statement; return (team id, nonce, verifier, callback)."""
    rows = await tx.fetchall(
        "DELETE FROM sso_states WHERE state_hash = ? AND expires_at > ?"
        " RETURNING team_id, nonce, code_verifier, callback_url",
        (state_hash, now),
    )
    return (rows[0][0], rows[0][1], rows[0][2], rows[0][3]) if rows else None


async def remember(tx: Tx, key: str, team_id: str, expires_at: str) -> bool:
    """Record a one-use value; False when it was already seen (a replay)."""
    changed = await tx.execute(
        "INSERT INTO sso_seen (key, team_id, expires_at) VALUES (?, ?, ?)"
        " ON CONFLICT (key) DO NOTHING",
        (key, team_id, expires_at),
    )
    return changed > 0


async def set_role(tx: Tx, team_id: str, user_id: str, role: str) -> bool:
    """Set a member's role; True when it changed."""
    changed = await tx.execute(
        "UPDATE memberships SET role = ? WHERE team_id = ? AND user_id = ? AND role <> ?",
        (role, team_id, user_id, role),
    )
    return changed > 0


async def delete_expired(tx: Tx, now: str) -> None:
    """Drop states and one-use values that can no longer be used."""
    await tx.execute("DELETE FROM sso_states WHERE expires_at <= ?", (now,))
    await tx.execute("DELETE FROM sso_seen WHERE expires_at <= ?", (now,))
