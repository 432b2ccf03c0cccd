"""An OpenID provider's discovery document and signing keys, read through the outbound
guard and kept for a while in small bounded caches."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Any

import jwt

from agentsvc.outbound import OutboundClient, OutboundError

DISCOVERY_TTL_SECONDS = 3600.0
JWKS_TTL_SECONDS = 600.0
# An unknown key id refreshes the keys (the provider rotated them), at most this often.
JWKS_REFRESH_SECONDS = 30.0
CACHE_MAX_ENTRIES = 256
FETCH_TIMEOUT_SECONDS = 10.0
MAX_DOCUMENT_BYTES = 256 * 1024
# Signature algorithms we accept: asymmetric only, never HS* (a shared secret) or none.
ASYMMETRIC = frozenset(
    {"RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"}
)


class ProviderError(Exception):
    """The provider could not be read or answered something unusable; says what, for people."""


@dataclass(frozen=True, slots=True)
class Discovery:
    """What we use of a provider's discovery document."""

    issuer: str
    authorization_endpoint: str
    token_endpoint: str
    jwks_uri: str
    algorithms: tuple[str, ...]  # asymmetric ones the provider signs ID tokens with
    auth_method: str  # client_secret_basic or client_secret_post
    userinfo_endpoint: str | None = None


def discovery_url(issuer: str) -> str:
    """Where an issuer publishes its discovery document (OpenID Connect Discovery 1.0)."""
    return issuer.rstrip("/") + "/.well-known/openid-configuration"


def _auth_method(doc: dict[str, Any]) -> str:
    # RFC 8414: absent means client_secret_basic.
    methods = doc.get("token_endpoint_auth_methods_supported") or ["client_secret_basic"]
    if "client_secret_basic" in methods:
        return "client_secret_basic"
    if "client_secret_post" in methods:
        return "client_secret_post"
    raise ProviderError(
        "the provider accepts neither client_secret_basic nor client_secret_post at its"
        " token endpoint"
    )


def parse_discovery(issuer: str, doc: Any) -> Discovery:
    """Check a discovery document against the configured issuer; ProviderError if unusable."""
    if not isinstance(doc, dict):
        raise ProviderError("its discovery document is not a JSON object")
    if doc.get("issuer") != issuer:
        raise ProviderError(
            f"its discovery document names the issuer {doc.get('issuer')!r}, not {issuer!r}"
            " (give the issuer exactly as the provider writes it)"
        )
    for field in ("authorization_endpoint", "token_endpoint", "jwks_uri"):
        if not isinstance(doc.get(field), str) or not doc[field]:
            raise ProviderError(f"its discovery document has no {field}")
    advertised = doc.get("id_token_signing_alg_values_supported") or ["RS256"]
    algorithms = tuple(a for a in advertised if a in ASYMMETRIC)
    if not algorithms:
        raise ProviderError("it signs ID tokens with no asymmetric algorithm (RS256, ES256...)")
    challenge = doc.get("code_challenge_methods_supported")
    if challenge is not None and "S256" not in challenge:
        raise ProviderError("it does not support PKCE with S256")
    return Discovery(
        issuer=issuer,
        authorization_endpoint=doc["authorization_endpoint"],
        token_endpoint=doc["token_endpoint"],
        jwks_uri=doc["jwks_uri"],
        algorithms=algorithms,
        auth_method=_auth_method(doc),
        userinfo_endpoint=doc.get("userinfo_endpoint")
        if isinstance(doc.get("userinfo_endpoint"), str)
        else None,
    )


class ProviderDirectory:
    """Discovery documents and key sets by address, fetched through the outbound guard."""

    def __init__(self, outbound: OutboundClient):
        self._outbound = outbound
        self._discovery: dict[str, tuple[float, Discovery]] = {}
        self._keys: dict[str, tuple[float, jwt.PyJWKSet]] = {}

    async def _get_json(self, url: str, what: str) -> Any:
        try:
            response = await self._outbound.request(
                "GET",
                url,
                headers={"Accept": "application/json"},
                timeout=FETCH_TIMEOUT_SECONDS,
                max_response_bytes=MAX_DOCUMENT_BYTES,
            )
        except OutboundError as exc:
            raise ProviderError(f"its {what} at {url} could not be read: {exc.message}") from exc
        if response.status != 200 or response.truncated:
            raise ProviderError(f"its {what} at {url} answered HTTP {response.status}")
        try:
            return json.loads(response.body)
        except ValueError as exc:
            raise ProviderError(f"its {what} at {url} is not JSON") from exc

    async def discover(self, issuer: str, *, fresh: bool = False) -> Discovery:
        """The issuer's discovery, from the cache unless stale or `fresh`."""
        now = time.monotonic()
        hit = self._discovery.get(issuer)
        if hit is not None and hit[0] > now and not fresh:
            return hit[1]
        found = parse_discovery(issuer, await self._get_json(discovery_url(issuer), "discovery"))
        _bounded(self._discovery)[issuer] = (now + DISCOVERY_TTL_SECONDS, found)
        return found

    async def signing_key(self, jwks_uri: str, kid: str | None) -> jwt.PyJWK:
        """The key of this id (the only key when the token names none); ProviderError when
        the provider publishes no such key, even after fetching its keys again."""
        now = time.monotonic()
        hit = self._keys.get(jwks_uri)
        if hit is None or hit[0] <= now:
            key = _pick(await self._fetch_keys(jwks_uri), kid)
        else:
            key = _pick(hit[1], kid)
            fetched_at = hit[0] - JWKS_TTL_SECONDS
            if key is None and fetched_at + JWKS_REFRESH_SECONDS < now:
                key = _pick(await self._fetch_keys(jwks_uri), kid)  # rotated keys
        if key is None:
            raise ProviderError("the ID token is signed with a key the provider does not publish")
        return key

    async def _fetch_keys(self, jwks_uri: str) -> jwt.PyJWKSet:
        doc = await self._get_json(jwks_uri, "key set")
        try:
            keys = jwt.PyJWKSet.from_dict(doc)
        except (jwt.PyJWKSetError, jwt.InvalidKeyError, TypeError, ValueError) as exc:
            raise ProviderError(f"its key set at {jwks_uri} has no usable key") from exc
        _bounded(self._keys)[jwks_uri] = (time.monotonic() + JWKS_TTL_SECONDS, keys)
        return keys


def _pick(keys: jwt.PyJWKSet, kid: str | None) -> jwt.PyJWK | None:
    signing = [k for k in keys.keys if getattr(k, "public_key_use", None) in (None, "sig")]
    if kid is None:
        return signing[0] if len(signing) == 1 else None
    return next((k for k in signing if k.key_id == kid), None)


def _bounded(cache: dict) -> dict:
    if len(cache) >= CACHE_MAX_ENTRIES:
        cache.clear()
    return cache
