"""The outbound guard's test inputs: forbidden addresses and a resolver that answers what
a test says."""

from __future__ import annotations

import socket

from aiohttp.abc import AbstractResolver, ResolveResult

FORBIDDEN = [
    "127.0.0.1",  # loopback
    "127.8.9.10",
    "10.1.2.3",  # private
    "172.16.0.1",
    "192.168.1.1",
    "169.254.169.254",  # link-local: cloud metadata
    "100.64.0.1",  # carrier-grade NAT
    "100.127.255.254",
    "0.0.0.0",  # unspecified
    "224.0.0.1",  # multicast
    "239.255.255.250",
    "255.255.255.255",
    "::1",
    "::",
    "fe80::1",
    "fc00::1",
    "fd00:ec2::254",  # AWS metadata over IPv6
    "ff02::1",
    "::ffff:127.0.0.1",  # IPv4-mapped
    "::ffff:169.254.169.254",
    "2002:7f00:1::1",  # 6to4 of 127.0.0.1
    "2002:a9fe:a9fe::1",  # 6to4 of 169.254.169.254
    "64:ff9b::7f00:1",  # NAT64 of 127.0.0.1
    "64:ff9b::a9fe:a9fe",  # NAT64 of 169.254.169.254
    "2001:0:4136:e378:8000:63bf:80ff:fffe",  # Teredo, client 127.0.0.1
]


class StubResolver(AbstractResolver):
    """Resolves every name to fixed addresses, recording each lookup."""

    def __init__(self, *addresses: str):
        self.addresses = list(addresses)
        self.lookups: list[str] = []

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        self.lookups.append(host)
        return [
            ResolveResult(
                hostname=host,
                host=addr,
                port=port,
                family=socket.AF_INET6 if ":" in addr else socket.AF_INET,
                proto=0,
                flags=socket.AI_NUMERICHOST,
            )
            for addr in self.addresses
        ]

    async def close(self) -> None:
        pass
