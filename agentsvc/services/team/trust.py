"""Which origins and callback addresses are trusted: public_url and [auth] trusted_origins."""

from __future__ import annotations

import ipaddress
from urllib.parse import unquote, urlsplit, urlunsplit

from agentsvc.config import Settings

_DEFAULT_PORTS = {"http": 80, "https": 443}


class UntrustedUrl(ValueError):
    """A callback address that is not on a trusted origin (or is ambiguous)."""


def origin_of(url: str) -> str | None:
    """Return `scheme://host[:port]` of an absolute http(s) URL, normalised; else None."""
    try:
        parts = urlsplit(url.strip())
        port = parts.port
    except ValueError:
        return None
    if parts.scheme not in _DEFAULT_PORTS or not parts.hostname:
        return None
    if parts.username is not None or parts.password is not None:
        return None
    host = parts.hostname.lower()
    if ":" in host:
        host = f"[{host}]"
    if port is None or port == _DEFAULT_PORTS[parts.scheme]:
        return f"{parts.scheme}://{host}"
    return f"{parts.scheme}://{host}:{port}"


# The names of this machine's loopback interface a browser may be pointed at.
LOOPBACK_NAMES = ("localhost", "127.0.0.1", "[::1]")


def _loopback_aliases(origin: str | None) -> set[str]:
    """For a loopback origin, the same scheme and port on every loopback name: a browser
    at http://localhost:8080 talks to the same server as one at http://127.0.0.1:8080."""
    if origin is None:
        return set()
    parts = urlsplit(origin)
    host = parts.hostname or ""
    if not _is_loopback(host):
        return set()
    port = f":{parts.port}" if parts.port is not None else ""
    return {f"{parts.scheme}://{name}{port}" for name in LOOPBACK_NAMES}


def trusted_origins(settings: Settings) -> frozenset[str]:
    """The origin of public_url plus every `[auth] trusted_origins` entry; a loopback
    public_url trusts its scheme and port on every loopback name."""
    public = origin_of(settings.server.public_url)
    found = {public} | _loopback_aliases(public)
    found |= {origin_of(origin) for origin in settings.auth.trusted_origins}
    return frozenset(o for o in found if o)


def untrusted_origin_message(settings: Settings, origin: str | None) -> str:
    """Why a browser's request was refused: which address to open instead, and which
    setting would trust the address it came from."""
    public = origin_of(settings.server.public_url) or settings.server.public_url
    came = origin_of(origin) if origin else None
    if came is None or len(came) > 200:
        return (
            "Cross-origin request refused: the page's Origin is not a trusted origin. Open"
            f" {public} (the server's [server] public_url), or list the page's origin in"
            " [auth] trusted_origins"
        )
    return (
        f"Cross-origin request refused: Origin {came} is not a trusted origin. Open {public} (the"
        f' server\'s [server] public_url), or add "{came}" to [auth] trusted_origins'
    )


def is_trusted_origin(settings: Settings, origin: str | None) -> bool:
    """True when `origin` (an Origin header, or any URL) is on a trusted origin."""
    return origin is not None and origin_of(origin) in trusted_origins(settings)


def _is_loopback(host: str) -> bool:
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def loopback_port_mismatch(public_url: str, listener_port: int) -> int | None:
    """The port of a loopback public_url when it differs from the listener's, else None.

    Browsing to the listener then sends an Origin that is not trusted (403) and e-mailed
    links lead elsewhere; a public address on another host (a proxy) is not flagged.
    """
    try:
        parts = urlsplit(public_url)
        port = parts.port or _DEFAULT_PORTS.get(parts.scheme)
    except ValueError:
        return None
    if not parts.hostname or not _is_loopback(parts.hostname) or port in (None, listener_port):
        return None
    return port


def _decoded_forms(url: str) -> list[str]:
    forms = [url]
    for _ in range(3):  # %252f%252f and friends
        forms.append(unquote(forms[-1]))
    return forms


def safe_callback(settings: Settings, url: str) -> str:
    """Return the absolute callback address, or raise UntrustedUrl.

    A path (`/dashboard`) is taken relative to public_url. Protocol-relative and
    backslash tricks (`//evil`, `/\\evil`, `/%2f%2fevil`) are refused outright, as is any
    control character, rather than guessing how a browser would read them.
    """
    if not url or len(url) > 2048:
        raise UntrustedUrl("must be a path or an address on a trusted origin")
    for form in _decoded_forms(url):
        if "\\" in form or any(ord(c) < 32 or ord(c) == 127 for c in form):
            raise UntrustedUrl("may not contain backslashes or control characters")
        if form.startswith("//"):
            raise UntrustedUrl("may not start with //")
    if url.startswith("/"):
        public = origin_of(settings.server.public_url)
        if public is None:
            raise UntrustedUrl("[server] public_url is not an http(s) address")
        return public + url
    if not is_trusted_origin(settings, url):
        raise UntrustedUrl(
            "must be a path or an address on a trusted origin ([server] public_url, or one"
            " of [auth] trusted_origins)"
        )
    return url


def location_for(settings: Settings, url: str) -> str:
    """Where to send a browser: a checked callback on public_url's own origin goes as a
    path, so the browser stays on the address it came by (http://localhost:PORT as well as
    http://127.0.0.1:PORT, where its session cookie is); any other origin as it is."""
    public = origin_of(settings.server.public_url)
    if public is None or origin_of(url) != public:
        return url
    parts = urlsplit(url)
    path = parts.path or "/"
    if path.startswith("//"):  # never a protocol-relative address
        return url
    return urlunsplit(("", "", path, parts.query, parts.fragment))
