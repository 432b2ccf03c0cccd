"""The dashboard: its page at `/` and its static assets under `/dashboard/`, cached by ETag.

The page loads one script and one style sheet: the bundle that scripts/build_dashboard.sh
builds from the source modules with esbuild (minified, committed in static/dashboard/bundle/),
gzipped once when first asked for. A bundle older than its sources (a contributor editing a
page) is not sent: the page then loads the source modules as they are, and a warning says so.

The page itself needs no credential; every call it makes goes to the public API with the
`agentsvc_session` cookie, exactly as an external client would.
"""

from __future__ import annotations

import asyncio
import gzip
import hashlib
import json
import logging
import mimetypes
import re
from dataclasses import dataclass
from pathlib import Path

import zopfli.gzip
from aiohttp import web

from agentsvc.api.routing import Call, RouteTable
from agentsvc.errors import NotFound

routes = RouteTable("dashboard")
log = logging.getLogger(__name__)

STATIC_DIR = Path(__file__).resolve().parent.parent / "static" / "dashboard"
BUNDLE_DIR = "bundle"  # under STATIC_DIR: scripts/build_dashboard.sh's output
BUNDLED = ("app.js", "app.css")  # the bundle's files, sent in place of the sources of that name
STALE_BUNDLE = (
    "the dashboard's sources changed since its bundle was built: run scripts/build_dashboard.sh"
)
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
ZOPFLI_ITERATIONS = 1  # 15 iterations save 80 bytes of the bundle's 63 KB, at 3 times the time
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
    """The page loads the script and style sheet of this release (a browser keeps them until
    the next release). `modules`: the source modules it loads while the bundle is stale,
    asked for at once (their relative imports stay inside the release): without that, it
    learns of each import only once the module above it arrived, a waterfall seven deep."""
    prefix = f"{ASSET_PREFIX}{release}/".encode()
    links = b"".join(
        b'<link rel="modulepreload" href="' + prefix + m.encode() + b'">\n'
        for m in modules
        if m != "app.js"
    )
    page = page.replace(_ENTRY, links + _ENTRY)
    return page.replace(b'"' + ASSET_PREFIX.encode() + b"app.", b'"' + prefix + b"app.")


def source_digest(directory: Path = STATIC_DIR) -> str:
    """A digest of the dashboard's sources (its top-level scripts and sheets), computed as
    scripts/build_dashboard.sh writes it into the bundle's manifest: the sha256 of sha256sum's
    lines for them, in the byte order of their names."""
    names = sorted(
        (p.name for p in directory.iterdir() if p.is_file() and p.suffix in (".js", ".css")),
        key=str.encode,
    )
    lines = "".join(
        f"{hashlib.sha256((directory / n).read_bytes()).hexdigest()}  {n}\n"
        for n in names
        if not n.startswith(".")
    )
    return hashlib.sha256(lines.encode()).hexdigest()


def built_bundle(directory: Path = STATIC_DIR) -> dict[str, bytes] | None:
    """The bundle's files by name, if it was built from the sources as they are now."""
    folder = directory / BUNDLE_DIR
    try:
        built_from = json.loads((folder / "manifest.json").read_bytes())["sources"]
        files = {name: (folder / name).read_bytes() for name in BUNDLED}
    except (OSError, ValueError, KeyError, TypeError):  # never built, or half-built
        return None
    return files if built_from == source_digest(directory) else None


def load_assets(directory: Path = STATIC_DIR) -> dict[str, Asset]:
    """Read the dashboard once, every file gzipped, with its ETag. The page loads the bundle;
    a bundle older than its sources is left out (with a warning), and the page then loads
    the source modules, naming every one for the browser to fetch at once. Each source file
    is also served by its own name (tests import single modules; a reader may look)."""
    bodies = {
        path.name: path.read_bytes()
        for path in sorted(directory.iterdir())
        if path.is_file() and not path.name.startswith(".")
    }
    bundle = built_bundle(directory)
    if bundle is None:
        log.warning(STALE_BUNDLE)
    bodies.update(bundle or {})
    release = _release(bodies)
    if "index.html" in bodies:
        modules = [] if bundle else _module_graph(bodies)
        bodies["index.html"] = _page(bodies["index.html"], modules, release)
    page_loads = {"index.html", *(bundle or ())}
    assets: dict[str, Asset] = {}
    for name, body in bodies.items():
        suffix = Path(name).suffix
        content_type = _TYPES.get(suffix) or (
            mimetypes.guess_type(name)[0] or "application/octet-stream"
        )
        # Weak: the same content is sent gzipped or not, so the bytes differ by encoding.
        etag = 'W/"' + hashlib.sha256(body).hexdigest()[:32] + '"'
        # Zopfli writes ordinary gzip, 3 % smaller than zlib's best, for about 0.1 s of
        # processor for the page and the bundle: paid once, off the event loop (`_asset`).
        # The sources, which the page loads only while the bundle is stale, take zlib's
        # best: 0.34 s of Zopfli more per process would buy nobody anything.
        if name in page_loads:
            packed = zopfli.gzip.compress(body, numiterations=ZOPFLI_ITERATIONS)
        else:
            packed = gzip.compress(body, 9, mtime=0)
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
