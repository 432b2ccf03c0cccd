"""The dashboard: its page at `/` and its static assets under `/dashboard/`, cached by ETag.

Scripts and style sheets are minified (tdewolff/minify) and gzipped once, when first asked
for: the package keeps the readable source, browsers download the smallest honest form.

The page itself needs no credential; every call it makes goes to the public API with the
`agentsvc_session` cookie, exactly as an external client would.
"""

from __future__ import annotations

import asyncio
import hashlib
import mimetypes
import re
from dataclasses import dataclass
from pathlib import Path

import zopfli.gzip
from aiohttp import web

from agentsvc.api.routing import Call, RouteTable
from agentsvc.errors import NotFound

routes = RouteTable("dashboard")

STATIC_DIR = Path(__file__).resolve().parent.parent / "static" / "dashboard"
ASSET_PREFIX = "/dashboard/"

_TYPES = {
    ".html": "text/html",
    ".js": "text/javascript",
    ".css": "text/css",
    ".svg": "image/svg+xml",
}
# Revalidate every time (a cheap 304): the assets are not fingerprinted, so an upgrade must
# show at once, and a stale app.js beside a new index.html would break the page.
CACHE_CONTROL = "no-cache"
# Under /dashboard/<release>/ the same URL always has the same bytes: kept, never asked again.
CACHE_IMMUTABLE = "public, max-age=31536000, immutable"
RELEASE_LENGTH = 16
ZOPFLI_ITERATIONS = 1  # more iterations save 70 bytes in all, at twice the time
SECURITY_HEADERS = {
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
    "X-Frame-Options": "DENY",
    # Scripts and styles only from this origin; the preview iframe is same-origin too.
    "Content-Security-Policy": (
        "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; "
        "connect-src 'self'; frame-src 'self'; frame-ancestors 'none'; base-uri 'none'; "
        "form-action 'self'"
    ),
}


# tdewolff/minify parses each script and style sheet and writes it back smaller: comments and
# layout go, local names are shortened (a module's exports and imports keep theirs).
# tests/test_dashboard_budget.py has V8 compile every result and compares its imports and
# exports with its source's; the browser tests run the dashboard as served.
_MINIFY = {".js": "text/javascript", ".css": "text/css"}


@dataclass(frozen=True, slots=True)
class Asset:
    body: bytes
    gzipped: bytes  # compressed once at load, sent to clients that accept gzip
    content_type: str
    etag: str
    release: str  # the version of the set it belongs to (its URLs under /dashboard/<release>/)


# A module's static imports of its siblings (`import ... from "./x.js"`, `import "./x.js"`).
_IMPORT = re.compile(rb"""\bimport\b[^"';]*?["']\./([a-z0-9][a-z0-9-]*\.js)["']""")
_ENTRY = b'<script type="module" src="/dashboard/app.js"></script>'


def _module_graph(sources: dict[str, bytes], entry: str = "app.js") -> list[str]:
    """Every module `entry` imports, directly or not, in a stable order."""
    seen: list[str] = []
    todo = [entry]
    while todo:
        name = todo.pop()
        if name in seen or name not in sources:
            continue
        seen.append(name)
        todo.extend(sorted(m.decode() for m in _IMPORT.findall(sources[name])))
    return seen


def _release(bodies: dict[str, bytes]) -> str:
    """The version of this set of scripts and styles: a digest of them all."""
    digest = hashlib.sha256()
    for name in sorted(bodies):
        if name != "index.html":
            digest.update(name.encode() + b"\0" + hashlib.sha256(bodies[name]).digest())
    return digest.hexdigest()[:RELEASE_LENGTH]


def _page(page: bytes, modules: list[str], release: str) -> bytes:
    """The page loads the scripts and styles of this release (their relative imports stay
    inside it, so a browser keeps them until the next release) and asks for every module
    at once: without that, it learns of each import only once the module above it
    arrived, a waterfall seven levels deep."""
    prefix = f"{ASSET_PREFIX}{release}/".encode()
    links = b"".join(
        b'<link rel="modulepreload" href="' + prefix + m.encode() + b'">\n'
        for m in modules
        if m != "app.js"
    )
    page = page.replace(_ENTRY, links + _ENTRY)
    return page.replace(b'"' + ASSET_PREFIX.encode() + b"app.", b'"' + prefix + b"app.")


