"""First run and sign-in: owner creation (only once), password, magic link, OAuth."""

from __future__ import annotations

import re

from playwright.sync_api import expect

from tests.support.dashboard_stack import (
    OWNER_EMAIL,
    PASSWORD,
    ensure_owner,
)


def test_first_run_offers_owner_creation_only_while_no_user_exists(tab, stack):
    page = tab.page
    page.goto(stack.url + "/")
    expect(page.get_by_role("heading", name="Welcome — create the owner account")).to_be_visible()
    page.get_by_label("Your name").fill("Olivia Owner")
    page.get_by_label("E-mail").fill(OWNER_EMAIL)
    page.get_by_label("Password", exact=True).fill("short")
    page.get_by_role("button", name="Create owner account").click()
    expect(page.get_by_role("alert")).to_contain_text("at least 8 characters")
    page.get_by_label("Password", exact=True).fill(PASSWORD)
    page.get_by_role("button", name="Create owner account").click()
    # Signed in straight away, as the owner.
    expect(page.get_by_role("heading", name="Agents", exact=True)).to_be_visible()
    expect(page.locator(".role-badge")).to_have_text("owner")
    expect(page.get_by_role("link", name="New agent")).to_be_visible()

    page.get_by_role("button", name="Sign out").click()
    expect(page.get_by_role("heading", name="Sign in")).to_be_visible()
    page.reload()
    expect(page.get_by_role("heading", name="Sign in")).to_be_visible()
    expect(page.get_by_role("button", name="Create owner account")).to_have_count(0)
    expect(page.get_by_role("button", name="E-mail me a sign-in link")).to_be_visible()

    form = page.get_by_role("form", name="Sign in with password")
    form.get_by_label("E-mail").fill(OWNER_EMAIL)
    form.get_by_label("Password", exact=True).fill("wrong password")
    form.get_by_role("button", name="Sign in").click()
    expect(form.get_by_role("alert")).to_contain_text("Invalid email or password")


def test_magic_link_request_from_the_sign_in_page(tab, stack):
    ensure_owner(stack)
    page = tab.page
    page.goto(stack.url + "/")
    magic = page.get_by_role("form", name="Sign in with a link")
    magic.get_by_label("E-mail").fill(OWNER_EMAIL)
    magic.get_by_role("button", name="E-mail me a sign-in link").click()
    # No SMTP here: the page says the link is in the server's log, not "on its way".
    status = page.get_by_role("status").filter(has_text="written to the server's log")
    expect(status).to_be_visible()
    expect(status.locator("code")).to_have_text(f"agentsvc login-link --email {OWNER_EMAIL}")
    mail = stack.outbox(OWNER_EMAIL)
    link = re.search(r"(http://\S+token=\S+)", mail[0].body).group(1)
    page.goto(link)
    expect(page.get_by_role("heading", name="Agents", exact=True)).to_be_visible()


def test_oauth_button_signs_in_through_the_configured_provider(tab, stack):
    ensure_owner(stack)
    page = tab.page
    page.goto(stack.url + "/")
    button = page.get_by_role("link", name="Sign in with GitHub")
    expect(page.get_by_role("link", name="Sign in with Google")).to_have_count(0)
    expect(button).to_have_attribute("href", "/api/v1/auth/sign-in/github?callbackUrl=%2F")
    button.click()
    expect(page.get_by_role("heading", name="Agents", exact=True)).to_be_visible()
    expect(page.locator(".topbar .who")).to_have_text("Octo Cat")
    assert stack.oauth.authorize_requests[-1]["code_challenge_method"] == "S256"
