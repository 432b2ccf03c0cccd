"""The pages a sitemap lists, following a sitemap index (XML, gzipped or not), within caps
on sitemaps read and pages kept, and with an XML parser that loads nothing from outside."""

from __future__ import annotations

import zlib
from collections.abc import Callable
from dataclasses import dataclass

from lxml import etree
from yarl import URL

from agentsvc import cpu
from agentsvc.services.knowledge.sources import urls
from agentsvc.services.knowledge.sources.fetch import PageError, PageFetcher

MAX_SITEMAPS = 50  # sitemaps read for one sync (an index and the sitemaps it lists)
_GZIP = b"\x1f\x8b"


@dataclass(frozen=True, slots=True)
class Listed:
    """A sitemap's content: the pages it lists, or the sitemaps (an index)."""

    pages: list[str]
    sitemaps: list[str]


def _gunzip(raw: bytes, max_bytes: int) -> bytes:
    inflate = zlib.decompressobj(16 + zlib.MAX_WBITS)
    try:
        out = inflate.decompress(raw, max_bytes + 1)
    except zlib.error as exc:
        raise PageError("the sitemap is not valid gzip") from exc
    if len(out) > max_bytes:
        raise PageError(f"the sitemap is over {max_bytes / 2**20:g} MB once unzipped")
    return out


def parse(raw: bytes, max_bytes: int) -> Listed:
    """Read a sitemap or sitemap index; PageError when it is not XML of either kind."""
    if raw.startswith(_GZIP):
        raw = _gunzip(raw, max_bytes)
    parser = etree.XMLParser(
        resolve_entities=False, no_network=True, load_dtd=False, huge_tree=False
    )
    try:
        root = etree.fromstring(raw, parser)
    except etree.XMLSyntaxError as exc:
        line, column = exc.position  # where a person looking at the file finds the fault
        raise PageError(f"the sitemap is not XML (at line {line}, column {column})") from exc
    if root is None:
        raise PageError("the sitemap is not XML (it is empty)")
    kind = etree.QName(root).localname
    if kind not in ("urlset", "sitemapindex"):
        raise PageError(f"the sitemap is XML but not a sitemap (its root is <{kind}>)")
    locs = [
        (el.text or "").strip()
        for el in root.iter("{*}loc")
        if etree.QName(el.getparent()).localname in ("url", "sitemap")
    ]
    return Listed(locs, []) if kind == "urlset" else Listed([], locs)


async def discover(
    fetcher: PageFetcher, start: URL, keep: Callable[[URL], bool], limit: int
) -> list[str]:
    """The pages the sitemap at `start` lists (through its index), those `keep` accepts,
    normalised and each once, at most `limit`."""
    queue, read = [start], 0
    found: dict[str, None] = {}
    while queue and read < MAX_SITEMAPS and len(found) < limit:
        url = queue.pop(0)
        read += 1
        got = await fetcher.fetch(url, start)
        try:
            listed = await cpu.run(parse, got.body, fetcher.limits.max_bytes)
        except PageError as exc:
            raise PageError(f"{url}: {exc.message}") from exc
        for loc in listed.sitemaps:
            nested = urls.normalise(loc, url)
            if nested is not None and urls.same_site(nested, start):
                queue.append(nested)
        for loc in listed.pages:
            page = urls.normalise(loc, url)
            if page is not None and urls.same_site(page, start) and keep(page):
                found[str(page)] = None
                if len(found) >= limit:
                    break
    return list(found)
