"""The certified OpenID provider (`oidc-provider` from npm, tests/support/oidc/provider.mjs)
on 127.0.0.1, a browser that signs in through its forms, and a forging token endpoint put
in front of it for the token-level attacks."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import re
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field
from html import unescape
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urljoin, urlsplit

import aiohttp
import jwt
from aiohttp import web
from aiohttp.test_utils import TestServer
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from tests.support.settings import PUBLIC_ORIGIN

HERE = Path(__file__).parent / "oidc"
CALLBACK = f"{PUBLIC_ORIGIN}/api/v1/auth/sso/callback"
CLIENT_ID = "agentsvc-tests"
CLIENT_SECRET = "s3cret-of-the-test-client-9876"  # noqa: S105 (a test secret)
POST_CLIENT_ID = "agentsvc-tests-post"  # authenticates with client_secret_post
KID = "test-key-1"
INSTALL = "npm install --prefix tests/support/oidc --no-audit --no-fund --no-package-lock"


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


@dataclass
class OpenIdProvider:
    """The running provider: its issuer, its signing key, the claims file."""

    issuer: str
    key: rsa.RSAPrivateKey
    claims_file: Path
    proc: subprocess.Popen

    def set_claims(self, login: str, **claims: Any) -> None:
        """Claims the account signed in as `login` gets from now on (over the defaults)."""
        current = json.loads(self.claims_file.read_text()) if self.claims_file.exists() else {}
        current[login] = claims
        self.claims_file.write_text(json.dumps(current))

    def sign(self, claims: dict[str, Any], **header: Any) -> str:
        """An ID token signed with the provider's own key (RS256)."""
        return jwt.encode(claims, self.key, algorithm="RS256", headers={"kid": KID, **header})

    def public_pem(self) -> bytes:
        return self.key.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )


def unsigned(claims: dict[str, Any]) -> str:
    """An `alg: none` token."""
    header = _b64(json.dumps({"alg": "none", "typ": "JWT", "kid": KID}).encode())
    return f"{header}.{_b64(json.dumps(claims).encode())}."


def hs256_with(secret: bytes, claims: dict[str, Any]) -> str:
    """An HS256 token whose HMAC key is `secret` (e.g. the provider's public key: the RS/HS
    confusion attack)."""
    header = _b64(json.dumps({"alg": "HS256", "typ": "JWT", "kid": KID}).encode())
    body = f"{header}.{_b64(json.dumps(claims).encode())}"
    mac = hmac.new(secret, body.encode(), hashlib.sha256).digest()
    return f"{body}.{_b64(mac)}"


