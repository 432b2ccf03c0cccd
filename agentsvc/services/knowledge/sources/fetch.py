"""Fetching a site's pages: every request through the guarded outbound client, redirects
followed only within the site, conditional requests, and per site a cap on requests at
once and a pause between two of them."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

from yarl import URL

from agentsvc.outbound import OutboundClient, OutboundError, OutboundResponse
from agentsvc.services.knowledge.sources import urls

MAX_REDIRECTS = 5
MAX_VALIDATOR_LENGTH = 200
ACCEPT = (
    "text/html, application/xhtml+xml, text/markdown, text/plain, application/pdf,"
    " application/vnd.openxmlformats-officedocument.wordprocessingml.document,"
    " application/xml, text/xml;q=0.9, */*;q=0.1"
)


class PageError(Exception):
    """A page (or sitemap, or robots.txt) that could not be fetched; the message is for
    people, `status` the site's answer when it gave one."""

    def __init__(self, message: str, *, status: int | None = None):
        super().__init__(message)
        self.message = message
        self.status = status

    @property
    def gone(self) -> bool:
        """The site says the page is no more (404, 410)."""
        return self.status in (404, 410)


@dataclass(frozen=True, slots=True)
class Validators:
    """What a page's last answer said to ask again with (conditional GET)."""

    etag: str | None = None
    last_modified: str | None = None

    def headers(self) -> dict[str, str]:
        out = {}
        if self.etag:
            out["If-None-Match"] = self.etag
        if self.last_modified:
            out["If-Modified-Since"] = self.last_modified
        return out


@dataclass(frozen=True, slots=True)
class Fetched:
    """A page's answer: where it ended (after redirects), 304 or its body."""

    url: URL
    not_modified: bool
    body: bytes = b""
    content_type: str = ""
    validators: Validators = Validators()


@dataclass(slots=True)
class _Host:
    slots: asyncio.Semaphore
    delay: float
    next_at: float = 0.0
    users: int = 0
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)


@dataclass(frozen=True, slots=True)
class FetchLimits:
    max_bytes: int
    timeout: float
    host_concurrency: int
    host_delay: float


class PageFetcher:
    """The process's fetches of sites' pages, polite to each site (host) whatever the
    number of sources that follow it."""

    def __init__(self, outbound: OutboundClient, limits: FetchLimits):
        self._outbound = outbound
        self.limits = limits
        self._hosts: dict[str, _Host] = {}

    @asynccontextmanager
    async def _turn(self, url: URL, delay: float) -> AsyncIterator[None]:
        """Wait for a slot of the site and for the pause since its last request."""
        key = urls.site_of(url)
        host = self._hosts.get(key)
        if host is None:
            slots = asyncio.Semaphore(self.limits.host_concurrency)
            host = self._hosts[key] = _Host(slots, self.limits.host_delay)
        host.users += 1
        host.delay = max(host.delay, delay)
        try:
            async with host.slots:
                async with host.lock:
                    wait = host.next_at - time.monotonic()
                    if wait > 0:
                        await asyncio.sleep(wait)
                    host.next_at = time.monotonic() + host.delay
                yield
        finally:
            host.users -= 1
            if host.users == 0:
                del self._hosts[key]  # nothing stays for a site nobody fetches

    async def _get(self, url: URL, headers: dict[str, str], delay: float) -> OutboundResponse:
        async with self._turn(url, delay):
            try:
                return await self._outbound.request(
                    "GET",
                    url,
                    headers={"Accept": ACCEPT, **headers},
                    timeout=self.limits.timeout,
                    max_response_bytes=self.limits.max_bytes,
                )
            except OutboundError as exc:
                raise PageError(_outbound_message(exc, self.limits.timeout)) from exc

    async def fetch(
        self, url: URL, start: URL, validators: Validators | None = None, delay: float = 0.0
    ) -> Fetched:
        """GET a page of the site of `start`, following redirects within it; PageError
        when it cannot be had."""
        seen = {str(url)}
        current = url
        headers = validators.headers() if validators else {}
        for _ in range(MAX_REDIRECTS + 1):
            resp = await self._get(current, headers, delay)
            if resp.status in (301, 302, 303, 307, 308):
                current = _redirect_target(resp, current, start, seen)
                continue
            return _answer(resp, current, self.limits.max_bytes)
        raise PageError(f"more than {MAX_REDIRECTS} redirects")


def _redirect_target(resp: OutboundResponse, current: URL, start: URL, seen: set[str]) -> URL:
    location = resp.headers.get("Location", "")
    target = urls.normalise(location, current) if location else None
    if target is None:
        raise PageError(f"the site answered {resp.status} without a usable Location")
    if not urls.same_site(target, start):
        raise PageError(f"redirected off the site, to {target.host} (not followed)")
    if str(target) in seen:
        raise PageError("a redirect loop")
    seen.add(str(target))
    return target


def _answer(resp: OutboundResponse, url: URL, max_bytes: int) -> Fetched:
    if resp.status == 304:
        return Fetched(url, True)
    if resp.status in (404, 410):
        raise PageError(f"the site answered {resp.status}: the page is gone", status=resp.status)
    if not resp.ok:
        raise PageError(f"the site answered {resp.status}", status=resp.status)
    if resp.truncated:
        raise PageError(f"the page is over {max_bytes / 2**20:g} MB")
    validators = Validators(
        _kept(resp.headers.get("ETag")), _kept(resp.headers.get("Last-Modified"))
    )
    return Fetched(url, False, resp.body, resp.headers.get("Content-Type", ""), validators)


def _kept(value: str | None) -> str | None:
    """A validator worth keeping: short (a site's header is stored and sent back)."""
    return value if value and len(value) <= MAX_VALIDATOR_LENGTH else None


def _outbound_message(exc: OutboundError, timeout: float) -> str:
    if exc.kind == "timeout":
        return f"the site did not answer within {timeout:g} s"
    return exc.message
