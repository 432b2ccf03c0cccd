"""A team's SAML 2.0 settings: the identity provider's metadata read safely (no DTD or
external entity, no network fetch, bounded size), the attribute names, and the addresses
an owner pastes into the provider (entity id, ACS URL, metadata URL)."""

from __future__ import annotations

import base64
import binascii
import json
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit
from xml.etree.ElementTree import Element  # noqa: S405 (the type only; parsing is defusedxml)
from xml.sax.saxutils import quoteattr  # noqa: S406 (escaping, not parsing)

import defusedxml.ElementTree as safe_xml
from cryptography import x509

from agentsvc.errors import ValidationFailed

MAX_METADATA_CHARS = 256 * 1024
MAX_CERTIFICATES = 4
MD = "urn:oasis:names:tc:SAML:2.0:metadata"
DS = "http://www.w3.org/2000/09/xmldsig#"
REDIRECT = "urn:oasis:names:tc:SAML:2.0:bindings:HTTP-Redirect"
POST = "urn:oasis:names:tc:SAML:2.0:bindings:HTTP-POST"
DEFAULT_EMAIL_ATTRIBUTE = "email"
DEFAULT_NAME_ATTRIBUTE = "name"
DEFAULT_GROUPS_ATTRIBUTE = "groups"
_BAD = "idpMetadataXml: "


@dataclass(frozen=True, slots=True)
class SamlSettings:
    """SAML settings as saved: what was read from the provider's metadata, the metadata
    itself (shown back to the owner), the attribute names and the role mapping."""

    idp_entity_id: str
    sso_url: str
    certificates: tuple[str, ...]  # base64 DER, the provider's signing certificates
    metadata_xml: str
    email_attribute: str = DEFAULT_EMAIL_ATTRIBUTE
    name_attribute: str = DEFAULT_NAME_ATTRIBUTE
    groups_attribute: str = DEFAULT_GROUPS_ATTRIBUTE
    role_mapping: dict[str, str] = field(default_factory=dict)

    def to_json(self) -> str:
        return json.dumps(
            {
                "idpEntityId": self.idp_entity_id,
                "ssoUrl": self.sso_url,
                "certificates": list(self.certificates),
                "metadataXml": self.metadata_xml,
                "emailAttribute": self.email_attribute,
                "nameAttribute": self.name_attribute,
                "groupsAttribute": self.groups_attribute,
                "roleMapping": self.role_mapping,
            },
            sort_keys=True,
        )

    @classmethod
    def from_json(cls, text: str) -> SamlSettings:
        data: dict[str, Any] = json.loads(text)
        return cls(
            idp_entity_id=data["idpEntityId"],
            sso_url=data["ssoUrl"],
            certificates=tuple(data["certificates"]),
            metadata_xml=data["metadataXml"],
            email_attribute=data.get("emailAttribute") or DEFAULT_EMAIL_ATTRIBUTE,
            name_attribute=data.get("nameAttribute") or DEFAULT_NAME_ATTRIBUTE,
            groups_attribute=data.get("groupsAttribute") or DEFAULT_GROUPS_ATTRIBUTE,
            role_mapping=dict(data.get("roleMapping") or {}),
        )


@dataclass(frozen=True, slots=True)
class SpAddresses:
    """What the owner pastes into the provider for one team."""

    entity_id: str
    acs_url: str
    metadata_url: str


def sp_addresses(public_url: str, team_id: str) -> SpAddresses:
    """The team's service provider addresses; the entity id is the metadata URL."""
    base = f"{public_url.rstrip('/')}/api/v1/auth/saml/{team_id}"
    return SpAddresses(f"{base}/metadata", f"{base}/acs", f"{base}/metadata")


def sp_metadata(addresses: SpAddresses) -> str:
    """Our service provider metadata: signed assertions wanted, the ACS by HTTP-POST."""
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        f'<md:EntityDescriptor xmlns:md="{MD}" entityID={quoteattr(addresses.entity_id)}>'
        '<md:SPSSODescriptor AuthnRequestsSigned="false" WantAssertionsSigned="true"'
        ' protocolSupportEnumeration="urn:oasis:names:tc:SAML:2.0:protocol">'
        "<md:NameIDFormat>urn:oasis:names:tc:SAML:1.1:nameid-format:emailAddress"
        "</md:NameIDFormat>"
        f'<md:AssertionConsumerService Binding="{POST}"'
        f' Location={quoteattr(addresses.acs_url)} index="0" isDefault="true"/>'
        "</md:SPSSODescriptor></md:EntityDescriptor>\n"
    )


def idp_metadata(settings: SamlSettings) -> str:
    """The provider's metadata as pysaml2 is given it: only what was checked and saved."""
    keys = "".join(
        f'<md:KeyDescriptor use="signing"><ds:KeyInfo><ds:X509Data><ds:X509Certificate>'
        f"{cert}</ds:X509Certificate></ds:X509Data></ds:KeyInfo></md:KeyDescriptor>"
        for cert in settings.certificates
    )
    return (
        f'<md:EntityDescriptor xmlns:md="{MD}" xmlns:ds="{DS}"'
        f" entityID={quoteattr(settings.idp_entity_id)}>"
        '<md:IDPSSODescriptor WantAuthnRequestsSigned="false"'
        ' protocolSupportEnumeration="urn:oasis:names:tc:SAML:2.0:protocol">'
        f'{keys}<md:SingleSignOnService Binding="{REDIRECT}"'
        f" Location={quoteattr(settings.sso_url)}/>"
        "</md:IDPSSODescriptor></md:EntityDescriptor>"
    )


