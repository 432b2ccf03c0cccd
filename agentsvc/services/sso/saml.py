"""The SAML 2.0 Web Browser SSO profile of a team, through pysaml2 and xmlsec1: an
AuthnRequest by HTTP-Redirect out; a Response by HTTP-POST back, read structurally first
(one assertion, no DTD, ours by Destination, InResponseTo, Audience, Recipient and time)
and then verified by pysaml2 (the assertion's signature against the provider's
certificates from its metadata). These functions block (xmlsec1 runs as a subprocess):
the service calls them off the event loop."""

from __future__ import annotations

import base64
import logging
import shutil
import unicodedata
import warnings
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any
from xml.etree.ElementTree import Element  # noqa: S405 (the type only; parsing is defusedxml)

import defusedxml.ElementTree as safe_xml
from cryptography.utils import CryptographyDeprecationWarning
from saml2 import BINDING_HTTP_POST, BINDING_HTTP_REDIRECT

if TYPE_CHECKING:
    from saml2.client import Saml2Client

from agentsvc.services.sso.saml_config import SamlSettings, SpAddresses, idp_metadata
from agentsvc.services.sso.tokens import Identity, TokenRefused

log = logging.getLogger(__name__)
# pysaml2 logs a refused response whole (people's addresses included) at ERROR; the
# refusal is logged here, in a line, and answered to the person.
logging.getLogger("saml2").setLevel(logging.CRITICAL)

# A form field of at most this many characters (base64) is read; pysaml2 never sees more.
MAX_RESPONSE_CHARS = 256 * 1024
PROTOCOL = "urn:oasis:names:tc:SAML:2.0:protocol"
ASSERTION = "urn:oasis:names:tc:SAML:2.0:assertion"
SUCCESS = "urn:oasis:names:tc:SAML:2.0:status:Success"
DSIG = "http://www.w3.org/2000/09/xmldsig#"
# SHA-1 signatures and digests can be forged by a well-funded attacker (SHAttered).
WEAK_ALGORITHMS = (DSIG + "rsa-sha1", DSIG + "dsa-sha1", DSIG + "sha1")
# Assertions are remembered this long when they say nothing of their lifetime.
DEFAULT_LIFETIME = timedelta(minutes=10)


@dataclass(frozen=True, slots=True)
class Provider:
    """What one exchange needs: the team's settings, our addresses, the allowed clock
    skew and the xmlsec1 program."""

    settings: SamlSettings
    sp: SpAddresses
    skew_seconds: float
    xmlsec: str


def xmlsec_program() -> str | None:
    """Where xmlsec1 is, or None when the server lacks it."""
    return shutil.which("xmlsec1")


def _client(provider: Provider) -> Saml2Client:
    # pysaml2's client loads the SAML XML schemas at import (a second of CPU): imported on
    # a team's first SAML exchange, not by every server and command that never has one.
    with warnings.catch_warnings():
        # pysaml2 names a cipher mode cryptography moved (it warns once, at import).
        warnings.simplefilter("ignore", CryptographyDeprecationWarning)
        from saml2.client import Saml2Client
        from saml2.config import SPConfig

    config = SPConfig()
    config.load(
        {
            "entityid": provider.sp.entity_id,
            "xmlsec_binary": provider.xmlsec,
            "metadata": {"inline": [idp_metadata(provider.settings)]},
            "accepted_time_diff": int(provider.skew_seconds),
            "allow_unknown_attributes": True,
            "service": {
                "sp": {
                    "endpoints": {
                        "assertion_consumer_service": [(provider.sp.acs_url, BINDING_HTTP_POST)]
                    },
                    "allow_unsolicited": False,
                    "want_assertions_signed": True,
                    "want_response_signed": False,
                    "authn_requests_signed": False,
                    "only_use_keys_in_metadata": True,
                }
            },
        }
    )
    return Saml2Client(config)


def check_config(provider: Provider) -> None:
    """Load the settings as an exchange would (raises what pysaml2 raises)."""
    _client(provider)


