"""A real SAML 2.0 identity provider for the tests: pysaml2's `saml2.server.Server` in an
aiohttp application on 127.0.0.1, with keys and certificates made at test time. It takes
AuthnRequests by HTTP-Redirect and answers with the HTTP-POST binding's form. For the
refusal tests it can be told to forge: change the response's XML before signing it (with
its own key or another), sign the response instead of the assertion, or not sign at all;
`tamper` changes the XML after signing (signature wrapping)."""

from __future__ import annotations

import base64
import datetime
import functools
import html
import re
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import parse_qs, urlsplit

import aiohttp
from aiohttp import web
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.utils import CryptographyDeprecationWarning
from cryptography.x509.oid import NameOID
from saml2 import BINDING_HTTP_REDIRECT
from saml2.saml import NAMEID_FORMAT_EMAILADDRESS, NameID
from saml2.xmldsig import DIGEST_SHA1, DIGEST_SHA256, SIG_RSA_SHA1, SIG_RSA_SHA256

if TYPE_CHECKING:
    from saml2.config import IdPConfig
    from saml2.server import Server


@functools.cache
def _pysaml2_idp():
    """pysaml2's provider side, loaded when a provider is made: its SAML schemas take a
    second to load, which every test process would pay when it collects the suite."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CryptographyDeprecationWarning)
        from saml2 import config, metadata, server, sigver
    # pysaml2 reads the provider's private key each time it makes a security context (four
    # times an exchange), and cryptography checks an RSA key's consistency on each load: 50
    # ms of CPU every time. The fake's keys never change: each is loaded once per process.
    # (Our service provider signs nothing and loads no private key.)
    sigver.import_rsa_key_from_file = _private_key_from_file
    return config, metadata, server, sigver


def _private_key_from_file(filename: str):
    return _private_key(Path(filename).read_bytes())


@functools.cache
def _private_key(pem: bytes):
    return serialization.load_pem_private_key(pem, None)


ASSERTION_NODE = "urn:oasis:names:tc:SAML:2.0:assertion:Assertion"
RESPONSE_NODE = "urn:oasis:names:tc:SAML:2.0:protocol:Response"
PASSWORD = "urn:oasis:names:tc:SAML:2.0:ac:classes:PasswordProtectedTransport"
_FIELD = re.compile(r'<input type="hidden" name="(\w+)" value="([^"]*)"')


def make_key_pair(folder: Path, name: str) -> tuple[Path, Path]:
    """An RSA key and a self-signed certificate for it, as PEM files."""
    key_pem, cert_pem = _key_pair(name)
    key_file, cert_file = folder / f"{name}.key", folder / f"{name}.crt"
    key_file.write_bytes(key_pem)
    cert_file.write_bytes(cert_pem)
    return key_file, cert_file


@functools.cache
def _key_pair(name: str) -> tuple[bytes, bytes]:
    """Made once per test process and name (a 2048-bit key costs 60 ms of CPU to make)."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, f"{name}.test")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=30))
        .sign(key, hashes.SHA256())
    )
    key_pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    return key_pem, cert.public_bytes(serialization.Encoding.PEM)


@dataclass
class Person:
    email: str
    name: str = "Signed In"
    groups: list[str] = field(default_factory=list)


@dataclass
class Forgery:
    """How the next responses are made (the defaults: an honest provider)."""

    before_signing: Callable[[str], str] | None = None
    sign_assertion: bool = True
    sign_response: bool = False
    other_key: bool = False  # signed with a key the provider's metadata does not hold
    sha1: bool = False  # RSA-SHA1 and a SHA-1 digest instead of SHA-256
    tamper: Callable[[str], str] | None = None  # after signing


