"""The one guarded outbound HTTP client used by HTTP tools, webhooks and post actions.

Guards: http/https only, no redirects followed, total and connect timeouts, a capped response
body, header values without CR/LF, and (unless `[outbound] allow_private`) only public
addresses. The address check runs inside the connector's resolver, on the very addresses the
connection is opened to, so a name that re-resolves to a private address (DNS rebinding)
cannot slip past a check made earlier; IP-literal hosts never reach a resolver, so they are
checked before the request.
"""

from __future__ import annotations

import ipaddress
import re
import socket
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import aiohttp
from aiohttp.abc import AbstractResolver, ResolveResult
from multidict import CIMultiDict, CIMultiDictProxy
from yarl import URL

from agentsvc import telemetry

TOTAL_TIMEOUT_SECONDS = 30.0
CONNECT_TIMEOUT_SECONDS = 5.0
MAX_RESPONSE_BYTES = 1024 * 1024
USER_AGENT = "agentsvc"

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

# Ranges refused beyond what `ipaddress` flags as private/reserved/etc.
_EXTRA_FORBIDDEN = tuple(
    ipaddress.ip_network(n)
    for n in (
        "100.64.0.0/10",  # carrier-grade NAT (shared address space)
        "192.0.0.0/24",  # IETF protocol assignments
        "198.18.0.0/15",  # benchmarking
        "64:ff9b:1::/48",  # local-use NAT64: embeds addresses of the local network
        "fd00:ec2::/32",  # AWS instance metadata over IPv6 (also inside fc00::/7)
    )
)
_NAT64 = ipaddress.ip_network("64:ff9b::/96")
_IPV4_COMPATIBLE = ipaddress.ip_network("::/96")
_NUMERIC_HOST = re.compile(r"^(0x[0-9a-f]+|[0-9]+)(\.(0x[0-9a-f]*|[0-9]+)){0,3}\.?$", re.I)
_HEADER_NAME = re.compile(r"^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$")


class OutboundError(Exception):
    """An outbound request that was refused or failed; the message says why, for users."""

    def __init__(self, message: str, kind: str = "failed"):
        super().__init__(message)
        self.message = message
        # "refused" (guard), "invalid" (bad URL/header), "timeout", "connect", "failed"
        self.kind = kind


class RefusedAddress(OSError):
    """Raised by the guarded resolver when a name resolves to a non-public address."""


@dataclass(frozen=True, slots=True)
class OutboundResponse:
    """A response: status, headers, body (at most the cap) and whether it was cut."""

    status: int
    headers: CIMultiDictProxy[str]
    body: bytes
    truncated: bool

    @property
    def ok(self) -> bool:
        return 200 <= self.status < 300

    def text(self) -> str:
        """The body decoded as UTF-8, undecodable bytes replaced."""
        return self.body.decode("utf-8", errors="replace")


def _embedded_ipv4(addr: ipaddress.IPv6Address) -> list[ipaddress.IPv4Address]:
    """IPv4 addresses an IPv6 address carries (mapped, 6to4, Teredo, NAT64, compatible)."""
    found: list[ipaddress.IPv4Address] = []
    if addr.ipv4_mapped is not None:
        found.append(addr.ipv4_mapped)
    if addr.sixtofour is not None:
        found.append(addr.sixtofour)
    if addr.teredo is not None:
        found.extend(addr.teredo)
    if addr in _NAT64 or (addr in _IPV4_COMPATIBLE and int(addr) > 1):
        found.append(ipaddress.IPv4Address(int(addr) & 0xFFFFFFFF))
    return found


def forbidden_reason(addr: IPAddress) -> str | None:
    """Why an address may not be reached from the service, or None when it is public."""
    if isinstance(addr, ipaddress.IPv6Address):
        if addr.scope_id:
            return "is a scoped (link-local) address"
        if addr.ipv4_mapped is not None:
            # The socket talks IPv4 to the mapped address: judge that address alone.
            inner_reason = forbidden_reason(addr.ipv4_mapped)
            return f"maps {addr.ipv4_mapped}, which {inner_reason}" if inner_reason else None
        for inner in _embedded_ipv4(addr):
            reason = forbidden_reason(inner)
            if reason:
                return f"embeds {inner}, which {reason}"
    checks = (
        (addr.is_unspecified, "is unspecified"),
        (addr.is_loopback, "is loopback"),
        (addr.is_link_local, "is link-local"),
        (addr.is_multicast, "is multicast"),
        (addr.is_private, "is private"),
        (addr.is_reserved, "is reserved"),
        (any(addr in net for net in _EXTRA_FORBIDDEN), "is not public"),
        (not addr.is_global, "is not public"),
    )
    for flagged, reason in checks:
        if flagged:
            return reason
    return None


