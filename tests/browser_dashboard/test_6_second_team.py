"""Last, as it changes where the owner signs in: joining a second team and switching."""

from __future__ import annotations

import re

from playwright.sync_api import expect

from tests.support.dashboard_stack import OWNER_EMAIL, Tab, ensure_owner, nav, sign_in


def test_signed_in_user_accepts_an_invitation_and_switches_teams(browser, stack):
    ensure_owner(stack)
    octo = Tab(browser, stack)
    octo.page.goto(stack.url + "/")
    octo.page.get_by_role("link", name="Sign in with GitHub").click()
    nav(octo.page, "Team")
    invite = octo.page.get_by_role("form", name="Invite a member")
    invite.get_by_label("E-mail").fill(OWNER_EMAIL)
    invite.get_by_role("button", name="Send invitation").click()
    expect(octo.page.get_by_role("table", name="Invitations")).to_contain_text(OWNER_EMAIL)
    mail = stack.outbox(OWNER_EMAIL)
    link = re.search(r"(http://\S+/accept-invitation\?token=\S+)", mail[0].body).group(1)

    owner = Tab(browser, stack)
    page = owner.page
    sign_in(page, stack)
    page.goto(link)
    expect(page.get_by_text(f"You are signed in as {OWNER_EMAIL}")).to_be_visible()
    page.get_by_role("button", name="Accept invitation").click()
    # The session now acts in the team just joined, as a member there.
    expect(page.locator(".role-badge")).to_have_text("member")
    switcher = page.get_by_label("Team", exact=True)
    expect(switcher).to_contain_text("Octo Cat's team (member)")
    expect(page.get_by_role("link", name="New agent")).to_have_count(0)
    switcher.select_option(label="Olivia Owner's team (owner)")
    expect(page.locator(".role-badge")).to_have_text("owner")
    expect(page.get_by_role("link", name="Support bot")).to_be_visible()
    owner.close()
    octo.close()