def authn_request(provider: Provider, relay_state: str) -> tuple[str, str]:
    """The AuthnRequest's id and the provider's address carrying it (HTTP-Redirect)."""
    client = _client(provider)
    request_id, info = client.prepare_for_authenticate(
        entityid=provider.settings.idp_entity_id,
        relay_state=relay_state,
        binding=BINDING_HTTP_REDIRECT,
    )
    return str(request_id), dict(info["headers"])["Location"]


@dataclass(frozen=True, slots=True)
class Asserted:
    """What a verified assertion says: its id (one use), whom and until when."""

    assertion_id: str
    person: Identity


def read_response(provider: Provider, encoded: str, request_id: str) -> Asserted:
    """The verified assertion of a SAMLResponse answering our request; TokenRefused
    saying why it cannot be trusted."""
    document = _decoded(encoded)
    facts = _inspect(document, provider, request_id)
    try:
        response = _client(provider).parse_authn_request_response(
            encoded, BINDING_HTTP_POST, outstanding={request_id: "/"}
        )
    except Exception as exc:  # pysaml2 raises many classes (and bare Exception) for refusals
        log.info("SAML response refused by pysaml2 (%s)", type(exc).__name__)
        raise TokenRefused(_plain(exc)) from exc
    assertion = getattr(response, "assertion", None)
    if assertion is None or assertion.id != facts["assertion_id"]:
        raise TokenRefused("the identity provider's assertion could not be verified")
    person = _identity(assertion, provider.settings, facts["expires_at"])
    return Asserted(facts["assertion_id"], person)


def _decoded(encoded: str) -> Element:
    if len(encoded) > MAX_RESPONSE_CHARS:
        raise TokenRefused("the identity provider's answer is too large")
    try:
        return safe_xml.fromstring(base64.b64decode(encoded), forbid_dtd=True)
    except Exception as exc:  # base64's, expat's and defusedxml's (a DTD, an entity) alike
        raise TokenRefused("the identity provider's answer is not readable") from exc


def _inspect(root: Element, provider: Provider, request_id: str) -> dict[str, Any]:
    """Checks for clear messages before the signature is verified; the signature then
    covers the one assertion these facts were read from."""
    if root.tag != f"{{{PROTOCOL}}}Response":
        raise TokenRefused("the identity provider's answer is not a SAML response")
    status = root.find(f"{{{PROTOCOL}}}Status/{{{PROTOCOL}}}StatusCode")
    if status is None or status.get("Value") != SUCCESS:
        raise TokenRefused("the identity provider did not accept the sign-in")
    if any(True for _ in root.iter(f"{{{ASSERTION}}}EncryptedAssertion")):
        raise TokenRefused("the assertion is encrypted: turn assertion encryption off")
    assertions = list(root.iter(f"{{{ASSERTION}}}Assertion"))
    if len(assertions) != 1 or assertions[0] not in list(root):
        raise TokenRefused("the identity provider's answer must hold exactly one assertion")
    ids = [e.get("ID") for e in root.iter() if e.get("ID") is not None]
    if len(ids) != len(set(ids)):
        raise TokenRefused("the identity provider's answer repeats an ID")
    destination = root.get("Destination")
    if destination is not None and destination != provider.sp.acs_url:
        raise TokenRefused("the answer was sent to another address (Destination)")
    if root.get("InResponseTo") != request_id:
        raise TokenRefused("the answer is not for this sign-in (InResponseTo)")
    assertion = assertions[0]
    for method in assertion.iter():
        if method.tag in (f"{{{DSIG}}}SignatureMethod", f"{{{DSIG}}}DigestMethod"):
            if method.get("Algorithm") in WEAK_ALGORITHMS:
                raise TokenRefused(
                    "the assertion is signed with SHA-1: choose SHA-256 at the provider"
                )
    _check_audience(assertion, provider.sp.entity_id)
    _check_recipient(assertion, provider, request_id)
    expires_at = _check_times(assertion, provider.skew_seconds)
    return {"assertion_id": assertion.get("ID") or "", "expires_at": expires_at}