def literal_address(host: str) -> IPAddress | None:
    """The address an IP-literal host names, including numeric aliases like `2130706433`."""
    bare = host.strip("[]").rstrip(".")
    try:
        return ipaddress.ip_address(bare.split("%", 1)[0])
    except ValueError:
        pass
    if _NUMERIC_HOST.match(bare):
        # inet_aton accepts the legacy forms (decimal, octal, hex, 127.1) that resolvers
        # and browsers map onto an IPv4 address.
        try:
            return ipaddress.IPv4Address(socket.inet_aton(bare))
        except OSError:
            return None
    return None


def private_host(host: str) -> str | None:
    """How a host is shown when it can only be private (a non-public IP or `localhost`), or None.

    Used when an address is saved; a name is not resolved then (it is checked on every
    connection), so only literals and the reserved `localhost` names are known to be private.
    """
    bare = host.strip("[]").rstrip(".").lower()
    if bare == "localhost" or bare.endswith(".localhost"):
        return bare
    addr = literal_address(bare)
    if addr is None or forbidden_reason(addr) is None:
        return None
    if isinstance(addr, ipaddress.IPv6Address) and addr.ipv4_mapped is not None:
        return f"{bare}, that is {addr.ipv4_mapped}"
    return bare if str(addr) == bare.split("%", 1)[0] else f"{bare}, that is {addr}"


class GuardedResolver(AbstractResolver):
    """Resolve with an inner resolver and refuse the host if any address is not public."""

    def __init__(self, inner: AbstractResolver | None = None):
        self._inner = inner or aiohttp.ThreadedResolver()

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        results = await self._inner.resolve(host, port, family)
        for result in results:
            addr = ipaddress.ip_address(result["host"].split("%", 1)[0])
            reason = forbidden_reason(addr)
            if reason:
                raise RefusedAddress(f"{host} resolves to {addr}, which {reason}")
        return results

    async def close(self) -> None:
        await self._inner.close()


def check_url(url: str | URL, *, allow_private: bool) -> URL:
    """Parse and check a URL: http/https with a host; a literal address must be public."""
    parsed = URL(url) if isinstance(url, str) else url
    if parsed.scheme not in ("http", "https"):
        raise OutboundError(f"{parsed.scheme or 'no'} scheme: only http and https", kind="invalid")
    host = parsed.raw_host
    if not host:
        raise OutboundError("the URL has no host", kind="invalid")
    if parsed.user is not None or parsed.password is not None:
        raise OutboundError("credentials in the URL are not allowed", kind="invalid")
    if not allow_private:
        addr = literal_address(host)
        if addr is not None:
            reason = forbidden_reason(addr)
            if reason:
                raise OutboundError(f"address {addr} refused: it {reason}", kind="refused")
            if str(addr) != host.strip("[]").rstrip("."):
                # A public address written in a legacy numeric form: send it canonically.
                parsed = parsed.with_host(str(addr))
    return parsed


def check_headers(headers: Mapping[str, str] | None) -> CIMultiDict[str]:
    """Refuse header names that are not tokens and values holding CR, LF or NUL."""
    out: CIMultiDict[str] = CIMultiDict()
    for name, value in (headers or {}).items():
        if not isinstance(name, str) or not _HEADER_NAME.match(name):
            raise OutboundError(f"header name {name!r} is not valid", kind="invalid")
        if not isinstance(value, str) or any(c in value for c in "\r\n\x00"):
            raise OutboundError(f"header {name}: value must be text without line breaks", "invalid")
        out.add(name, value)
    return out


async def _read_capped(resp: aiohttp.ClientResponse, cap: int) -> bytes:
    """Read at most cap + 1 bytes (one more shows the body was longer), then stop."""
    chunks: list[bytes] = []
    size = 0
    while size <= cap:
        chunk = await resp.content.read(cap + 1 - size)
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
    return b"".join(chunks)


