"""The visitor's address behind a reverse proxy or load balancer (`[server] trusted_proxies`).

Behind nginx every request comes from the proxy's address, so per-address limits would be
one bucket for every visitor. When the peer is a trusted proxy, the client is the last
address in X-Forwarded-For that is not itself a trusted proxy (addresses before it were
written by the client and prove nothing). From any other peer the header is ignored.
"""

from __future__ import annotations

import ipaddress

from aiohttp import web

MAX_FORWARDED_HOPS = 16  # a longer header is ignored past its last 16 entries


class TrustedProxies:
    """The configured proxies: addresses or networks (CIDR)."""

    def __init__(self, entries: list[str]):
        self._networks = [ipaddress.ip_network(e, strict=False) for e in entries]

    def __bool__(self) -> bool:
        return bool(self._networks)

    def trusts(self, address: str | None) -> bool:
        if not address:
            return False
        try:
            ip = ipaddress.ip_address(address)
        except ValueError:
            return False
        return any(ip in network for network in self._networks)

    def client_of(self, request: web.Request) -> web.Request:
        """The request as from its client: `remote` replaced when a trusted proxy sent it."""
        if not self.trusts(request.remote):
            return request
        header = request.headers.get("X-Forwarded-For", "")
        hops = [h.strip() for h in header.split(",")][-MAX_FORWARDED_HOPS:]
        for hop in reversed(hops):
            if not hop:
                continue
            if not self.trusts(hop):
                try:
                    return request.clone(remote=str(ipaddress.ip_address(hop)))
                except ValueError:
                    return request  # not an address: the proxy's own address stands
        return request