def load_assets(directory: Path = STATIC_DIR) -> dict[str, Asset]:
    """Read every file of the dashboard directory once: minified, gzipped, with its ETag;
    the page names every module the dashboard imports, for the browser to fetch at once."""
    # Imported here, not with the module: it starts Go's runtime, whose threads a process
    # forked after the import lacks (the tests fork servers from a warm process), and a
    # call into it there never returns.
    import minify

    bodies: dict[str, bytes] = {}
    for path in sorted(directory.iterdir()):
        if not path.is_file() or path.name.startswith("."):
            continue
        body = path.read_bytes()
        if media_type := _MINIFY.get(path.suffix):
            body = minify.string(media_type, body.decode("utf-8")).encode("utf-8")
        bodies[path.name] = body
    release = _release(bodies)
    if "index.html" in bodies:
        bodies["index.html"] = _page(bodies["index.html"], _module_graph(bodies), release)
    assets: dict[str, Asset] = {}
    for name, body in bodies.items():
        suffix = Path(name).suffix
        content_type = _TYPES.get(suffix) or (
            mimetypes.guess_type(name)[0] or "application/octet-stream"
        )
        # Weak: the same content is sent gzipped or not, so the bytes differ by encoding.
        etag = 'W/"' + hashlib.sha256(body).hexdigest()[:32] + '"'
        # Zopfli writes ordinary gzip, 2 % smaller than zlib's best, at about 0.2 s of
        # processor for the whole dashboard: paid once, off the event loop (`_asset`).
        packed = zopfli.gzip.compress(body, numiterations=ZOPFLI_ITERATIONS)
        assets[name] = Asset(body, packed, content_type, etag, release)
    return assets


_assets: dict[str, Asset] | None = None


async def _asset(name: str) -> Asset:
    """An asset by name; the first request of the process reads them all, in a thread (two
    first requests at once may both read them: the same bytes, no lock across event loops)."""
    global _assets
    if _assets is None:
        _assets = await asyncio.to_thread(load_assets)
    asset = _assets.get(name)
    if asset is None:
        raise NotFound("No such file")
    return asset


def _serve(request: web.Request, asset: Asset, release: str | None = None) -> web.Response:
    """The asset, gzipped when the client takes it; kept for a year when asked for by its
    release's URL (which a new release changes), else revalidated every time."""
    immutable = release is not None and release == asset.release
    headers = {
        "ETag": asset.etag,
        "Cache-Control": CACHE_IMMUTABLE if immutable else CACHE_CONTROL,
        "Vary": "Accept-Encoding",
        **SECURITY_HEADERS,
    }
    if asset.etag in request.headers.get("If-None-Match", ""):
        return web.Response(status=304, headers=headers)
    body = asset.body
    if "gzip" in request.headers.get("Accept-Encoding", "").lower():
        body = asset.gzipped
        headers["Content-Encoding"] = "gzip"
    charset = "utf-8" if asset.content_type.startswith(("text/", "image/svg")) else None
    return web.Response(
        body=body, content_type=asset.content_type, charset=charset, headers=headers
    )


@routes.get(
    "/",
    auth="public",
    below_api=False,
    media_type="text/html",
    response_headers=("ETag", "Cache-Control"),
)
async def get_dashboard(call: Call):
    """The dashboard page (sign-in, first-run setup and every management page)."""
    return _serve(call.request, await _asset("index.html"))


_ASSET = dict(auth="public", below_api=False, response_headers=("ETag", "Cache-Control"))
_NAME = "{name:[a-z0-9][a-z0-9-]*}"


@routes.get(ASSET_PREFIX + _NAME + ".js", media_type="text/javascript", **_ASSET)
async def get_dashboard_script(call: Call):
    """A script module of the dashboard."""
    return _serve(call.request, await _asset(call.params["name"] + ".js"))


@routes.get(ASSET_PREFIX + _NAME + ".css", media_type="text/css", **_ASSET)
async def get_dashboard_style(call: Call):
    """A style sheet of the dashboard."""
    return _serve(call.request, await _asset(call.params["name"] + ".css"))


_RELEASE = "{release:[0-9a-f]+}/"  # any: only the current release's is kept long


@routes.get(ASSET_PREFIX + _RELEASE + _NAME + ".js", media_type="text/javascript", **_ASSET)
async def get_release_script(call: Call):
    """A script module of a release of the dashboard (the page names its release). A page
    left open across an upgrade gets today's module, revalidated, not cached for a year."""
    return _serve(call.request, await _asset(call.params["name"] + ".js"), call.params["release"])


@routes.get(ASSET_PREFIX + _RELEASE + _NAME + ".css", media_type="text/css", **_ASSET)
async def get_release_style(call: Call):
    """A style sheet of a release of the dashboard."""
    return _serve(call.request, await _asset(call.params["name"] + ".css"), call.params["release"])


@routes.get(
    "/accept-invitation",
    auth="public",
    below_api=False,
    media_type="text/html",
    response_headers=("ETag", "Cache-Control"),
)
async def get_accept_invitation(call: Call):
    """The page an invitation e-mail links to (`?token=`); it accepts through the public API."""
    return _serve(call.request, await _asset("index.html"))
