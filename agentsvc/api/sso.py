"""Single sign-on endpoints: a team's settings (owners), where an address signs in, and
the OpenID Connect sign-in (start, callback); SAML's own routes are in api/saml.py."""

from __future__ import annotations

from typing import Annotated, Literal

from aiohttp import web
from pydantic import Field
from pydantic.alias_generators import to_camel
from pydantic.json_schema import SkipJsonSchema

from agentsvc.api import app_keys, auth
from agentsvc.api.audit import actor_of
from agentsvc.api.limits import take_token
from agentsvc.api.models import QueryModel, RequestModel, ResponseModel
from agentsvc.api.routing import Call, RouteTable, envelope_response, json_response, parse_json
from agentsvc.api.session_auth import OAuthCallbackQuery, OAuthStartQuery, Success, limit_sign_in
from agentsvc.api.state import request_deps
from agentsvc.errors import Unauthorized, ValidationFailed
from agentsvc.input_types import Email
from agentsvc.services.sso.config import (
    OidcRequest,
    OidcSettings,
    checked_domains,
    checked_mapping,
    checked_scopes,
)
from agentsvc.services.sso.domains import DomainState
from agentsvc.services.sso.oidc import STATE_TTL_SECONDS
from agentsvc.services.sso.saml_config import (
    MAX_METADATA_CHARS,
    SamlRequest,
    SamlSettings,
    saml_settings,
)
from agentsvc.services.sso.service import SsoService, SsoView

routes = RouteTable("sso")

SSO_STATE_COOKIE = "agentsvc_sso_state"
CALLBACK_COOKIE_PATH = "/api/v1/auth/sso/callback"

Text = Annotated[str, Field(min_length=1, max_length=500)]
CHECKS_REFUSED = "Too many DNS checks for this team; wait a minute and check again"
Attribute = Annotated[str, Field(min_length=1, max_length=300)]


def sso_service(call: Call) -> SsoService:
    """The single sign-on service (OpenID Connect and SAML share it)."""
    return call.app[app_keys.sso_key]


class SsoIn(RequestModel):
    type: Literal["oidc", "saml"]
    issuer: Text | SkipJsonSchema[None] = Field(None, description="OIDC: the provider's issuer")
    client_id: Text | SkipJsonSchema[None] = Field(None, description="OIDC: the client id")
    client_secret: Annotated[str, Field(min_length=1, max_length=2000)] | SkipJsonSchema[None] = (
        Field(None, description="OIDC: the client secret (left out: the saved one is kept)")
    )
    scopes: (
        Annotated[list[Annotated[str, Field(max_length=100)]], Field(max_length=20)]
        | (SkipJsonSchema[None])
    ) = Field(None, description='default ["openid", "email", "profile"]')
    groups_claim: Annotated[str, Field(min_length=1, max_length=100)] | SkipJsonSchema[None] = (
        Field(None, description='the ID token claim listing the groups; default "groups"')
    )
    role_mapping: dict[str, Literal["admin", "member"]] | SkipJsonSchema[None] = Field(
        None, description="group name to role; admin makes the person an owner of the team"
    )
    domains: Annotated[
        list[Annotated[str, Field(max_length=253)]], Field(min_length=1, max_length=50)
    ]
    enforce: bool = False
    idp_metadata_xml: (
        Annotated[str, Field(min_length=1, max_length=MAX_METADATA_CHARS)] | SkipJsonSchema[None]
    ) = Field(None, description="SAML: the identity provider's metadata XML, pasted")
    email_attribute: Attribute | SkipJsonSchema[None] = Field(
        None, description='SAML: the attribute holding the e-mail address; default "email"'
    )
    name_attribute: Attribute | SkipJsonSchema[None] = Field(
        None, description='SAML: the attribute holding the name; default "name"'
    )
    groups_attribute: Attribute | SkipJsonSchema[None] = Field(
        None, description='SAML: the attribute listing the groups; default "groups"'
    )


class DomainVerificationOut(ResponseModel):
    domain: str
    verified: bool = Field(description="proven: only then does the domain sign in by SSO")
    verified_at: str | None
    record_name: str = Field(description="the DNS name of the TXT record that proves it")
    record_value: str = Field(description="the value that TXT record must hold")
    message: str | None = Field(
        None, description="after a check: why the domain is still not verified"
    )


