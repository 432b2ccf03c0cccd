"""SAML sign-in in tests: the provider fixture's helper, the team's settings, and a
sign-in played from our start through the provider back to our ACS."""

from __future__ import annotations

from urllib.parse import urlsplit

from tests.support.accounts import SESSION_COOKIE
from tests.support.saml_idp import SamlIdentityProvider, sign_in_at_provider
from tests.support.sso import verify_domains

RELAY_COOKIE = "agentsvc_saml_state"


async def provider(tmp_path):
    """Start a provider (for an async fixture: close it afterwards)."""
    idp = SamlIdentityProvider(tmp_path)
    await idp.start()
    return idp


def saml_body(idp: SamlIdentityProvider, **changes) -> dict:
    return {
        "type": "saml",
        "idpMetadataXml": idp.metadata_xml(),
        "domains": ["example.com"],
        **changes,
    }


async def saml_set_up(
    client, headers, idp: SamlIdentityProvider, verify: bool = True, **changes
) -> dict:
    """Save the team's SAML settings, prove its domains the operator's way (unless `verify`
    is False) and give the provider our metadata (from our URL)."""
    resp = await client.put("/api/v1/team/sso", json=saml_body(idp, **changes), headers=headers)
    assert resp.status == 200, await resp.text()
    body = await resp.json()
    if verify:
        body = await verify_domains(client, headers, body)
    metadata = await client.get(urlsplit(body["metadataUrl"]).path)
    assert metadata.status == 200, await metadata.text()
    idp.trust(await metadata.text())
    return body


async def at_provider(client, team_id: str, callback_url: str = "/dashboard/"):
    """Start at our server and go through the provider: its form's address and fields,
    and the RelayState cookie our start set."""
    client.session.cookie_jar.clear()
    resp = await client.get(
        f"/api/v1/auth/saml/{team_id}/start",
        params={"callbackUrl": callback_url},
        allow_redirects=False,
    )
    assert resp.status == 302, await resp.text()
    relay_cookie = resp.cookies[RELAY_COOKIE].value
    action, fields = await sign_in_at_provider(resp.headers["Location"])
    return action, fields, relay_cookie


async def post_acs(client, action: str, fields: dict[str, str], relay_cookie: str | None):
    """Post the provider's form to our ACS, as the browser does."""
    client.session.cookie_jar.clear()
    headers = {"Cookie": f"{RELAY_COOKIE}={relay_cookie}"} if relay_cookie else {}
    return await client.post(
        urlsplit(action).path, data=fields, headers=headers, allow_redirects=False
    )


async def saml_sign_in(client, team_id: str, callback_url: str = "/dashboard/"):
    """The whole sign-in: our ACS's response."""
    action, fields, relay_cookie = await at_provider(client, team_id, callback_url)
    return await post_acs(client, action, fields, relay_cookie)


def session_token(resp) -> str:
    return resp.cookies[SESSION_COOKIE].value
