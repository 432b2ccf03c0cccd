"""One sync of a source: its pages found (a sitemap, or links from a start page), each
fetched with a conditional request, and only the pages whose text changed indexed again.

Every page found is a row carrying the sync's number before it is fetched, and every
page fetched says so, so a sync that a stopped process left goes on where it was. Pages
the site says are gone (404, 410) are removed at once; those the sync did not find again
are removed at its end (for a crawl, only when no page failed: a page that failed may
hide the links to them).
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
from dataclasses import dataclass

from yarl import URL

from agentsvc import cpu
from agentsvc.db import Database
from agentsvc.services.knowledge import extraction
from agentsvc.services.knowledge.sources import extract, robots, sitemap, urls
from agentsvc.services.knowledge.sources.fetch import (
    Fetched,
    PageError,
    PageFetcher,
    Validators,
)
from agentsvc.services.knowledge.sources.globs import Globs
from agentsvc.services.knowledge.sources.pages import Changed, PageWriter
from agentsvc.store import sources as store
from agentsvc.store.sources import PageResult, Source, SourcePage

log = logging.getLogger(__name__)
# A page's error when our own code failed on it: the details are in the server's log.
FAULT = "an unexpected fault on the server (its log has the details)"

EXTRACT_TIMEOUT_SECONDS = 60.0  # a page's text is waited for this long (the size is capped)
FOUND_BATCH = 200  # pages recorded as found per write transaction
REMOVE_BATCH = 200
LARGE_BODY_BYTES = 256 * 1024


class SyncFailed(Exception):
    """A sync that could not go on (no sitemap, robots.txt unanswered, start page failed);
    the message is for people."""

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message


@dataclass(frozen=True, slots=True)
class SyncTools:
    """What a sync works with: the fetcher, the writer of pages, the database to read."""

    db: Database
    fetcher: PageFetcher
    writer: PageWriter
    max_crawl_delay: float


def _sha(data: bytes | str) -> str:
    return hashlib.sha256(data.encode() if isinstance(data, str) else data).hexdigest()


class Crawl:
    """The work of one sync of one source."""

    def __init__(self, tools: SyncTools, source: Source, max_pages: int):
        self._tools = tools
        self._source = source
        start = urls.normalise(source.url)
        if start is None:  # checked when the source was saved
            raise SyncFailed("url: not an http or https address")
        self._start = start
        self._globs = Globs(source.include, source.exclude)
        self._limit = max_pages
        self._seen: set[str] = set()
        self._queue: asyncio.Queue[str] = asyncio.Queue()
        self._robots = robots.Robots(None)
        self._failures = 0
        self._start_error: str | None = None

    def _keep(self, url: URL) -> bool:
        return (
            urls.same_site(url, self._start)
            and self._globs.allows(urls.path_of(url))
            and self._robots.allows(url)
        )

    async def run(self) -> None:
        """Find, fetch and index the pages; SyncFailed when the sync cannot be done."""
        source, fetcher = self._source, self._tools.fetcher
        try:
            self._robots = await robots.load(fetcher, self._start, self._tools.max_crawl_delay)
            found = await store.found_urls(self._tools.db.reader, source.id, source.generation)
            self._seen.update(found)
            if source.type == "sitemap":
                listed = await sitemap.discover(fetcher, self._start, self._keep, self._limit)
                await self._add(listed, queue=False)
            else:
                if not self._robots.allows(self._start):
                    raise SyncFailed("url: the site's robots.txt does not let agentsvc fetch it")
                await self._add([str(self._start)], queue=False)
        except PageError as exc:
            message = exc.message
            raise SyncFailed(
                message if message.startswith(("url:", "robots")) else f"url: {message}"
            ) from exc
        for url in await store.to_fetch(self._tools.db.reader, source.id, source.generation):
            self._queue.put_nowait(url)
        await self._fetch_all()
        if self._start_error is not None:
            raise SyncFailed(f"url: {self._start_error}")
        if source.type == "sitemap" or self._failures == 0:
            await self._remove_unfound()

    async def _fetch_all(self) -> None:
        workers = [
            asyncio.ensure_future(self._work())
            for _ in range(self._tools.fetcher.limits.host_concurrency)
        ]
        try:
            await self._queue.join()
        finally:
            for worker in workers:
                worker.cancel()
            await asyncio.gather(*workers, return_exceptions=True)

    async def _work(self) -> None:
        while True:
            url = await self._queue.get()
            try:
                await self._page(url)
            except asyncio.CancelledError:
                raise
            except Exception:  # noqa: BLE001 (one page's fault ends that page only)
                log.exception("source %s: page %s failed", self._source.id, url)
                self._failures += 1
                failed = PageResult("failed", error=FAULT)
                await self._tools.writer.record(self._source, url, failed)
            finally:
                self._queue.task_done()

    async def _add(self, found: list[str], *, queue: bool, beyond_limit: bool = False) -> None:
        """Record pages as found by this sync (up to the limit); queue the new ones."""
        new = [u for u in dict.fromkeys(found) if u not in self._seen]
        if not beyond_limit:
            new = new[: max(0, self._limit - len(self._seen))]
        self._seen.update(new)
        source = self._source
        for start in range(0, len(new), FOUND_BATCH):
            async with self._tools.db.write() as tx:
                if await store.get(tx, source.id) is None:
                    raise SyncFailed("the source was deleted")
                await store.found(
                    tx, source.id, source.generation, new[start : start + FOUND_BATCH]
                )
        if queue:
            for url in new:
                self._queue.put_nowait(url)

    def _failed(self, url: str, page: SourcePage, message: str) -> PageResult:
        self._failures += 1
        if url == str(self._start):
            self._start_error = message
        return PageResult(
            "failed", page.etag, page.last_modified, page.body_hash, page.text_hash, message
        )

    async def _page(self, url: str) -> None:
        tools, source = self._tools, self._source
        page = await store.page(tools.db.reader, source.id, url)
        if page is None:
            return  # the source was deleted meanwhile
        # Without its document (deleted by someone) the page must come whole, not as 304.
        asked = Validators(page.etag, page.last_modified) if page.document_id else None
        try:
            got = await tools.fetcher.fetch(URL(url), self._start, asked, self._robots.crawl_delay)
        except PageError as exc:
            if exc.gone and url != str(self._start):
                await tools.writer.remove(source, url)
            else:
                await tools.writer.record(source, url, self._failed(url, page, exc.message))
            return
        if got.not_modified:
            await self._unchanged(page, page.body_hash, asked or Validators())
            return
        final = urls.normalise(got.url)
        if final is not None and str(final) != url:
            await self._duplicate(url, final, f"redirects to {final}")
            return
        # Hashing megabytes holds a CPU: off the event loop when the body is large.
        large = len(got.body) > LARGE_BODY_BYTES
        body_hash = await cpu.run(_sha, got.body) if large else _sha(got.body)
        if body_hash == page.body_hash and page.document_id:
            await self._unchanged(page, body_hash, got.validators)
            return
        await self._read(url, page, got, body_hash)

    async def _unchanged(self, page: SourcePage, body_hash: str | None, sent: Validators) -> None:
        """A page as it was: its row says it was fetched; its links are followed again."""
        result = PageResult("ok", sent.etag, sent.last_modified, body_hash, page.text_hash)
        await self._tools.writer.record(self._source, page.url, result)
        if self._source.type == "crawl" and page.links:
            await self._add([u for u in page.links if self._allowed(u)], queue=True)

    def _allowed(self, url: str) -> bool:
        parsed = urls.normalise(url)
        return parsed is not None and self._keep(parsed)

    async def _duplicate(self, url: str, other: URL, why: str) -> None:
        """A page that is another one (redirected, or naming a canonical address): it makes
        no document of its own; the other page is fetched in its stead."""
        await self._tools.writer.drop_document(
            self._source, url, PageResult("duplicate", error=why)
        )
        if self._keep(other):
            # The page a source names (its start) is always had, wherever it moved.
            await self._add([str(other)], queue=True, beyond_limit=url == str(self._start))

    async def _read(self, url: str, page: SourcePage, got: Fetched, body_hash: str) -> None:
        writer, source = self._tools.writer, self._source
        body, content_type, sent = got.body, got.content_type, got.validators
        fmt = extract.format_of(content_type, URL(url).path)
        if fmt is None:
            shown = content_type.split(";")[0].strip() or "unknown"
            await writer.record(source, url, self._failed(url, page, f"unsupported type {shown}"))
            return
        await cpu.load_modules(*extract.MODULES.get(fmt, ()))
        try:
            text = await asyncio.wait_for(
                cpu.run(extract.extract, body, fmt, extract.charset_of(content_type)),
                EXTRACT_TIMEOUT_SECONDS,
            )
        except (extraction.ExtractionError, TimeoutError) as exc:
            why = str(exc) if str(exc) else "reading the page took too long"
            await writer.record(source, url, self._failed(url, page, why))
            return
        canonical = urls.normalise(text.canonical, URL(url)) if text.canonical else None
        if (
            canonical is not None
            and urls.same_site(canonical, self._start)
            and str(canonical) != url
        ):
            await self._duplicate(url, canonical, f"the same page as {canonical}")
            return
        links = self._links(url, text) if source.type == "crawl" else None
        if links:
            await self._add(links, queue=True)
        if not text.text.strip():
            await writer.record(
                source, url, self._failed(url, page, "the page has no text to index")
            )
            return
        text_hash = (
            await cpu.run(_sha, text.text) if len(text.text) > LARGE_BODY_BYTES else _sha(text.text)
        )
        changed = text_hash != page.text_hash or page.document_id is None
        result = PageResult(
            "ok", sent.etag, sent.last_modified, body_hash, text_hash, changed=changed, links=links
        )
        if changed:
            await writer.write(source, Changed(url, text, len(body), result))
        else:
            await writer.record(source, url, result)

    def _links(self, url: str, text: extract.PageText) -> list[str]:
        """The page's links to pages of the site the source keeps, normalised, each once."""
        base = urls.normalise(text.base, URL(url)) if text.base else URL(url)
        found: dict[str, None] = {}
        for href in text.links:
            link = urls.normalise(href, base or URL(url))
            if link is not None and self._keep(link):
                found[str(link)] = None
        return list(found)

    async def _remove_unfound(self) -> None:
        source, db = self._source, self._tools.db
        while gone := await store.unfound(db.reader, source.id, source.generation, REMOVE_BATCH):
            for url in gone:
                await self._tools.writer.remove(source, url)