class SsoOut(ResponseModel):
    type: str
    issuer: str | None = Field(None, description="OIDC")
    client_id: str | None = Field(None, description="OIDC")
    client_secret: str | None = Field(None, description="OIDC: masked, its last four characters")
    scopes: list[str] | None = Field(None, description="OIDC")
    groups_claim: str | None = Field(None, description="OIDC")
    role_mapping: dict[str, str]
    domains: list[str]
    domain_verification: list[DomainVerificationOut] = Field(
        description="each domain's proof: a domain does nothing until it is verified"
    )
    enforce: bool
    redirect_uri: str | None = Field(
        None, description="OIDC: paste into the provider as the redirect URI"
    )
    idp_metadata_xml: str | None = Field(None, description="SAML: the metadata as saved")
    idp_entity_id: str | None = Field(None, description="SAML: read from the metadata")
    idp_sso_url: str | None = Field(None, description="SAML: read from the metadata")
    email_attribute: str | None = Field(None, description="SAML")
    name_attribute: str | None = Field(None, description="SAML")
    groups_attribute: str | None = Field(None, description="SAML")
    entity_id: str | None = Field(
        None, description="SAML: paste into the provider as the SP entity id (audience)"
    )
    acs_url: str | None = Field(
        None, description="SAML: paste into the provider as the ACS (reply) URL"
    )
    metadata_url: str | None = Field(
        None, description="SAML: our metadata, for providers that read it"
    )
    updated_at: str


class DomainCheckIn(RequestModel):
    domain: Annotated[str, Field(min_length=1, max_length=253)] | SkipJsonSchema[None] = Field(
        None, description="the one domain to check (left out: every unverified one)"
    )


class EmailQuery(QueryModel):
    email: Email


class SsoRouteOut(ResponseModel):
    sso: bool = Field(description="the address's domain signs in through a team's SSO")
    start_url: str | None = Field(description="where to send the browser to sign in by SSO")
    enforced: bool = Field(description="password and e-mailed links are refused for it")
    protocol: Literal["oidc", "saml"] | None = Field(
        description="the team's single sign-on protocol, when sso is true"
    )
    providers: list[str] = Field(description="the other sign-in providers of this instance")


def domain_json(state: DomainState) -> dict:
    return {
        "domain": state.domain,
        "verified": state.verified_at is not None,
        "verifiedAt": state.verified_at,
        "recordName": state.record_name,
        "recordValue": state.record_value,
        "message": state.problem,
    }


def sso_json(view: SsoView) -> dict:
    s = view.settings
    body = _saml_json(view, s) if isinstance(s, SamlSettings) else _oidc_json(view, s)
    return {**body, "domainVerification": [domain_json(c) for c in view.claims]}


def _oidc_json(view: SsoView, s: OidcSettings) -> dict:
    return {
        "type": view.type,
        "issuer": s.issuer,
        "clientId": s.client_id,
        "clientSecret": view.secret_masked,
        "scopes": list(s.scopes),
        "groupsClaim": s.groups_claim,
        "roleMapping": s.role_mapping,
        "domains": list(view.domains),
        "enforce": view.enforce,
        "redirectUri": view.redirect_uri,
        "updatedAt": view.updated_at,
    }


def _saml_json(view: SsoView, s: SamlSettings) -> dict:
    assert view.saml is not None
    return {
        "type": "saml",
        "idpMetadataXml": s.metadata_xml,
        "idpEntityId": s.idp_entity_id,
        "idpSsoUrl": s.sso_url,
        "emailAttribute": s.email_attribute,
        "nameAttribute": s.name_attribute,
        "groupsAttribute": s.groups_attribute,
        "roleMapping": s.role_mapping,
        "domains": list(view.domains),
        "enforce": view.enforce,
        "entityId": view.saml.entity_id,
        "acsUrl": view.saml.acs_url,
        "metadataUrl": view.saml.metadata_url,
        "updatedAt": view.updated_at,
    }


_ONLY = {
    "oidc": ("issuer", "client_id", "client_secret", "scopes", "groups_claim"),
    "saml": ("idp_metadata_xml", "email_attribute", "name_attribute", "groups_attribute"),
}


def _refuse_the_other_protocols_fields(body: SsoIn) -> None:
    """A field of the other protocol would be silently dropped: say so instead."""
    other = "oidc" if body.type == "saml" else "saml"
    for name in _ONLY[other]:
        if getattr(body, name) is not None:
            protocol = "SAML" if body.type == "saml" else "OpenID Connect"
            raise ValidationFailed(f"{to_camel(name)}: not a setting of {protocol}")


def _saml_request(call: Call) -> SamlRequest:
    body: SsoIn = call.body
    if not body.idp_metadata_xml:
        raise ValidationFailed("idpMetadataXml: required for SAML (your provider's metadata XML)")
    allow_http = call.app[app_keys.settings_key].outbound.allow_private
    settings = saml_settings(
        body.idp_metadata_xml,
        (body.email_attribute, body.name_attribute, body.groups_attribute),
        checked_mapping(body.role_mapping),
        allow_http=allow_http,
    )
    return SamlRequest(settings, checked_domains(body.domains), body.enforce)


def _oidc_request(body: SsoIn) -> OidcRequest:
    if not body.issuer:
        raise ValidationFailed("issuer: required for OpenID Connect")
    if not body.client_id:
        raise ValidationFailed("clientId: required for OpenID Connect")
    settings = OidcSettings(
        issuer=body.issuer.strip(),
        client_id=body.client_id.strip(),
        scopes=checked_scopes(body.scopes),
        groups_claim=(body.groups_claim or "groups").strip(),
        role_mapping=checked_mapping(body.role_mapping),
    )
    return OidcRequest(settings, body.client_secret, checked_domains(body.domains), body.enforce)


