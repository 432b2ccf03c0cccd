"""The dashboard over HTTP: its page and assets, first-run setup, and that it uses only the API."""

from __future__ import annotations

import gzip
import re

from agentsvc.api import all_endpoints
from agentsvc.api.dashboard import BUNDLE_DIR, STATIC_DIR, built_bundle, load_assets
from tests.support.accounts import SESSION_COOKIE, create_user, session
from tests.support.errors import assert_error
from tests.support.settings import PUBLIC_ORIGIN

OWNER = {"email": "Owner@Example.com", "password": "correct horse battery", "name": "Olivia"}


async def test_page_is_served_without_credentials_with_etag_and_csp(client):
    resp = await client.get("/")
    assert resp.status == 200
    assert resp.content_type == "text/html"
    body = await resp.text()
    release = re.search(r'<script type="module" src="/dashboard/([0-9a-f]{16})/app\.js">', body)
    assert release, body
    assert resp.headers["Cache-Control"] == "no-cache"
    assert "script-src 'self'" in resp.headers["Content-Security-Policy"]
    assert resp.headers["X-Content-Type-Options"] == "nosniff"
    etag = resp.headers["ETag"]
    again = await client.get("/", headers={"If-None-Match": etag})
    assert again.status == 304
    assert await again.read() == b""
    assert again.headers["ETag"] == etag


async def test_every_asset_is_served_with_its_type(client):
    types = {".js": "text/javascript", ".css": "text/css"}
    names = sorted(p.name for p in STATIC_DIR.iterdir() if p.suffix in types)
    assert {"app.js", "app.css", "api.js", "dom.js", "charts.js"} <= set(names)
    assert {p.name for p in STATIC_DIR.iterdir()} == {*names, "index.html", BUNDLE_DIR}
    bundle = built_bundle() or {}
    for name in names:
        resp = await client.get(f"/dashboard/{name}")
        assert resp.status == 200, name
        assert resp.content_type == types[name[name.rindex(".") :]], name
        # app.js and app.css are the bundle's (while it is current); the rest their sources.
        sent = bundle.get(name) or (STATIC_DIR / name).read_bytes()
        assert await resp.read() == sent == load_assets()[name].body
        cached = await client.get(
            f"/dashboard/{name}", headers={"If-None-Match": resp.headers["ETag"]}
        )
        assert cached.status == 304


async def test_assets_are_sent_gzipped_to_clients_that_accept_it(client):
    plain = await client.get("/dashboard/app.js", headers={"Accept-Encoding": "identity"})
    assert "Content-Encoding" not in plain.headers
    packed = await client.get(
        "/dashboard/app.js", headers={"Accept-Encoding": "gzip, deflate"}, auto_decompress=False
    )
    assert packed.headers["Content-Encoding"] == "gzip"
    assert packed.headers["Vary"] == "Accept-Encoding"
    raw = await packed.read()
    assert gzip.decompress(raw) == await plain.read()
    assert len(raw) < len(await plain.read())
    assert packed.headers["ETag"] == plain.headers["ETag"]


async def test_unknown_asset_and_traversal_are_not_found(client):
    for path in (
        "/dashboard/nope.js",
        "/dashboard/index.html",
        "/dashboard/..%2Fapp.py",
        "/dashboard/%2e%2e%2fschema.sql",
        "/dashboard/..%2f..%2fdashboard.js",
        "/dashboard/App.js",
        "/dashboard/bundle/app.js",
        "/dashboard/bundle/manifest.json",
    ):
        resp = await client.get(path)
        await assert_error(resp, 404, "NOT_FOUND")


async def test_invitation_link_opens_the_dashboard_page(client):
    resp = await client.get("/accept-invitation?token=abc")
    assert resp.status == 200
    assert "/app.js" in await resp.text()


async def test_a_releases_files_are_kept_and_the_page_names_every_module(client):
    """The page loads its release's files, which never change at that address (kept for a
    year): the bundle alone or, while it is older than the sources, every source module,
    which it then preloads; the unversioned address and a past release's are revalidated
    each time."""
    page = await (await client.get("/")).text()
    release = re.search(r"/dashboard/([0-9a-f]{16})/app\.js", page).group(1)
    assert f'<link rel="stylesheet" href="/dashboard/{release}/app.css">' in page
    preloaded = set(
        re.findall(rf'rel="modulepreload" href="/dashboard/{release}/([a-z0-9-]+\.js)"', page)
    )
    modules = {p.name for p in STATIC_DIR.glob("*.js")}
    assert preloaded == (set() if built_bundle() else modules - {"app.js"})
    kept = await client.get(f"/dashboard/{release}/dom.js")
    assert kept.status == 200
    assert kept.headers["Cache-Control"] == "public, max-age=31536000, immutable"
    assert await kept.read() == load_assets()["dom.js"].body
    style = await client.get(f"/dashboard/{release}/app.css")
    assert style.headers["Cache-Control"] == "public, max-age=31536000, immutable"
    for path in ("/dashboard/dom.js", "/dashboard/0000000000000000/dom.js"):
        resp = await client.get(path)
        assert resp.status == 200 and resp.headers["Cache-Control"] == "no-cache", path


