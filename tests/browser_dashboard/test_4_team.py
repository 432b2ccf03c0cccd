"""Team and roles: inviting, a member without owner actions, removal, switching teams."""

from __future__ import annotations

import re

from playwright.sync_api import expect

from tests.support.dashboard_stack import (
    Tab,
    accept_invitation,
    ensure_owner,
    nav,
    sign_in,
)


def test_invited_member_sees_no_owner_actions_and_can_be_removed(browser, stack):
    ensure_owner(stack)
    owner = Tab(browser, stack)
    sign_in(owner.page, stack)
    page = owner.page
    nav(page, "Team")
    invite = page.get_by_role("form", name="Invite a member")
    invite.get_by_label("E-mail").fill("mia@example.com")
    invite.get_by_role("button", name="Send invitation").click()
    expect(page.get_by_role("row").filter(has_text="mia@example.com")).to_contain_text("Pending")
    invite.get_by_label("E-mail").fill("typo@example.com")
    invite.get_by_role("button", name="Send invitation").click()
    typo = page.get_by_role("row").filter(has_text="typo@example.com")
    typo.get_by_role("button", name="Cancel invitation to typo@example.com").click()
    expect(typo).to_contain_text("Cancelled")

    # No SMTP configured: the invitation is in the outbox, with its link to this instance.
    mail = stack.outbox("mia@example.com")
    link = re.search(r"(http://\S+/accept-invitation\?token=\S+)", mail[0].body).group(1)
    assert link.startswith(stack.url)

    member = accept_invitation(browser, stack, link, "Mia Member")
    mpage = member.page
    # Owner-only actions are not offered to a member...
    expect(mpage.get_by_role("link", name="New agent")).to_have_count(0)
    mpage.get_by_role("link", name="Support bot").click()
    expect(mpage.get_by_role("button", name="Save changes")).to_be_visible()
    expect(mpage.get_by_role("button", name="Delete agent")).to_have_count(0)
    nav(mpage, "Team")
    expect(mpage.get_by_role("form", name="Invite a member")).to_have_count(0)
    expect(mpage.get_by_role("button", name=re.compile("^Remove"))).to_have_count(0)
    expect(mpage.get_by_role("cell", name="owner@example.com", exact=True)).to_be_visible()
    # ...and the API refuses them anyway, with the cookie the page carries.
    status = mpage.evaluate(
        """async () => (await fetch("/api/v1/agents", {method: "POST",
            headers: {"Content-Type": "application/json"},
            body: JSON.stringify({name: "Sneaky"})})).status"""
    )
    assert status == 403
    # Members may edit tools (the API allows it), so they see the tool editor.
    nav(mpage, "Tools")
    expect(mpage.get_by_role("link", name="New tool")).to_be_visible()

    # The owner removes the member; the member's session loses the team at once.
    page.reload()
    page.get_by_role("button", name="Remove mia@example.com").click()
    page.get_by_role("dialog").get_by_role("button", name="Remove member").click()
    members = page.get_by_role("table", name="Members")
    expect(members.get_by_role("cell", name="mia@example.com", exact=True)).to_have_count(0)
    expect(members.get_by_role("cell", name="owner@example.com", exact=True)).to_be_visible()
    mpage.reload()
    expect(mpage.get_by_role("heading", name="Sign in")).to_be_visible()
    member.close()
    owner.close()