class SamlIdentityProvider:
    """The provider: its metadata, the SPs it trusts, the person who signs in next."""

    def __init__(self, folder: Path):
        self.folder = folder
        self.key_file, self.cert_file = make_key_pair(folder, "idp")
        self.other_key_file, self.other_cert_file = make_key_pair(folder, "other")
        self.base_url = ""
        self.person = Person("member@example.com")
        self.forgery = Forgery()
        self.sp_metadata: list[str] = []
        self.last_assertion_id: str | None = None
        self._server: Server | None = None
        self._runner: web.AppRunner | None = None

    @property
    def entity_id(self) -> str:
        return f"{self.base_url}/idp"

    def _config(self) -> IdPConfig:
        config = _pysaml2_idp()[0].IdPConfig()
        config.load(
            {
                "entityid": self.entity_id,
                "xmlsec_binary": "/usr/bin/xmlsec1",
                "key_file": str(self.key_file),
                "cert_file": str(self.cert_file),
                "allow_unknown_attributes": True,
                "metadata": {"inline": self.sp_metadata} if self.sp_metadata else {},
                "service": {
                    "idp": {
                        "endpoints": {
                            "single_sign_on_service": [
                                (f"{self.base_url}/sso", BINDING_HTTP_REDIRECT)
                            ]
                        },
                        "name_id_format": [NAMEID_FORMAT_EMAILADDRESS],
                        "policy": {"default": {"lifetime": {"minutes": 5}}},
                    }
                },
            }
        )
        return config

    def metadata_xml(self) -> str:
        """The provider's metadata, as an owner downloads it."""
        metadata = _pysaml2_idp()[1]
        return metadata.create_metadata_string(None, config=self._config(), sign=False).decode()

    def trust(self, sp_metadata_xml: str) -> None:
        """Serve this service provider (its metadata, as our metadata URL answers it)."""
        self.sp_metadata.append(sp_metadata_xml)
        self._server = _pysaml2_idp()[2].Server(config=self._config())

    async def start(self) -> None:
        app = web.Application()
        app.router.add_get("/sso", self._sso)
        self._runner = web.AppRunner(app)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        self.base_url = f"http://127.0.0.1:{port}"

    async def close(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    async def _sso(self, request: web.Request) -> web.Response:
        assert self._server is not None, "trust() the service provider first"
        parsed = self._server.parse_authn_request(
            request.query["SAMLRequest"], BINDING_HTTP_REDIRECT
        )
        message = parsed.message
        acs = message.assertion_consumer_service_url
        xml = self.respond(message.id, acs, message.issuer.text)
        encoded = base64.b64encode(xml.encode()).decode()
        relay = request.query.get("RelayState", "")
        page = (
            '<!doctype html><html lang="en"><title>Identity provider</title>'
            f'<form method="post" action="{html.escape(acs)}">'
            f'<input type="hidden" name="SAMLResponse" value="{encoded}"/>'
            f'<input type="hidden" name="RelayState" value="{html.escape(relay)}"/>'
            '<button type="submit">Continue</button></form>'
        )
        return web.Response(text=page, content_type="text/html")

    def respond(self, in_response_to: str, acs: str, sp_entity_id: str) -> str:
        """A Response for the current person, made as `forgery` says."""
        assert self._server is not None
        forgery = self.forgery
        honest = forgery == Forgery()
        response = self._server.create_authn_response(
            {
                "email": [self.person.email],
                "name": [self.person.name],
                "groups": list(self.person.groups),
            },
            in_response_to,
            acs,
            sp_entity_id,
            name_id=NameID(format=NAMEID_FORMAT_EMAILADDRESS, text=self.person.email),
            authn={"class_ref": PASSWORD},
            sign_assertion=honest,
            sign_response=False,
            sign_alg=SIG_RSA_SHA256,
            digest_alg=DIGEST_SHA256,
        )
        xml = str(response)
        if not honest:
            xml = self._forged(xml)
        self.last_assertion_id = re.search(r'<ns1:Assertion [^>]*ID="([^"]+)"', xml).group(1)
        return xml

    def _forged(self, xml: str) -> str:
        forgery = self.forgery
        if forgery.before_signing:
            xml = forgery.before_signing(xml)
        # The signing certificate goes in KeyInfo, as providers send it: another key's
        # certificate there must not make its signature count.
        key, cert = (
            (self.other_key_file, self.other_cert_file)
            if forgery.other_key
            else (self.key_file, self.cert_file)
        )
        algorithms = (
            (SIG_RSA_SHA1, DIGEST_SHA1) if forgery.sha1 else (SIG_RSA_SHA256, DIGEST_SHA256)
        )
        if forgery.sign_assertion:
            xml = self._sign(xml, "Assertion", ASSERTION_NODE, key, cert, algorithms)
        if forgery.sign_response:
            xml = self._sign(xml, "Response", RESPONSE_NODE, key, cert, algorithms)
        if forgery.tamper:
            xml = forgery.tamper(xml)
        return xml

    def _sign(
        self, xml: str, element: str, node: str, key: Path, cert: Path, algorithms: tuple
    ) -> str:
        """Sign one element with pysaml2's xmlsec1 backend: its signature template goes
        right after the element's Issuer, as the schema orders it."""
        assert self._server is not None
        prefix = "ns0" if element == "Response" else "ns1"
        match = re.search(rf'<{prefix}:{element} [^>]*ID="([^"]+)"[^>]*>(.*?</ns1:Issuer>)', xml)
        assert match, f"no {element} to sign"
        pem = cert.read_text()
        body = "".join(pem.split("-----")[2].split())
        template = str(
            _pysaml2_idp()[3].pre_signature_part(
                match.group(1), public_key=body, sign_alg=algorithms[0], digest_alg=algorithms[1]
            )
        )
        at = match.end(2)
        xml = xml[:at] + template + xml[at:]
        return self._server.sec.sign_statement(xml, node, key_file=str(key), node_id=match.group(1))


def acs_form(page: str) -> tuple[str, dict[str, str]]:
    """The address and fields of the provider's HTTP-POST form."""
    action = re.search(r'action="([^"]+)"', page).group(1)
    fields = {name: html.unescape(value) for name, value in _FIELD.findall(page)}
    return html.unescape(action), fields


async def sign_in_at_provider(location: str) -> tuple[str, dict[str, str]]:
    """Follow our start's redirect to the provider: its form's address and fields."""
    assert parse_qs(urlsplit(location).query)["SAMLRequest"]
    async with aiohttp.ClientSession() as session, session.get(location) as resp:
        assert resp.status == 200, await resp.text()
        return acs_form(await resp.text())
