"""Handoff in two browsers at once: a visitor's widget on a third-party page and a member's
dashboard Inbox. The visitor asks for a person, the member sees it arrive live, takes it
and replies; the reply reaches the open widget within a second and survives a reload; the
member hands back and the agent answers again."""

from __future__ import annotations

import time

from aiohttp import web
from playwright.sync_api import expect

from agentsvc.api.widget import embed_snippet
from tests.support.dashboard_stack import Tab, ensure_owner, nav, owner_key, sign_in


def _host_site(stack, agent_id: str) -> str:
    """A page of another origin that embeds the widget with the README's snippet."""
    snippet = embed_snippet({"agentId": agent_id}, stack.url + "/widget.js")
    html = (
        "<!doctype html><html><head><meta charset='utf-8'><title>Shop</title>"
        f"{snippet}</head><body><h1>A shop</h1></body></html>"
    )

    async def page(request: web.Request) -> web.Response:
        return web.Response(text=html, content_type="text/html")

    app = web.Application()
    app.router.add_get("/{tail:.*}", page)
    return f"http://127.0.0.1:{stack.run(stack._serve(app, 0))}/shop"


def _widget(page):
    page.wait_for_function("() => window.agentsvc && window.agentsvc.ready === true")
    return page.locator("#agentsvc-widget")


def test_a_visitor_and_a_member_hand_a_conversation_over_and_back(browser, stack):
    ensure_owner(stack)
    key = owner_key(stack)
    agent = stack.api(
        "POST",
        "/agents",
        key,
        {"name": "Shop helper", "systemPrompt": "We open at nine. Parcels ship within a day."},
    )["data"]
    stack.api("PATCH", f"/agents/{agent['id']}", key, {"handoff": {"enabled": True}})
    shop = _host_site(stack, agent["id"])

    member = Tab(browser, stack)
    # The visitor's browser is on the shop's origin: not a dashboard tab.
    visitor = browser.new_context(viewport={"width": 1200, "height": 800})
    visitor.set_default_timeout(10_000)
    v = visitor.new_page()
    visitor_errors: list[str] = []
    v.on("pageerror", lambda exc: visitor_errors.append(str(exc)))
    try:
        # The member waits on the Inbox page.
        sign_in(member.page, stack)
        switcher = member.page.get_by_label("Team", exact=True)
        if switcher.count():  # earlier tests joined another team: act in the owner's
            switcher.select_option(label="Olivia Owner's team (owner)")
            expect(member.page.locator(".role-badge")).to_have_text("owner")
        nav(member.page, "Inbox")
        inbox = member.page.locator("main")
        expect(inbox.get_by_text("Nobody is waiting for a person.")).to_be_visible()

        # The visitor chats with the agent, then asks for a person.
        v.goto(shop)
        widget = _widget(v)
        widget.get_by_role("button", name="Open chat").click()
        box = widget.get_by_role("textbox", name="Message")
        box.fill("Where is my parcel?")
        widget.get_by_role("button", name="Send").click()
        log = widget.get_by_role("log")
        expect(log.locator(".assistant[aria-busy=false]")).to_contain_text("ship")
        ask = widget.get_by_role("button", name="Talk to a person")
        ask.click()
        expect(log).to_contain_text("A person from the team will answer here shortly.")
        expect(ask).to_be_hidden()  # asked already: pressing it again would do nothing

        # It appears in the member's Inbox without a reload.
        row = inbox.get_by_role("link", name="Where is my parcel?")
        expect(row).to_be_visible()
        expect(inbox.get_by_text("Waiting for a person")).to_be_visible()
        row.click()
        expect(inbox.get_by_role("heading", name="Where is my parcel?")).to_be_visible()
        inbox.get_by_role("button", name="Take it").click()
        expect(inbox.get_by_text("With a person")).to_be_visible()
        expect(log).to_contain_text("Olivia Owner joined the conversation.")

        # The reply reaches the open widget within a second.
        inbox.get_by_label("Reply to the visitor").fill("Olivia here: it left our store today.")
        started = time.monotonic()
        inbox.get_by_role("button", name="Send reply").click()
        reply = log.locator(".assistant", has_text="Olivia here: it left our store today.")
        expect(reply).to_be_visible(timeout=2000)
        assert time.monotonic() - started < 1.0
        expect(reply.locator(".who")).to_have_text("Olivia Owner")
        # The visitor answers; the member sees it live in the conversation.
        box.fill("Thank you! Tracking number?")
        widget.get_by_role("button", name="Send").click()
        expect(inbox.get_by_role("list", name="Messages")).to_contain_text("Tracking number?")

        # A reply while the visitor is away shows after they come back.
        v.goto("about:blank")
        inbox.get_by_label("Reply to the visitor").fill("Tracking: AB-123.")
        inbox.get_by_role("button", name="Send reply").click()
        expect(inbox.get_by_role("list", name="Messages")).to_contain_text("Tracking: AB-123.")
        v.goto(shop)
        widget = _widget(v)
        widget.get_by_role("button", name="Open chat").click()
        log = widget.get_by_role("log")
        expect(log).to_contain_text("Olivia here: it left our store today.")
        expect(log).to_contain_text("Tracking: AB-123.")
        expect(widget.get_by_role("button", name="Talk to a person")).to_be_hidden()

        # Back to the agent, which answers with the whole conversation as context.
        inbox.get_by_role("button", name="Hand back to the agent").click()
        expect(inbox.get_by_text("With the agent")).to_be_visible()
        expect(log).to_contain_text("The assistant is back.")
        expect(widget.get_by_role("button", name="Talk to a person")).to_be_visible()
        box = widget.get_by_role("textbox", name="Message")
        box.fill("When do you open?")
        widget.get_by_role("button", name="Send").click()
        expect(log.locator(".assistant[aria-busy=false]").last).to_contain_text("nine")
        conv = stack.api("GET", f"/conversations?agentId={agent['id']}", key)["data"][0]
        assert conv["status"] == "bot"
    finally:
        member.close()
        visitor.close()
    assert visitor_errors == []
