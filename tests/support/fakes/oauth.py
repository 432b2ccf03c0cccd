"""A fake OAuth 2 identity provider (GitHub- and Google-shaped endpoints) on 127.0.0.1.

It checks what a real provider checks: the client credentials, the redirect URI, and the
PKCE verifier against the challenge given at /authorize; codes work once.
"""

from __future__ import annotations

import base64
import hashlib
import secrets
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode

from aiohttp import web

CLIENT_ID = "fake-client"
CLIENT_SECRET = "fake-secret"


@dataclass
class FakeOAuth:
    """Provider whose user has `profile` (userinfo) and `emails` (GitHub's /user/emails)."""

    profile: dict[str, Any] = field(
        default_factory=lambda: {"login": "octo", "name": "Octo Cat", "email": None}
    )
    emails: list[dict[str, Any]] = field(
        default_factory=lambda: [
            {"email": "octo@example.com", "primary": True, "verified": True},
        ]
    )
    base: str = ""  # where the test server listens, once started
    codes: dict[str, dict[str, str]] = field(default_factory=dict)
    tokens: set[str] = field(default_factory=set)
    authorize_requests: list[dict[str, str]] = field(default_factory=list)
    token_requests: list[dict[str, str]] = field(default_factory=list)
    app: web.Application = field(init=False)

    def __post_init__(self) -> None:
        self.app = web.Application()
        self.app.router.add_get("/authorize", self._authorize)
        self.app.router.add_post("/token", self._token)
        self.app.router.add_get("/user", self._user)
        self.app.router.add_get("/user/emails", self._emails)

    def settings(self, base: str) -> dict[str, str]:
        """The `[oauth.NAME]` table that points the app at this provider."""
        return {
            "client_id": CLIENT_ID,
            "client_secret": CLIENT_SECRET,
            "authorize_url": f"{base}/authorize",
            "token_url": f"{base}/token",
            "userinfo_url": f"{base}/user",
            "emails_url": f"{base}/user/emails",
        }

    async def _authorize(self, request: web.Request) -> web.Response:
        query = dict(request.query)
        self.authorize_requests.append(query)
        if query.get("client_id") != CLIENT_ID or query.get("code_challenge_method") != "S256":
            return web.json_response({"error": "invalid_request"}, status=400)
        code = secrets.token_urlsafe(16)
        self.codes[code] = {
            "challenge": query["code_challenge"],
            "redirect_uri": query["redirect_uri"],
        }
        location = query["redirect_uri"] + "?" + urlencode({"code": code, "state": query["state"]})
        raise web.HTTPFound(location)

    async def _token(self, request: web.Request) -> web.Response:
        form = dict(await request.post())
        self.token_requests.append(form)
        grant = self.codes.pop(str(form.get("code")), None)  # a code works once
        if (
            grant is None
            or form.get("client_id") != CLIENT_ID
            or form.get("client_secret") != CLIENT_SECRET
            or form.get("redirect_uri") != grant["redirect_uri"]
            or form.get("grant_type") != "authorization_code"
        ):
            return web.json_response({"error": "invalid_grant"}, status=400)
        digest = hashlib.sha256(str(form.get("code_verifier", "")).encode()).digest()
        if base64.urlsafe_b64encode(digest).rstrip(b"=").decode() != grant["challenge"]:
            return web.json_response({"error": "invalid_grant", "detail": "PKCE"}, status=400)
        token = secrets.token_urlsafe(16)
        self.tokens.add(token)
        return web.json_response({"access_token": token, "token_type": "bearer"})

    def _authorized(self, request: web.Request) -> bool:
        header = request.headers.get("Authorization", "")
        return header.startswith("Bearer ") and header[7:] in self.tokens

    async def _user(self, request: web.Request) -> web.Response:
        if not self._authorized(request):
            return web.json_response({"message": "Bad credentials"}, status=401)
        return web.json_response(self.profile)

    async def _emails(self, request: web.Request) -> web.Response:
        if not self._authorized(request):
            return web.json_response({"message": "Bad credentials"}, status=401)
        return web.json_response(self.emails)
