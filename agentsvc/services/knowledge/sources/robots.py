"""A site's robots.txt, obeyed for the service's user agent (RFC 9309, with `protego`)."""

from __future__ import annotations

from dataclasses import dataclass

from protego import Protego
from yarl import URL

from agentsvc.outbound import USER_AGENT
from agentsvc.services.knowledge.sources.fetch import PageError, PageFetcher

MAX_ROBOTS_BYTES = 512 * 1024  # RFC 9309: at least 500 KiB is read


@dataclass(frozen=True, slots=True)
class Robots:
    """What the site lets the service fetch, and how long to wait between requests."""

    rules: Protego | None  # None: everything is allowed (no robots.txt)
    crawl_delay: float = 0.0

    def allows(self, url: URL) -> bool:
        return self.rules is None or self.rules.can_fetch(str(url), USER_AGENT)


async def load(fetcher: PageFetcher, start: URL, max_delay: float) -> Robots:
    """The robots.txt of the site of `start`. Missing (4xx): everything allowed; a server
    error or no answer: PageError, as RFC 9309 says to fetch nothing then."""
    url = start.with_path("/robots.txt").with_query(None)
    try:
        got = await fetcher.fetch(url, start)
    except PageError as exc:
        if exc.status is None:  # no answer at all: the site's own address is the matter
            raise PageError(f"url: {exc.message}") from exc
        if 400 <= exc.status < 500:
            return Robots(None)
        raise PageError(f"robots.txt: {exc.message}; nothing is fetched until it answers") from exc
    text = got.body[:MAX_ROBOTS_BYTES].decode("utf-8", errors="replace")
    rules = Protego.parse(text)
    delay = rules.crawl_delay(USER_AGENT) or 0.0
    return Robots(rules, min(float(delay), max_delay))