class OutboundClient:
    """One ClientSession for the app's life, with every outbound guard applied."""

    def __init__(
        self,
        *,
        allow_private: bool = False,
        resolver: AbstractResolver | None = None,
        total_timeout: float = TOTAL_TIMEOUT_SECONDS,
        connect_timeout: float = CONNECT_TIMEOUT_SECONDS,
        max_response_bytes: int = MAX_RESPONSE_BYTES,
    ):
        self.allow_private = allow_private
        self._resolver = resolver
        self._timeout = aiohttp.ClientTimeout(total=total_timeout, connect=connect_timeout)
        self._connect_timeout = connect_timeout
        self.max_response_bytes = max_response_bytes
        self._session: aiohttp.ClientSession | None = None

    async def open(self) -> None:
        """Create the session (inside the running loop)."""
        resolver = self._resolver
        if not self.allow_private:
            resolver = GuardedResolver(resolver)
        connector = aiohttp.TCPConnector(resolver=resolver, limit=100, limit_per_host=10)
        self._session = aiohttp.ClientSession(
            connector=connector,
            timeout=self._timeout,
            trust_env=False,  # a proxy from the environment would bypass the address check
            auto_decompress=True,
            headers={"User-Agent": USER_AGENT},
        )

    async def close(self) -> None:
        """Close the session and its connections."""
        if self._session is not None:
            await self._session.close()
            self._session = None

    async def request(
        self,
        method: str,
        url: str | URL,
        *,
        headers: Mapping[str, str] | None = None,
        json: Any = None,
        data: bytes | str | None = None,
        params: Mapping[str, str] | list[tuple[str, str]] | None = None,
        timeout: float | None = None,  # noqa: ASYNC109 - per-request total, seconds
        max_response_bytes: int | None = None,
    ) -> OutboundResponse:
        """Send one request; raise OutboundError when it is refused or fails to complete.

        Any HTTP status (including 3xx: redirects are not followed) is a response.
        """
        assert self._session is not None, "outbound client is not open"
        target = check_url(url, allow_private=self.allow_private)
        if params:
            # Appended, never replacing: a query item the URL fixes is not overridden.
            target = target.extend_query(params)
        sent_headers = telemetry.inject(check_headers(headers))  # traceparent, when on
        cap = self.max_response_bytes if max_response_bytes is None else max_response_bytes
        req_timeout = (
            aiohttp.ClientTimeout(total=timeout, connect=min(timeout, self._connect_timeout))
            if timeout is not None
            else self._timeout
        )
        try:
            async with self._session.request(
                method.upper(),
                target,
                headers=sent_headers,
                json=json,
                data=data,
                allow_redirects=False,
                timeout=req_timeout,
            ) as resp:
                body = await _read_capped(resp, cap)
                truncated = len(body) > cap
                return OutboundResponse(
                    status=resp.status,
                    headers=resp.headers,
                    body=body[:cap],
                    truncated=truncated,
                )
        except aiohttp.ClientConnectorError as exc:
            if isinstance(exc.os_error, RefusedAddress):
                raise OutboundError(f"refused: {exc.os_error}", kind="refused") from exc
            message = f"could not connect to {target.host}: {why_not_connected(exc.os_error)}"
            raise OutboundError(message, kind="connect") from exc
        except TimeoutError as exc:
            raise OutboundError("timed out", kind="timeout") from exc
        except aiohttp.InvalidURL as exc:
            raise OutboundError(f"invalid URL: {exc}", kind="invalid") from exc
        except aiohttp.ClientError as exc:
            raise OutboundError(f"request failed: {exc}", kind="failed") from exc
        except ValueError as exc:
            # aiohttp refuses some malformed input (e.g. header values) with ValueError.
            raise OutboundError(f"invalid request: {exc}", kind="invalid") from exc


def why_not_connected(error: OSError) -> str:
    """Why a connection failed, for people: the system's words without its error number."""
    unknown_name = {socket.EAI_NONAME, getattr(socket, "EAI_NODATA", socket.EAI_NONAME)}
    if isinstance(error, socket.gaierror) or error.errno in unknown_name:
        return "no address is known for that name"
    if isinstance(error, ConnectionRefusedError):
        return "the connection was refused (nothing answers on that port)"
    return error.strerror or "the connection failed"
