"""Proving a team owns an e-mail domain: the DNS TXT record it must publish, and the bounded
look-up that checks it (dnspython's asyncio resolver, a few at once per process)."""

from __future__ import annotations

import asyncio
import secrets

import dns.asyncresolver
import dns.exception
import dns.nameserver
import dns.rdatatype
import dns.resolver

from agentsvc.config import nameserver_address

RECORD_PREFIX = "_agentsvc-verification."
VALUE_PREFIX = "agentsvc-domain-verification="
TIMEOUT_SECONDS = 3.0
AT_ONCE = 4  # look-ups in flight per process
MAX_STRINGS = 20  # TXT strings read from one answer; the rest are ignored


def new_token() -> str:
    """A random token for one team's claim of one domain."""
    return secrets.token_urlsafe(24)


def record_name(domain: str) -> str:
    """Where the TXT record goes (a name of its own, so the domain's own TXT records, SPF
    and the like, are left alone)."""
    return RECORD_PREFIX + domain


def record_value(token: str) -> str:
    """What the TXT record must hold."""
    return VALUE_PREFIX + token


class DnsChecker:
    """Looks for a domain's verification record; the nameservers from `[sso]
    dns_nameservers` (empty: the system's)."""

    def __init__(self, nameservers: list[str]):
        self._nameservers = list(nameservers)
        self._at_once = asyncio.Semaphore(AT_ONCE)

    def _resolver(self) -> dns.asyncresolver.Resolver:
        if not self._nameservers:
            resolver = dns.asyncresolver.Resolver()
        else:
            resolver = dns.asyncresolver.Resolver(configure=False)
            resolver.nameservers = [
                dns.nameserver.Do53Nameserver(*nameserver_address(n)) for n in self._nameservers
            ]
        resolver.timeout = TIMEOUT_SECONDS
        resolver.lifetime = TIMEOUT_SECONDS
        resolver.cache = None  # a record just added must be seen on the next check
        return resolver

    async def problem(self, domain: str, token: str) -> str | None:
        """None when the record holds the token; else a sentence saying what was found."""
        name = record_name(domain)
        try:
            async with self._at_once:
                answer = await self._resolver().resolve(
                    name, dns.rdatatype.TXT, raise_on_no_answer=False
                )
        except dns.resolver.NXDOMAIN:
            return f"There is no DNS name {name} yet; add the TXT record there"
        except dns.exception.Timeout:
            return f"The DNS servers did not answer for {name} in time; try again later"
        except dns.exception.DNSException:
            return f"The DNS look-up of {name} failed; try again later"
        values = [
            b"".join(rdata.strings).decode("ascii", "replace")
            for rdata in list(answer.rrset or ())[:MAX_STRINGS]
        ]
        if record_value(token) in values:
            return None
        return f"No TXT record with the value was found at {name} yet; DNS changes can take a while"
