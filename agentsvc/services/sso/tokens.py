"""An OpenID Connect ID token, verified: signature against the provider's published key
(asymmetric algorithms the provider advertises only), issuer, audience, times with a
bounded skew, nonce; then the claims a sign-in needs."""

from __future__ import annotations

import hmac
import unicodedata
from dataclasses import dataclass
from typing import Any

import jwt

from agentsvc.services.sso.discovery import ASYMMETRIC, Discovery, ProviderDirectory

CLOCK_SKEW_SECONDS = 60


class TokenRefused(Exception):
    """The ID token cannot be trusted or does not allow this sign-in; says why, for people."""


@dataclass(frozen=True, slots=True)
class Identity:
    """Who the provider says signed in."""

    subject: str
    email: str
    name: str
    groups: tuple[str, ...]
    expires_at: int  # the token's exp (epoch seconds)


async def verify_id_token(
    token: str,
    *,
    provider: Discovery,
    directory: ProviderDirectory,
    client_id: str,
    nonce: str,
) -> dict[str, Any]:
    """The token's claims once every check passed; TokenRefused otherwise."""
    try:
        header = jwt.get_unverified_header(token)
    except jwt.InvalidTokenError as exc:
        raise TokenRefused("the ID token is malformed") from exc
    alg = header.get("alg")
    if alg not in ASYMMETRIC or alg not in provider.algorithms:
        raise TokenRefused(f"the ID token's algorithm {alg!r} is not one the provider signs with")
    kid = header.get("kid")
    key = await directory.signing_key(provider.jwks_uri, kid if isinstance(kid, str) else None)
    try:
        claims = jwt.decode(
            token,
            key=key.key,
            algorithms=[alg],
            audience=client_id,
            issuer=provider.issuer,
            leeway=CLOCK_SKEW_SECONDS,
            options={"require": ["iss", "aud", "exp", "iat", "sub"]},
        )
    except jwt.ExpiredSignatureError as exc:
        raise TokenRefused("the ID token has expired") from exc
    except jwt.ImmatureSignatureError as exc:
        raise TokenRefused("the ID token is not valid yet") from exc
    except jwt.InvalidIssuerError as exc:
        raise TokenRefused("the ID token is from another issuer") from exc
    except jwt.InvalidAudienceError as exc:
        raise TokenRefused("the ID token is for another client") from exc
    except jwt.InvalidTokenError as exc:
        # PyJWT's own words name its internals: a person gets the plain reason.
        raise TokenRefused("the ID token's signature or claims are not valid") from exc
    audience = claims["aud"]
    if isinstance(audience, list) and len(audience) > 1 and claims.get("azp") != client_id:
        raise TokenRefused("the ID token is for another client")
    got = claims.get("nonce")
    if not isinstance(got, str) or not hmac.compare_digest(got, nonce):
        raise TokenRefused("the ID token was not issued for this sign-in (nonce)")
    return claims


def identity_of(claims: dict[str, Any], groups_claim: str) -> Identity:
    """The verified e-mail, name and groups of verified claims; TokenRefused without a
    verified e-mail address."""
    email = claims.get("email")
    if not isinstance(email, str) or "@" not in email or len(email) > 254:
        raise TokenRefused("the provider sent no e-mail address (ask for the email scope)")
    if claims.get("email_verified") is not True:
        raise TokenRefused("the provider has not verified this e-mail address")
    raw = claims.get(groups_claim)
    if isinstance(raw, str):
        raw = [raw]
    groups = tuple(g for g in raw if isinstance(g, str)) if isinstance(raw, list) else ()
    name = claims.get("name") if isinstance(claims.get("name"), str) else ""
    # Shown to visitors as the member's name: no control characters or line breaks.
    name = "".join(c for c in name if unicodedata.category(c)[0] not in "CZ" or c == " ")
    return Identity(
        subject=str(claims["sub"]),
        email=email.strip().lower(),
        name=" ".join(name.split())[:80],
        groups=groups,
        expires_at=int(claims["exp"]),
    )