def parse_metadata(text: str, *, allow_http: bool) -> tuple[str, str, tuple[str, ...]]:
    """The provider's entity id, its HTTP-Redirect sign-in address and signing
    certificates, read from its metadata XML; ValidationFailed saying what is wrong."""
    if len(text) > MAX_METADATA_CHARS:
        raise ValidationFailed(f"{_BAD}at most {MAX_METADATA_CHARS // 1024} KB")
    try:
        root = safe_xml.fromstring(text.encode("utf-8"), forbid_dtd=True)
    except Exception as exc:  # defusedxml's and expat's errors alike: not usable XML
        raise ValidationFailed(
            f"{_BAD}this is not well-formed XML without a DTD; paste the metadata file"
            " your provider offers for download"
        ) from exc
    idps = [e for e in root.iter(f"{{{MD}}}EntityDescriptor") if _idp_of(e) is not None]
    if len(idps) != 1:
        raise ValidationFailed(
            f"{_BAD}must describe exactly one identity provider (an EntityDescriptor with an"
            " IDPSSODescriptor)"
        )
    entity = idps[0]
    entity_id = (entity.get("entityID") or "").strip()
    if not entity_id or len(entity_id) > 1024:
        raise ValidationFailed(f"{_BAD}the identity provider has no entityID")
    descriptor = _idp_of(entity)
    assert descriptor is not None
    return entity_id, _sso_url(descriptor, allow_http), _certificates(descriptor)


def _idp_of(entity: Element) -> Element | None:
    return entity.find(f"{{{MD}}}IDPSSODescriptor")


def _sso_url(descriptor: Element, allow_http: bool) -> str:
    for service in descriptor.findall(f"{{{MD}}}SingleSignOnService"):
        if service.get("Binding") == REDIRECT:
            url = (service.get("Location") or "").strip()
            parts = urlsplit(url)
            schemes = ("https", "http") if allow_http else ("https",)
            if parts.scheme not in schemes or not parts.hostname or len(url) > 2048:
                raise ValidationFailed(
                    f"{_BAD}the sign-in address (SingleSignOnService) must be an https:// address"
                )
            return url
    raise ValidationFailed(
        f"{_BAD}the identity provider offers no sign-in by HTTP-Redirect"
        " (a SingleSignOnService with the HTTP-Redirect binding)"
    )


def _certificates(descriptor: Element) -> tuple[str, ...]:
    found: list[str] = []
    for key in descriptor.findall(f"{{{MD}}}KeyDescriptor"):
        if key.get("use") not in (None, "signing"):
            continue
        for cert in key.iter(f"{{{DS}}}X509Certificate"):
            text = "".join((cert.text or "").split())
            try:
                x509.load_der_x509_certificate(base64.b64decode(text, validate=True))
            except (binascii.Error, ValueError) as exc:
                raise ValidationFailed(f"{_BAD}a signing certificate cannot be read") from exc
            if text not in found:
                found.append(text)
    if not found:
        raise ValidationFailed(
            f"{_BAD}holds no signing certificate: assertions could not be checked"
        )
    return tuple(found[:MAX_CERTIFICATES])


def checked_attribute(value: str | None, name: str, default: str) -> str:
    """An attribute name as the provider sends it (a URI or a short name)."""
    value = (value or "").strip() or default
    if len(value) > 300 or any(c.isspace() for c in value):
        raise ValidationFailed(
            f"{name}: an attribute name has no spaces and at most 300 characters"
        )
    return value


@dataclass(frozen=True, slots=True)
class SamlRequest:
    """What an owner sends to save SAML settings."""

    settings: SamlSettings
    domains: tuple[str, ...]
    enforce: bool


def saml_settings(
    metadata_xml: str,
    attributes: tuple[str | None, str | None, str | None],
    role_mapping: dict[str, str],
    *,
    allow_http: bool,
) -> SamlSettings:
    """Settings from the provider's metadata and the (email, name, groups) attribute
    names (defaults where left out); ValidationFailed naming the field."""
    entity_id, sso_url, certificates = parse_metadata(metadata_xml, allow_http=allow_http)
    email, name, groups = attributes
    return SamlSettings(
        idp_entity_id=entity_id,
        sso_url=sso_url,
        certificates=certificates,
        metadata_xml=metadata_xml,
        email_attribute=checked_attribute(email, "emailAttribute", DEFAULT_EMAIL_ATTRIBUTE),
        name_attribute=checked_attribute(name, "nameAttribute", DEFAULT_NAME_ATTRIBUTE),
        groups_attribute=checked_attribute(groups, "groupsAttribute", DEFAULT_GROUPS_ATTRIBUTE),
        role_mapping=role_mapping,
    )
