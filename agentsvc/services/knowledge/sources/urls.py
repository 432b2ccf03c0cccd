"""Pages' addresses: normalised (so one page is one row), and kept within the site."""

from __future__ import annotations

from yarl import URL

MAX_URL_LENGTH = 2000


def normalise(raw: str | URL, base: URL | None = None) -> URL | None:
    """The address a page is known by: absolute http(s), host in lower case, no default
    port, no fragment, no user info, `/` for an empty path; None when it is not a page's."""
    try:
        url = URL(raw) if isinstance(raw, str) else raw
        if base is not None and not url.is_absolute():
            url = base.join(url)
    except (ValueError, TypeError):
        return None
    if url.scheme not in ("http", "https") or not url.raw_host or url.user or url.password:
        return None
    try:
        url = url.with_fragment(None)
        if url.explicit_port is not None and url.is_default_port():
            url = url.with_port(None)
        url = url.with_host(url.raw_host.lower().rstrip("."))
        if not url.raw_path:
            url = url.with_path("/")
    except ValueError:
        return None
    if len(str(url)) > MAX_URL_LENGTH:
        return None
    return url


def site_of(url: URL) -> str:
    """What makes two addresses one site: the host (`www.` or not) and the port."""
    host = (url.raw_host or "").lower()
    host = host.removeprefix("www.")
    return f"{host}:{url.port}" if url.explicit_port else host


def same_site(url: URL, start: URL) -> bool:
    """Whether `url` is on the site of `start` (http and https alike)."""
    return site_of(url) == site_of(start)


def path_of(url: URL) -> str:
    """What include and exclude patterns are matched with: the path and the query."""
    return url.raw_path_qs
