"""SCIM provisioning in a real browser (issue 35): on the Team page the owner reads the base
URL to paste, creates a token (shown once, with a copy button) that the SCIM API accepts,
and revokes it; no serious or critical axe-core finding on the page."""

from __future__ import annotations

import urllib.error
import urllib.request

from playwright.sync_api import expect

from tests.support.axe import serious_violations
from tests.support.dashboard_stack import ensure_owner, in_owners_team, nav, sign_in


def _scim_status(stack, token: str) -> int:
    request = urllib.request.Request(
        stack.url + "/api/v1/scim/v2/Users", headers={"Authorization": f"Bearer {token}"}
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as resp:  # noqa: S310 (loopback)
            return resp.status
    except urllib.error.HTTPError as exc:
        return exc.code


def test_owner_creates_copies_and_revokes_a_scim_token(stack, tab):
    ensure_owner(stack)
    page = tab.page
    sign_in(page, stack)
    in_owners_team(page)
    nav(page, "Team")
    expect(page.get_by_role("heading", name="Provisioning (SCIM)")).to_be_visible()
    expect(page.get_by_text(stack.url + "/api/v1/scim/v2", exact=True)).to_be_visible()
    page.get_by_role("button", name="Create token").click()
    shown = page.get_by_text("Shown once:")
    expect(shown).to_be_visible()
    token = shown.locator("code").inner_text()
    assert token.startswith("scim_")
    page.get_by_role("button", name="Copy token").click()
    expect(page.get_by_text("Copied")).to_be_visible()
    assert page.evaluate("navigator.clipboard.readText()") == token
    assert _scim_status(stack, token) == 200
    assert serious_violations(page, "main") == []
    # Shown once: after a reload only its date is left.
    page.reload()
    expect(page.get_by_text("Token made")).to_be_visible()
    assert token not in page.content()
    page.get_by_role("button", name="Revoke token").click()
    page.get_by_role("dialog").get_by_role("button", name="Revoke").click()
    expect(page.get_by_role("button", name="Revoke token")).to_have_count(0)
    assert _scim_status(stack, token) == 401