def start_provider(
    tmp: Path, redirect_uri: str = CALLBACK, *, conform: bool = False
) -> OpenIdProvider:
    """Start provider.mjs with a fresh RSA key and the test clients (redirecting to
    `redirect_uri`); wait until it listens. `conform`: the scopes' claims (e-mail, name)
    only in userinfo, not in the ID token."""
    if not (HERE / "node_modules" / "oidc-provider").is_dir():
        raise RuntimeError(f"oidc-provider is not installed: run `{INSTALL}`")
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    private = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(key))
    private |= {"kid": KID, "use": "sig", "alg": "RS256"}
    base = {
        "client_secret": CLIENT_SECRET,
        "redirect_uris": [redirect_uri],
        "grant_types": ["authorization_code"],
        "response_types": ["code"],
    }
    clients = [
        {**base, "client_id": CLIENT_ID, "token_endpoint_auth_method": "client_secret_basic"},
        {**base, "client_id": POST_CLIENT_ID, "token_endpoint_auth_method": "client_secret_post"},
    ]
    setup = tmp / "oidc-setup.json"
    setup.write_text(json.dumps({"jwks": {"keys": [private]}, "clients": clients}))
    claims = tmp / "oidc-claims.json"
    claims.write_text("{}")
    proc = subprocess.Popen(
        ["node", str(HERE / "provider.mjs")],
        env={
            "OIDC_CONFORM": "1" if conform else "0",
            "OIDC_SETUP_FILE": str(setup),
            "OIDC_CLAIMS_FILE": str(claims),
            "PATH": "/usr/bin:/bin",
        },
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()
    match = re.match(r"listening (\d+)", line)
    if match is None:
        proc.kill()
        raise RuntimeError("oidc-provider did not start: " + line + proc.stderr.read())
    return OpenIdProvider(f"http://127.0.0.1:{match.group(1)}", key, claims, proc)


def stop_provider(provider: OpenIdProvider) -> None:
    provider.proc.terminate()
    try:
        provider.proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        provider.proc.kill()


_FORM = re.compile(r"<form[^>]*action=\"([^\"]+)\"[^>]*>(.*?)</form>", re.S | re.I)
_INPUT = re.compile(r"<input([^>]*)>", re.I)
_ATTR = re.compile(r"(\w+)=\"([^\"]*)\"")


def _form(html: str) -> tuple[str, dict[str, str]]:
    match = _FORM.search(html)
    assert match is not None, html[:2000]
    fields: dict[str, str] = {}
    for raw in _INPUT.findall(match.group(2)):
        attrs = dict(_ATTR.findall(raw))
        if "name" in attrs:
            fields[attrs["name"]] = unescape(attrs.get("value", ""))
    return unescape(match.group(1)), fields


async def sign_in_at_provider(authorize_url: str, login: str) -> dict[str, str]:
    """Play a person at the provider: follow its redirects, fill its login form (any
    password) and its consent form; return the query sent back to our callback."""
    jar = aiohttp.CookieJar(unsafe=True)  # cookies of an IP-address host
    async with aiohttp.ClientSession(cookie_jar=jar) as browser:
        url, method, data = authorize_url, "GET", None
        for _ in range(12):
            async with browser.request(method, url, data=data, allow_redirects=False) as resp:
                body = await resp.text()
                if resp.status in (302, 303):
                    url = urljoin(url, resp.headers["Location"])
                    method, data = "GET", None
                    if url.startswith(CALLBACK):
                        return {k: v[0] for k, v in parse_qs(urlsplit(url).query).items()}
                    continue
                assert resp.status == 200, f"{resp.status} {body[:2000]}"
                action, fields = _form(body)
                if "login" in fields or 'name="login"' in body:
                    fields |= {"login": login, "password": "any"}
                url, method, data = urljoin(url, action), "POST", fields
    raise AssertionError("the provider never sent the browser back")


Forge = Callable[[dict[str, Any]], str]


@dataclass
class ForgingFront:
    """An issuer of its own in front of the real provider: its discovery is the provider's
    with its own issuer and token endpoint; its token endpoint has the provider exchange the
    code (client authentication and PKCE checked there), then answers an ID token that
    `forge` makes from the real one's claims (re-signed with the provider's key, issuer
    set to the front's, unless forge decides otherwise)."""

    provider: OpenIdProvider
    issuer: str = ""
    forge: Forge | None = None
    auth_methods: list[str] | None = None  # token_endpoint_auth_methods_supported, if set
    seen: list[str] = field(default_factory=list)  # the ID tokens it answered

    def app(self) -> web.Application:
        app = web.Application()
        app.router.add_get("/.well-known/openid-configuration", self._discovery)
        app.router.add_post("/token", self._token)
        return app

    async def _discovery(self, request: web.Request) -> web.Response:
        async with aiohttp.ClientSession() as http:
            async with http.get(self.provider.issuer + "/.well-known/openid-configuration") as r:
                doc = await r.json()
        doc |= {"issuer": self.issuer, "token_endpoint": self.issuer + "/token"}
        if self.auth_methods is not None:
            doc["token_endpoint_auth_methods_supported"] = self.auth_methods
        return web.json_response(doc)

    async def _token(self, request: web.Request) -> web.Response:
        form = await request.post()
        headers = {k: v for k, v in request.headers.items() if k.lower() == "authorization"}
        async with aiohttp.ClientSession() as http:
            async with http.post(
                self.provider.issuer + "/token", data=dict(form), headers=headers
            ) as r:
                tokens = await r.json()
                if r.status != 200:
                    return web.json_response(tokens, status=r.status)
        claims = jwt.decode(tokens["id_token"], options={"verify_signature": False})
        claims["iss"] = self.issuer
        token = self.forge(claims) if self.forge else self.provider.sign(claims)
        self.seen.append(token)
        return web.json_response({**tokens, "id_token": token})


async def start_front(provider: OpenIdProvider) -> tuple[ForgingFront, TestServer]:
    """Serve a ForgingFront on 127.0.0.1."""
    front = ForgingFront(provider)
    server = TestServer(front.app(), host="127.0.0.1")
    await server.start_server()
    front.issuer = str(server.make_url("")).rstrip("/")
    return front, server
