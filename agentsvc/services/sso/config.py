"""A team's single sign-on settings: what an owner may save, how it is stored (the client
secret sealed), and how it is shown back (the secret masked)."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from agentsvc.errors import ValidationFailed

CALLBACK_PATH = "/api/v1/auth/sso/callback"
DEFAULT_SCOPES = ("openid", "email", "profile")
DEFAULT_GROUPS_CLAIM = "groups"
ROLES = {"admin": "owner", "member": "member"}  # the mapping's words, the team's roles
MAX_DOMAINS = 50
MAX_MAPPINGS = 100
_DOMAIN = re.compile(r"^(?=.{4,253}$)([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z]{2,63}$")
_SCOPE = re.compile(r"^[\x21\x23-\x5b\x5d-\x7e]{1,100}$")  # RFC 6749 scope-token


@dataclass(frozen=True, slots=True)
class OidcSettings:
    """OpenID Connect settings as saved (client secret apart: it is sealed)."""

    issuer: str
    client_id: str
    scopes: tuple[str, ...] = DEFAULT_SCOPES
    groups_claim: str = DEFAULT_GROUPS_CLAIM
    role_mapping: dict[str, str] = field(default_factory=dict)  # group -> admin|member

    def to_json(self) -> str:
        return json.dumps(
            {
                "issuer": self.issuer,
                "clientId": self.client_id,
                "scopes": list(self.scopes),
                "groupsClaim": self.groups_claim,
                "roleMapping": self.role_mapping,
            },
            sort_keys=True,
        )

    @classmethod
    def from_json(cls, text: str) -> OidcSettings:
        data: dict[str, Any] = json.loads(text)
        return cls(
            issuer=data["issuer"],
            client_id=data["clientId"],
            scopes=tuple(data.get("scopes") or DEFAULT_SCOPES),
            groups_claim=data.get("groupsClaim") or DEFAULT_GROUPS_CLAIM,
            role_mapping=dict(data.get("roleMapping") or {}),
        )


@dataclass(frozen=True, slots=True)
class OidcRequest:
    """What an owner sends to save OpenID Connect settings."""

    settings: OidcSettings
    client_secret: str | None  # None: keep the stored one
    domains: tuple[str, ...]
    enforce: bool


def redirect_uri(public_url: str) -> str:
    """The one callback address every team registers with its provider."""
    return public_url.rstrip("/") + CALLBACK_PATH


def checked_issuer(issuer: str, *, allow_http: bool) -> str:
    """The issuer as given (providers compare it exactly), if it is an absolute HTTPS URL
    without query or fragment (HTTP only when private addresses are allowed)."""
    issuer = issuer.strip()
    parts = urlsplit(issuer)
    schemes = ("https", "http") if allow_http else ("https",)
    if parts.scheme not in schemes or not parts.hostname:
        raise ValidationFailed(
            "issuer: must be the provider's https:// address (e.g. https://login.example.com)"
        )
    if parts.query or parts.fragment or parts.username or parts.password:
        raise ValidationFailed("issuer: must have no query, fragment or user information")
    return issuer


def checked_domains(domains: list[str]) -> tuple[str, ...]:
    """The domains lower-cased, without duplicates; each a plain DNS name."""
    cleaned: list[str] = []
    for raw in domains:
        domain = raw.strip().lower().lstrip("@").rstrip(".")
        if not _DOMAIN.match(domain):
            raise ValidationFailed(f"domains: {raw!r} is not a domain name (e.g. example.com)")
        if domain not in cleaned:
            cleaned.append(domain)
    if not cleaned:
        raise ValidationFailed("domains: give at least one e-mail domain, e.g. example.com")
    if len(cleaned) > MAX_DOMAINS:
        raise ValidationFailed(f"domains: at most {MAX_DOMAINS}")
    return tuple(cleaned)


def checked_scopes(scopes: list[str] | None) -> tuple[str, ...]:
    """The scopes to ask for: `openid` first, each a valid scope token."""
    if not scopes:
        return DEFAULT_SCOPES
    cleaned = ["openid"]
    for scope in scopes:
        if not _SCOPE.match(scope):
            raise ValidationFailed(f"scopes: {scope!r} is not a scope name")
        if scope not in cleaned:
            cleaned.append(scope)
    return tuple(cleaned)


def checked_mapping(mapping: dict[str, str] | None) -> dict[str, str]:
    """Group names to "admin" or "member"."""
    mapping = mapping or {}
    if len(mapping) > MAX_MAPPINGS:
        raise ValidationFailed(f"roleMapping: at most {MAX_MAPPINGS} groups")
    for group, role in mapping.items():
        if not group.strip() or len(group) > 200:
            raise ValidationFailed("roleMapping: a group name must have 1 to 200 characters")
        if role not in ROLES:
            raise ValidationFailed(f'roleMapping.{group}: must be "admin" or "member"')
    return dict(mapping)


def role_for(mapping: dict[str, str], groups: tuple[str, ...]) -> str | None:
    """The team role the person's groups give: owner when a group maps to admin, else
    member; None when no mapping is set (roles are then managed in the dashboard)."""
    if not mapping:
        return None
    return "owner" if any(mapping.get(g) == "admin" for g in groups) else "member"


def masked(secret: str | None) -> str | None:
    """A secret as the dashboard shows it: its last four characters."""
    if not secret:
        return None
    return "••••" + secret[-4:] if len(secret) > 8 else "••••"


def domain_of(email: str) -> str:
    """The domain of an address, lower-cased."""
    return email.rpartition("@")[2].strip().lower()