def _check_audience(assertion: Element, entity_id: str) -> None:
    audiences = [
        (a.text or "").strip()
        for a in assertion.iter(f"{{{ASSERTION}}}Audience")  # AudienceRestriction's
    ]
    if entity_id not in audiences:
        raise TokenRefused("the assertion is for another service provider (Audience)")


def _check_recipient(assertion: Element, provider: Provider, request_id: str) -> None:
    found = list(assertion.iter(f"{{{ASSERTION}}}SubjectConfirmationData"))
    if not found:
        raise TokenRefused("the assertion has no subject confirmation")
    for data in found:
        if data.get("Recipient") != provider.sp.acs_url:
            raise TokenRefused("the assertion was sent to another address (Recipient)")
        if data.get("InResponseTo") not in (None, request_id):
            raise TokenRefused("the answer is not for this sign-in (InResponseTo)")


def _instant(value: str | None) -> datetime | None:
    if not value:
        return None
    try:
        parsed = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
    except ValueError as exc:
        raise TokenRefused("the assertion's times cannot be read") from exc
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def _check_times(assertion: Element, skew_seconds: float) -> int:
    """Refuse an assertion outside its validity (give or take the skew); return until
    when it must be remembered (epoch seconds)."""
    now = datetime.now(UTC)
    skew = timedelta(seconds=skew_seconds)
    ends: list[datetime] = []
    holders = [*assertion.iter(f"{{{ASSERTION}}}Conditions")]
    holders += assertion.iter(f"{{{ASSERTION}}}SubjectConfirmationData")
    for holder in holders:
        start = _instant(holder.get("NotBefore"))
        end = _instant(holder.get("NotOnOrAfter"))
        if start is not None and now + skew < start:
            raise TokenRefused("the assertion is not valid yet (check the clocks)")
        if end is not None:
            if now - skew >= end:
                raise TokenRefused("the assertion has expired")
            ends.append(end)
    until = max(ends) if ends else now + DEFAULT_LIFETIME
    return int((until + skew).timestamp())


def _plain(exc: Exception) -> str:
    """pysaml2's refusal in plain words (its own text names its internals)."""
    name = type(exc).__name__
    if name in {"SignatureError", "BadSignature", "IncorrectlySigned", "MissingKey"}:
        return "the assertion is not signed by the team's identity provider"
    if name in {"XmlsecError", "SigverError", "CertificateTooOld"}:
        return "the identity provider's signature cannot be checked"
    if name in {"UnsolicitedResponse"}:
        return "the answer is not for this sign-in (InResponseTo)"
    if name in {"ToEarly"}:
        return "the assertion is not valid yet (check the clocks)"
    if name in {"ResponseLifetimeExceed"}:
        return "the assertion has expired"
    return "the identity provider's answer could not be verified"


def _values(assertion: Any, name: str) -> list[str]:
    values: list[str] = []
    for statement in assertion.attribute_statement or ():
        for attribute in statement.attribute or ():
            if name in (attribute.name, attribute.friendly_name):
                values += [v.text for v in attribute.attribute_value or () if v.text]
    return values


def _identity(assertion: Any, settings: SamlSettings, expires_at: int) -> Identity:
    """The person of a verified assertion: the e-mail from its attribute, else from the
    NameID when it is an address."""
    name_id = assertion.subject.name_id if assertion.subject is not None else None
    subject = (name_id.text or "").strip() if name_id is not None else ""
    emails = _values(assertion, settings.email_attribute) or ([subject] if "@" in subject else [])
    email = emails[0].strip().lower() if emails else ""
    if "@" not in email or len(email) > 254:
        raise TokenRefused(
            f"the identity provider sent no e-mail address (attribute {settings.email_attribute})"
        )
    names = _values(assertion, settings.name_attribute)
    name = names[0] if names else ""
    name = "".join(c for c in name if unicodedata.category(c)[0] not in "CZ" or c == " ")
    return Identity(
        subject=subject or email,
        email=email,
        name=" ".join(name.split())[:80],
        groups=tuple(_values(assertion, settings.groups_attribute)),
        expires_at=expires_at,
    )
