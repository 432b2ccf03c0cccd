"""The widget's handoff outside business hours: the offline message, the e-mail address,
and the member's later reply sent there (kept in the outbox: no SMTP in this stack)."""

from __future__ import annotations

from playwright.sync_api import expect

from agentsvc.api import app_keys
from agentsvc.store import conversations as conv_store
from tests.support.widget_page import eventually, launcher, load


def _outbox(stack, to: str) -> list:
    async def read():
        mailer = stack.app[app_keys.mailer_key]
        await mailer.drain()
        return await mailer.kept(to)

    return stack.run(read())


def _visitor_gone(stack, conv_id: str) -> bool:
    async def read():
        found = await conv_store.get_public(stack.app[app_keys.db_key].reader, conv_id)
        return found.visitor_seen_at is None

    return stack.run(read())


def test_outside_business_hours_the_widget_asks_for_an_address(page, stack):
    agent_id = stack.new_agent()
    stack.api(
        "PATCH",
        f"/agents/{agent_id}",
        {
            "handoff": {
                "enabled": True,
                "businessHours": {"timezone": "UTC", "intervals": []},
                "offlineMessage": "We are away until Monday.",
            }
        },
    )
    stack.embed({"agentId": agent_id})
    load(page, stack)
    launcher(page).click()
    widget = page.locator("#agentsvc-widget")
    # Asking before any message starts the conversation first.
    widget.get_by_role("button", name="Talk to a person").click()
    log = widget.get_by_role("log")
    expect(log).to_contain_text("We are away until Monday.")
    address = widget.get_by_role("textbox", name="Your e-mail address")
    address.fill("ana@example.com")
    address.press("Enter")
    expect(log).to_contain_text("Thank you. We will answer at ana@example.com.")

    conv = stack.api("GET", f"/conversations?agentId={agent_id}")["data"][0]
    assert conv["status"] == "waiting"
    page.goto("about:blank")  # the visitor leaves: within a second they count as gone
    assert eventually(lambda: _visitor_gone(stack, conv["id"]))
    stack.api("POST", f"/conversations/{conv['id']}/messages", {"content": "Back on Monday!"})
    mails = eventually(lambda: _outbox(stack, "ana@example.com"))
    assert mails and "Back on Monday!" in mails[0].body
