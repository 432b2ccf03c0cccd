"""Single sign-on in a real browser (issue 35): the owner sets up OpenID Connect on the Team
page (the redirect URI shown, with a copy button), then a person of the team's domain types
their address on the sign-in page (once the owner has proven the domain by its DNS TXT
record, "Check DNS now"), is offered "Continue with SSO", signs in at the certified
`oidc-provider` on 127.0.0.1 and lands in the dashboard as a member of the team; no serious
or critical axe-core finding on the section or on the sign-in page. The same with SAML 2.0
through the pysaml2 identity provider of tests/support/saml_idp.py."""

from __future__ import annotations

import re
import urllib.request
from collections.abc import Iterator

import pytest
from playwright.sync_api import expect

from tests.support.axe import serious_violations
from tests.support.dashboard_stack import Tab, ensure_owner, in_owners_team, nav, owner_key, sign_in
from tests.support.oidc_provider import (
    CLIENT_ID,
    CLIENT_SECRET,
    OpenIdProvider,
    start_provider,
    stop_provider,
)
from tests.support.saml_idp import Person, SamlIdentityProvider


@pytest.fixture(scope="module")
def idp(stack, tmp_path_factory) -> Iterator[OpenIdProvider]:
    provider = start_provider(
        tmp_path_factory.mktemp("oidc"), redirect_uri=stack.url + "/api/v1/auth/sso/callback"
    )
    yield provider
    stop_provider(provider)


def prove_domain(page, stack) -> None:
    """The saved domain shows its TXT record; published (on the stack's DNS server), "Check
    DNS now" verifies it."""
    form = page.get_by_role("form", name="Single sign-on")
    proof = form.get_by_role("list", name="Domain verification")
    expect(proof).to_contain_text("example.com: not verified")
    name, value = (proof.locator("code").nth(i).inner_text() for i in (0, 1))
    assert name == "_agentsvc-verification.example.com"
    form.get_by_role("button", name="Check DNS now").click()
    # Nothing published yet (or another value, on the second run): a sentence says so.
    expect(proof).to_contain_text(re.compile("There is no DNS name|No TXT record with the value"))
    stack.dns.set_txt(name, value)
    form.get_by_role("button", name="Check DNS now").click()
    expect(proof).to_have_text("example.com: Verified")


LEAVES_THE_MACHINE = re.compile(r"^https?://(?!127\.0\.0\.1[:/])")


def test_owner_sets_up_sso_and_a_person_signs_in_through_it(browser, stack, tab, idp):
    ensure_owner(stack)
    page = tab.page
    sign_in(page, stack)
    in_owners_team(page)
    nav(page, "Team")
    form = page.get_by_role("form", name="Single sign-on")
    redirect = stack.url + "/api/v1/auth/sso/callback"
    expect(form.locator("code")).to_have_text(redirect)
    form.get_by_role("button", name="Copy the redirect URI").click()
    expect(page.get_by_text("Redirect URI copied")).to_be_visible()
    assert page.evaluate("navigator.clipboard.readText()") == redirect
    form.get_by_label("Issuer").fill(idp.issuer)
    form.get_by_label("Client ID").fill(CLIENT_ID)
    form.get_by_label("Client secret").fill(CLIENT_SECRET)
    form.get_by_label("E-mail domains").fill("example.com")
    form.get_by_label("Role mapping").fill("support-admins = admin")
    form.get_by_role("button", name="Save single sign-on").click()
    expect(page.get_by_text("Single sign-on saved")).to_be_visible()
    form = page.get_by_role("form", name="Single sign-on")
    expect(form.get_by_text("Saved (••••" + CLIENT_SECRET[-4:])).to_be_visible()
    assert serious_violations(page, "main") == []
    prove_domain(page, stack)

    person = Tab(browser, stack)
    try:
        visitor = person.page
        # Nothing leaves the machine: the provider's development login page asks for a web
        # font on the internet, which is refused here before any connection.
        visitor.context.route(LEAVES_THE_MACHINE, lambda route: route.abort())
        visitor.goto(stack.url + "/")
        signing = visitor.get_by_role("form", name="Sign in with password")
        signing.get_by_label("E-mail").fill("sam.sso@example.com")
        signing.get_by_label("E-mail").press("Tab")
        offer = visitor.get_by_role("link", name="Continue with SSO")
        expect(offer).to_be_visible()
        assert serious_violations(visitor) == []
        offer.click()
        # The provider's own development forms: any login and password, then consent.
        visitor.locator("input[name=login]").fill("sam.sso@example.com")
        visitor.locator("input[name=password]").fill("anything")
        visitor.locator("button[type=submit]").click()
        visitor.locator("button[type=submit]").click()
        expect(visitor.get_by_role("heading", name="Agents", exact=True)).to_be_visible()
        expect(visitor.locator(".role-badge")).to_have_text("member")
        # The provider's pages (and the web font its development login page asks for,
        # refused above) are the provider's requests, not the dashboard's.
        theirs = (idp.issuer + "/", "https://fonts.googleapis.com/")
        person.requests[:] = [r for r in person.requests if not r[1].startswith(theirs)]
    finally:
        person.close()
    stack.api("DELETE", "/team/sso", owner_key(stack))


