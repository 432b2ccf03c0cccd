"""Event webhooks, data retention and the audit log in the dashboard: the owner creates a
webhook with chosen events (the secret shown once), reads its delivery log, redelivers a
failed delivery and deletes it; sets how long an agent keeps its data; reads the audit log.
A member of a team sees neither page's owner actions."""

from __future__ import annotations

from playwright.sync_api import expect

from tests.support.dashboard_stack import (
    Tab,
    chat_as_key,
    ensure_owner,
    image_stats,
    nav,
    owner_key,
    sign_in,
    wait_for,
)

OWNER_TEAM = "Olivia Owner's team (owner)"


def _in_owners_team(page) -> None:
    """Earlier files make the owner a member of a second team; act in the owner's own."""
    switcher = page.get_by_label("Team", exact=True)
    if switcher.count():
        current = switcher.locator("option:checked").inner_text()
        if current != OWNER_TEAM:
            # First, as a member there: no owner pages.
            expect(page.locator(".role-badge")).to_have_text("member")
            nav(page, "Webhooks")
            expect(page.get_by_text("Only the team owner manages event webhooks")).to_be_visible()
            expect(page.get_by_role("form", name="Create a webhook")).to_have_count(0)
            nav(page, "Audit log")
            expect(page.get_by_text("Only the team owner reads the audit log.")).to_be_visible()
            switcher = page.get_by_label("Team", exact=True)
            switcher.select_option(label=OWNER_TEAM)
    expect(page.locator(".role-badge")).to_have_text("owner")


def test_webhooks_retention_and_the_audit_log(browser, stack, shots):
    ensure_owner(stack)
    key = owner_key(stack)
    agent = stack.api("POST", "/agents", key, {"name": "Privacy helper"})["data"]
    tab = Tab(browser, stack)
    page = tab.page
    try:
        sign_in(page, stack)
        _in_owners_team(page)

        # Create a webhook for two events; its secret is shown once.
        nav(page, "Webhooks")
        form = page.get_by_role("form", name="Create a webhook")
        url = stack.receiver_url + "/events"
        form.get_by_label("Endpoint URL").fill(url)
        form.get_by_label("Description").fill("CRM sync")
        form.get_by_role("checkbox", name="Conversation started").check()
        form.get_by_role("checkbox", name="Message stored").check()
        form.get_by_role("button", name="Create webhook").click()
        expect(page.get_by_text("it is shown only once")).to_be_visible()
        secret = page.locator("#new-webhook-secret").inner_text()
        assert secret.startswith("whsec_")
        listed = page.get_by_role("table", name="Webhooks")
        expect(listed.get_by_role("link", name=url)).to_be_visible()
        expect(listed).to_contain_text("Conversation started, Message stored")
        # A bad address is refused with the API's message, nothing is created.
        form.get_by_label("Endpoint URL").fill("ftp://files.example.com/in")
        form.get_by_role("checkbox", name="Answer rated").check()
        form.get_by_role("button", name="Create webhook").click()
        expect(form.get_by_role("alert")).to_contain_text("url")
        hooks = stack.api("GET", "/webhooks", key)["data"]
        assert [h["url"] for h in hooks] == [url]
        # Leaving the page forgets the secret: it is never shown again.
        nav(page, "Agents")
        nav(page, "Webhooks")
        expect(page.locator("#new-webhook-secret")).to_have_count(0)

        # Events arrive signed; the delivery log shows them, with the body sent.
        received_before = len(stack.received)
        chat_as_key(stack, key, agent["id"], "Hello from the browser test")
        arrived = wait_for(lambda: len(stack.received) >= received_before + 3)
        assert arrived, stack.received
        new = stack.received[received_before:]
        assert {r["body"]["type"] for r in new} == {"conversation.created", "message.created"}
        assert all(r["headers"]["webhook-signature"].startswith("v1,") for r in new)
        page.get_by_role("table", name="Webhooks").get_by_role("link", name=url).click()
        log = page.get_by_role("table", name="Deliveries")
        expect(log.get_by_role("row")).to_have_count(4)  # a header and three deliveries
        created_row = log.get_by_role("row").filter(has_text="Conversation started")
        expect(created_row).to_contain_text("Delivered")
        created_row.get_by_role("button", name="Details").click()
        details = page.get_by_role("region", name="Delivery details")
        expect(details.locator("pre")).to_contain_text("Hello from the browser test")
        expect(details.get_by_role("table", name="Attempts")).to_contain_text("200")

        # A failing receiver: the attempts fail, then a redelivery succeeds.
        stack.failing = True
        chat_as_key(stack, key, agent["id"], "While the receiver is down")
        hook_id = hooks[0]["id"]
        failed_path = f"/webhooks/{hook_id}/deliveries?status=failed"
        failed = wait_for(lambda: len(stack.api("GET", failed_path, key)["data"]) == 3)
        assert failed, stack.api("GET", f"/webhooks/{hook_id}/deliveries", key)
        stack.failing = False
        page.get_by_role("button", name="Refresh").click()
        failed_rows = log.get_by_role("row").filter(has_text="Failed")
        expect(failed_rows).to_have_count(3)
        expect(failed_rows.first).to_contain_text("HTTP 503")
        first_failed = failed_rows.first
        first_failed.get_by_role("button", name="Redeliver").click()
        expect(page.get_by_text("Sent again")).to_be_visible()
        assert wait_for(lambda: len(stack.api("GET", failed_path, key)["data"]) == 2)
        page.get_by_role("button", name="Refresh").click()
        expect(log.get_by_role("row").filter(has_text="Failed")).to_have_count(2)
        png = page.screenshot(full_page=True)
        (shots / "webhook-deliveries.png").write_bytes(png)
        assert image_stats(page, png)["colours"] >= 12

        # Delete the webhook.
        page.get_by_role("link", name="All webhooks").click()
        page.get_by_role("button", name=f"Delete {url}").click()
        page.get_by_role("dialog").get_by_role("button", name="Delete webhook").click()
        expect(page.get_by_text("No webhooks yet.")).to_be_visible()
        assert stack.api("GET", "/webhooks", key)["data"] == []

        # Data retention on the agent's settings.
        nav(page, "Agents")
        page.get_by_role("link", name="Privacy helper").first.click()
        retention = page.get_by_role("form", name="Data retention")
        retention.get_by_label("Keep conversations and submissions for (days)").fill("30")
        retention.get_by_role("button", name="Save retention").click()
        expect(page.get_by_text("Kept 30 days")).to_be_visible()
        assert stack.api("GET", f"/agents/{agent['id']}", key)["data"]["retentionDays"] == 30

        # The audit log has all of it, filtered by action.
        nav(page, "Audit log")
        audit = page.get_by_role("table", name="Audit log")
        for action in ("Webhook created", "Webhook deleted", "Data retention changed"):
            expect(audit).to_contain_text(action)
        expect(audit.get_by_role("row").filter(has_text="Webhook created")).to_contain_text(url)
        expect(audit.get_by_role("row").filter(has_text="Webhook created")).to_contain_text(
            "Dashboard"
        )
        png = page.screenshot(full_page=True)
        (shots / "audit-log.png").write_bytes(png)
        assert image_stats(page, png)["colours"] >= 12
        page.get_by_label("Action filter").select_option("webhook.deleted")
        expect(audit.get_by_role("row")).to_have_count(2)
        expect(audit).to_contain_text("Webhook deleted")
        expect(audit).not_to_contain_text("Webhook created")
    finally:
        tab.close()