async def test_first_run_creates_the_owner_once_and_signs_in(client):
    state = await client.get("/api/v1/setup")
    assert await state.json() == {"data": {"needsOwner": True}, "error": None}

    resp = await client.post("/api/v1/setup", json=OWNER, headers={"Origin": PUBLIC_ORIGIN})
    assert resp.status == 201, await resp.text()
    body = await resp.json()
    assert body["error"] is None
    assert body["data"]["user"]["email"] == "owner@example.com"
    assert body["data"]["user"]["name"] == "Olivia"
    cookie = resp.headers["Set-Cookie"]
    assert cookie.startswith(f"{SESSION_COOKIE}=") and "HttpOnly" in cookie
    token = resp.cookies[SESSION_COOKIE].value
    client.session.cookie_jar.clear()

    me = await client.get("/api/v1/auth/session", headers=session(token))
    assert me.status == 200
    context = await client.get("/api/v1/team/context", headers=session(token))
    assert (await context.json())["isOwner"] is True

    state = await client.get("/api/v1/setup")
    assert (await state.json())["data"] == {"needsOwner": False}
    again = await client.post("/api/v1/setup", json={**OWNER, "email": "second@example.com"})
    await assert_error(again, 403, "FORBIDDEN", "already exists")

    # The owner signs in with the password chosen at setup.
    signed = await client.post(
        "/api/v1/auth/sign-in/email",
        json={"email": "owner@example.com", "password": OWNER["password"]},
    )
    assert signed.status == 200


async def test_setup_is_refused_once_any_user_exists(client):
    await create_user(client, "cli@example.com")
    state = await client.get("/api/v1/setup")
    assert (await state.json())["data"] == {"needsOwner": False}
    resp = await client.post("/api/v1/setup", json=OWNER)
    await assert_error(resp, 403, "FORBIDDEN", "already exists")


async def test_setup_validates_its_body_and_origin(client):
    cases = [
        ({**OWNER, "password": "short"}, "password"),
        ({**OWNER, "email": "not-an-address"}, "email"),
        ({"password": OWNER["password"]}, "email"),
        ({**OWNER, "role": "owner"}, "role"),
    ]
    for body, field in cases:
        resp = await client.post("/api/v1/setup", json=body)
        await assert_error(resp, 400, "VALIDATION_ERROR", field)
    resp = await client.post("/api/v1/setup", json=OWNER, headers={"Origin": "https://evil.test"})
    await assert_error(resp, 403, "FORBIDDEN", "Origin")
    state = await client.get("/api/v1/setup")
    assert (await state.json())["data"] == {"needsOwner": True}  # nothing half-created


async def test_session_from_setup_changes_state_only_from_a_trusted_origin(client):
    resp = await client.post("/api/v1/setup", json=OWNER)
    token = resp.cookies[SESSION_COOKIE].value
    client.session.cookie_jar.clear()
    foreign = await client.post(
        "/api/v1/agents", json={"name": "Evil"}, headers=session(token, "https://evil.test")
    )
    await assert_error(foreign, 403, "FORBIDDEN", "Origin")
    missing = await client.post("/api/v1/agents", json={"name": "x"}, headers=session(token, None))
    await assert_error(missing, 403, "FORBIDDEN")
    ok = await client.post("/api/v1/agents", json={"name": "Support"}, headers=session(token))
    assert ok.status == 201


def _api_calls_in_dashboard() -> set[tuple[str, str]]:
    """(method, path pattern) of every API call written in the dashboard's scripts."""
    call = re.compile(r"\b(get|post|put|patch|del|chatStream)\(\s*(`[^`]*`|\"[^\"]*\"|\{)")
    found: set[tuple[str, str]] = set()
    for path in STATIC_DIR.glob("*.js"):
        for match in call.finditer(path.read_text()):
            verb, literal = match.groups()
            if verb == "chatStream":
                found.add(("POST", "/chat"))
                continue
            if literal == "{":
                continue
            text = literal[1:-1]
            if not text.startswith("/"):
                continue
            text = re.sub(r"\$\{qs\([^}]*\}\)?\}?", "", text)
            text = re.sub(r"\?.*$", "", text)
            text = re.sub(r"\$\{[^}]*\}", "{param}", text)
            method = {"del": "DELETE"}.get(verb, verb.upper())
            found.add((method, text))
    return found


def test_dashboard_calls_only_documented_api_endpoints():
    routes = {(e.method, e.full_path) for e in all_endpoints()}
    patterns = {
        (method, re.compile("^" + re.sub(r"\{[^}]+\}", "[^/]+", path) + "$"))
        for method, path in routes
    }
    calls = _api_calls_in_dashboard()
    assert len(calls) >= 30, calls
    for method, path in calls:
        concrete = "/api/v1" + path.replace("{param}", "x")
        assert any(m == method and p.match(concrete) for m, p in patterns), (method, path)
    # Every call goes through the public API base: no private back door.
    assert not any(e.full_path.startswith("/dashboard/api") for e in all_endpoints())


def test_dashboard_inserts_data_as_text_only():
    for path in STATIC_DIR.glob("*.js"):
        source = path.read_text()
        for banned in ("innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval("):
            assert banned not in source, (path.name, banned)


async def test_setup_attempts_are_rate_limited_like_sign_in(make_client):
    client = await make_client(auth={"sign_in_per_minute_ip": 2})
    for _ in range(2):
        resp = await client.post("/api/v1/setup", json={**OWNER, "password": "short"})
        await assert_error(resp, 400, "VALIDATION_ERROR", "password")
    # Validation failures cost no token (refused before the limiter); real attempts do.
    first = await client.post("/api/v1/setup", json=OWNER)
    assert first.status == 201
    for _ in range(2):
        resp = await client.post("/api/v1/setup", json=OWNER)
    await assert_error(resp, 429, "RATE_LIMITED")
    assert int(resp.headers["Retry-After"]) >= 1
