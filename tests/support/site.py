"""A website the sources' tests serve themselves on 127.0.0.1: pages with ETags and
Last-Modified (answering 304 to conditional requests), sitemaps and sitemap indexes,
robots.txt, redirects (a loop too), a page that never finishes, one of 50 MB, errors. It
counts every request, and the conditional ones, per path."""

from __future__ import annotations

import asyncio
import hashlib
import io
from collections import Counter
from dataclasses import dataclass, field

from aiohttp import web
from aiohttp.test_utils import TestServer

LAST_MODIFIED = "Wed, 21 Oct 2026 07:28:00 GMT"
HTML = "text/html; charset=utf-8"


def html_page(title: str, body: str, links: tuple[str, ...] = (), head: str = "") -> str:
    anchors = "".join(f'<a href="{href}">{href}</a> ' for href in links)
    return (
        f"<html><head><title>{title}</title>{head}</head><body><nav>{anchors}</nav>"
        f"<main><h1>{title}</h1>{body}</main><footer>© Test shop</footer></body></html>"
    )


def docx_bytes(heading: str, text: str) -> bytes:
    import docx

    document = docx.Document()
    document.add_heading(heading, level=1)
    document.add_paragraph(text)
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


@dataclass
class Site:
    """What the site serves; tests change it between syncs."""

    pages: dict[str, tuple[str, bytes]] = field(default_factory=dict)  # path: (type, body)
    sitemaps: dict[str, list[str]] = field(default_factory=dict)  # path: page paths
    indexes: dict[str, list[str]] = field(default_factory=dict)  # path: sitemap paths
    raw: dict[str, tuple[int, str, bytes]] = field(default_factory=dict)  # path: answer as is
    redirects: dict[str, str] = field(default_factory=dict)  # path: Location
    slow: set[str] = field(default_factory=set)  # paths that never finish
    huge: set[str] = field(default_factory=set)  # paths that send 50 MB
    robots: str | None = "User-agent: *\nDisallow: /private/\n"  # None: 404
    robots_status: int = 200
    hits: Counter = field(default_factory=Counter)
    conditional: Counter = field(default_factory=Counter)  # requests with a validator
    base: str = ""

    def page(self, path: str, title: str, body: str, *links: str, head: str = "") -> None:
        self.pages[path] = (HTML, html_page(title, body, links, head).encode())

    def file(self, path: str, content_type: str, body: bytes) -> None:
        self.pages[path] = (content_type, body)

    def url(self, path: str) -> str:
        return self.base + path

    async def handle(self, request: web.Request) -> web.StreamResponse:
        path = request.path_qs
        self.hits[path] += 1
        if "If-None-Match" in request.headers or "If-Modified-Since" in request.headers:
            self.conditional[path] += 1
        if path == "/robots.txt":
            if self.robots is None:
                raise web.HTTPNotFound()
            return web.Response(text=self.robots, status=self.robots_status)
        if path in self.slow:
            await asyncio.sleep(3600)
        if path in self.huge:
            return await _huge(request)
        if path in self.redirects:
            return web.Response(status=301, headers={"Location": self.redirects[path]})
        if path in self.raw:
            status, content_type, body = self.raw[path]
            return web.Response(status=status, body=body, content_type=content_type)
        if path in self.indexes or path in self.sitemaps:
            return web.Response(body=self._sitemap(path), content_type="application/xml")
        if path not in self.pages:
            raise web.HTTPNotFound()
        return self._page(request, *self.pages[path])

    def _page(self, request: web.Request, content_type: str, body: bytes) -> web.Response:
        etag = '"' + hashlib.sha256(body).hexdigest()[:16] + '"'
        if request.headers.get("If-None-Match") == etag:
            return web.Response(status=304, headers={"ETag": etag})
        headers = {"ETag": etag, "Last-Modified": LAST_MODIFIED, "Content-Type": content_type}
        return web.Response(body=body, headers=headers)

    def _sitemap(self, path: str) -> bytes:
        ns = 'xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"'
        if path in self.indexes:
            items = "".join(
                f"<sitemap><loc>{self.url(p)}</loc></sitemap>" for p in self.indexes[path]
            )
            return f'<?xml version="1.0"?><sitemapindex {ns}>{items}</sitemapindex>'.encode()
        items = "".join(f"<url><loc>{self.url(p)}</loc></url>" for p in self.sitemaps[path])
        return f'<?xml version="1.0"?><urlset {ns}>{items}</urlset>'.encode()


async def _huge(request: web.Request) -> web.StreamResponse:
    response = web.StreamResponse(headers={"Content-Type": HTML})
    await response.prepare(request)
    chunk = b"<p>" + b"x" * (64 * 1024) + b"</p>"
    try:
        for _ in range(50 * 16):  # 50 MB
            await response.write(chunk)
    except (ConnectionError, RuntimeError):
        pass  # the client stopped reading at its cap
    return response


async def serve(site: Site) -> TestServer:
    """Serve the site on 127.0.0.1; its `base` is set to the address."""
    app = web.Application()
    app.router.add_route("GET", "/{tail:.*}", site.handle)
    server = TestServer(app, host="127.0.0.1")
    await server.start_server()
    site.base = str(server.make_url("")).rstrip("/")
    return server