@pytest.fixture(scope="module")
def saml_idp(stack, tmp_path_factory) -> Iterator[SamlIdentityProvider]:
    provider = SamlIdentityProvider(tmp_path_factory.mktemp("saml"))
    stack.run(provider.start())
    yield provider
    stack.run(provider.close())


def test_owner_sets_up_saml_and_a_person_signs_in_through_it(browser, stack, tab, saml_idp):
    ensure_owner(stack)
    page = tab.page
    sign_in(page, stack)
    in_owners_team(page)
    nav(page, "Team")
    form = page.get_by_role("form", name="Single sign-on")
    form.get_by_label("Protocol").select_option("saml")
    # The addresses the provider asks for first are shown before anything is saved.
    acs = form.locator("code").nth(1)
    expect(acs).to_have_text(re.compile(re.escape(stack.url) + r"/api/v1/auth/saml/[\w-]+/acs$"))
    form.get_by_label("Identity provider metadata (XML)").fill(saml_idp.metadata_xml())
    form.get_by_label("E-mail domains").fill("example.com")
    form.get_by_role("button", name="Save single sign-on").click()
    expect(page.get_by_text("Single sign-on saved")).to_be_visible()
    form = page.get_by_role("form", name="Single sign-on")
    expect(form.get_by_label("Protocol")).to_have_value("saml")
    acs = form.locator("code").nth(1)
    expect(acs).to_have_text(re.compile(re.escape(stack.url) + r"/api/v1/auth/saml/[\w-]+/acs$"))
    form.get_by_role("button", name="Copy the ACS URL").click()
    expect(page.get_by_text("ACS URL copied")).to_be_visible()
    assert serious_violations(page, "main") == []
    prove_domain(page, stack)
    metadata_url = form.locator("code").nth(2).inner_text()
    with urllib.request.urlopen(metadata_url) as resp:  # noqa: S310 (our own 127.0.0.1)
        saml_idp.trust(resp.read().decode())
    saml_idp.person = Person("sally.saml@example.com", name="Sally Saml")

    person = Tab(browser, stack)
    try:
        visitor = person.page
        visitor.context.route(LEAVES_THE_MACHINE, lambda route: route.abort())
        visitor.goto(stack.url + "/")
        signing = visitor.get_by_role("form", name="Sign in with password")
        signing.get_by_label("E-mail").fill("sally.saml@example.com")
        signing.get_by_label("E-mail").press("Tab")
        offer = visitor.get_by_role("link", name="Continue with SSO")
        expect(offer).to_be_visible()
        offer.click()
        # The provider's page posts its signed answer to our ACS.
        visitor.get_by_role("button", name="Continue").click()
        expect(visitor.get_by_role("heading", name="Agents", exact=True)).to_be_visible()
        expect(visitor.locator(".role-badge")).to_have_text("member")
        person.requests[:] = [r for r in person.requests if not r[1].startswith(saml_idp.base_url)]
    finally:
        person.close()
    stack.api("DELETE", "/team/sso", owner_key(stack))