@routes.put("/team/sso", body=SsoIn, response=SsoOut, owner_only=True, errors=(409,))
async def put_team_sso(call: Call):
    """Set up single sign-on for the team (owners): an OpenID provider is checked by
    reading its discovery document, a SAML provider by reading its metadata; the answer
    holds what to paste into the provider."""
    assert call.principal is not None
    _refuse_the_other_protocols_fields(call.body)
    if call.body.type == "saml":
        saml = _saml_request(call)
        view = await sso_service(call).save_saml(call.principal, saml, actor_of(call))
        return json_response(sso_json(view))
    view = await sso_service(call).save_oidc(
        call.principal, _oidc_request(call.body), actor_of(call)
    )
    return json_response(sso_json(view))


@routes.get("/team/sso", response=SsoOut, owner_only=True, errors=(404,))
async def get_team_sso(call: Call):
    """The team's single sign-on settings (owners), the client secret masked."""
    return json_response(sso_json(await sso_service(call).get_settings(call.team_id)))


@routes.delete("/team/sso", response=Success, owner_only=True, errors=(404,))
async def delete_team_sso(call: Call):
    """Turn single sign-on off for the team (owners): its domains are released."""
    await sso_service(call).delete(call.team_id, actor_of(call))
    return json_response({"success": True})


@routes.post(
    "/team/sso/domains/verify",
    body=DomainCheckIn,
    parse=lambda raw: parse_json(raw) if raw.strip() else {},  # the body is optional
    response=list[DomainVerificationOut],
    envelope=True,
    owner_only=True,
    errors=(404, 429),
)
async def post_team_sso_domains_verify(call: Call):
    """Look up the DNS TXT record of the team's unverified domains now (owners): each
    domain with its state, and for one still unproven a sentence saying what was found."""
    limit = request_deps(call.request).settings.sso.domain_checks_per_minute
    await take_token(call.request, f"domain-check:{call.team_id}", limit, CHECKS_REFUSED)
    body: DomainCheckIn = call.body
    only = body.domain.strip().lower().rstrip(".") if body.domain else None
    states = await sso_service(call).check_domains(call.team_id, only, actor_of(call))
    return envelope_response([domain_json(s) for s in states])


@routes.get(
    "/auth/sso",
    auth="public",
    query=EmailQuery,
    response=SsoRouteOut,
    envelope=True,
    errors=(429,),
)
async def get_auth_sso(call: Call):
    """Where a person with this address signs in: their team's SSO when the address's
    domain is one of a team's, else the usual choices (no team is named)."""
    await limit_sign_in(call)
    found = await sso_service(call).route_for(call.query.email)
    providers = call.app[app_keys.sign_in_key].providers()
    return envelope_response(
        {
            "sso": found.sso,
            "startUrl": found.start_path,
            "enforced": found.enforced,
            "protocol": found.protocol,
            "providers": providers,
        }
    )


@routes.get(
    "/auth/sso/{teamId}/start",
    auth="public",
    query=OAuthStartQuery,
    status=302,
    errors=(400, 401, 404, 429),
    response_headers=("Location", "Set-Cookie"),
)
async def get_auth_sso_start(call: Call):
    """Start signing in through the team's provider: a redirect with state, nonce and
    PKCE S256; 404 when the team has no OpenID Connect sign-in."""
    await limit_sign_in(call)
    location, state = await sso_service(call).start(call.params["teamId"], call.query.callback_url)
    response = web.Response(status=302, headers={"Location": location})
    # Binds the state to this browser: a callback carrying someone else's state fails.
    response.set_cookie(
        SSO_STATE_COOKIE,
        state,
        max_age=STATE_TTL_SECONDS,
        path=CALLBACK_COOKIE_PATH,
        httponly=True,
        samesite="Lax",
        secure=auth.cookies_secure(call.request),
    )
    return response


@routes.get(
    "/auth/sso/callback",
    auth="public",
    query=OAuthCallbackQuery,
    status=303,
    errors=(401, 404, 429),
    response_headers=("Location", "Set-Cookie"),
)
async def get_auth_sso_callback(call: Call):
    """The provider's redirect back: check state, exchange the code, verify the ID token,
    sign in with the session cookie and go to the callbackUrl given at the start."""
    query: OAuthCallbackQuery = call.query
    await limit_sign_in(call)
    if query.error or not query.code or not query.state:
        raise Unauthorized("Single sign-on was not completed at the identity provider")
    signed_in, location = await sso_service(call).finish(
        code=query.code,
        state=query.state,
        browser_state=auth.request_cookie(call.request, SSO_STATE_COOKIE),
    )
    response = web.Response(status=303, headers={"Location": location})
    response.del_cookie(SSO_STATE_COOKIE, path=CALLBACK_COOKIE_PATH)
    auth.set_session_cookie(call.request, response, signed_in.token)
    return response
