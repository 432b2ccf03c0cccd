"""The widget's handoff outside business hours: the offline message, the e-mail address,
and the member's later reply sent there (kept in the outbox: no SMTP in this stack); a
member's reply with their picture, and what the widget tells the team of the visitor."""

from __future__ import annotations

import json
import urllib.request

from playwright.sync_api import expect

from agentsvc.api import app_keys
from agentsvc.store import conversations as conv_store
from tests.support.images import png
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


def _put_avatar(stack, data: bytes) -> str:
    req = urllib.request.Request(stack.api_url + "/api/v1/me/avatar", data=data, method="PUT")
    req.add_header("Content-Type", "image/png")
    req.add_header("Authorization", f"Bearer {stack.key}")
    with urllib.request.urlopen(req, timeout=30) as resp:
        return json.loads(resp.read())["avatarUrl"]


def test_a_members_reply_shows_their_picture_and_the_team_sees_the_visitors_page(page, stack):
    avatar = _put_avatar(stack, png(16, 16))
    agent_id = stack.new_agent()
    stack.api("PATCH", f"/agents/{agent_id}", {"handoff": {"enabled": True}})
    stack.embed({"agentId": agent_id})
    load(page, stack, "/pricing?from=newsletter")
    page.evaluate(
        "agentsvc.identify({userId: 'cust-1', userName: 'Vera',"
        " attributes: {plan: 'gold', orders: 3, trial: false}})"
    )
    launcher(page).click()
    widget = page.locator("#agentsvc-widget")
    widget.get_by_role("button", name="Talk to a person").click()
    conv = eventually(lambda: stack.api("GET", f"/conversations?agentId={agent_id}")["data"])[0]
    stack.api("POST", f"/conversations/{conv['id']}/messages", {"content": "Hello, Olivia here"})
    log = widget.get_by_role("log")
    expect(log).to_contain_text("Hello, Olivia here")
    picture = widget.locator(".who img")
    expect(picture).to_have_count(1)
    assert picture.get_attribute("alt") == ""
    assert picture.get_attribute("src") == avatar
    page.wait_for_function(
        "() => { const w = document.querySelector('#agentsvc-widget');"
        " const img = (w.shadowRoot || w).querySelector('.who img');"
        " return img && img.complete && img.naturalWidth === 16; }"
    )
    # The team sees where the visitor is and what the site told identify.
    visitor = stack.api("GET", f"/conversations/{conv['id']}/visitor")["data"]
    assert visitor["pageUrl"] == stack.host_url + "/pricing?from=newsletter"
    assert visitor["attributes"] == {"plan": "gold", "orders": 3, "trial": False}
    assert visitor["language"]
    assert visitor["userId"] == "cust-1" and visitor["verified"] is False
