"""The support desk in a real browser (issue 31 items 2 and 8): the inbox's views, search and
live list; a desktop notification for a new waiting conversation; a private note the
visitor's open widget never receives; a canned response inserted with "/"; assignment to a
member; the keyboard shortcuts; the profile's picture; the team renamed; no serious or
critical axe-core finding on the inbox, a conversation or the profile page.

`AGENTSVC_WRITE_ARTEFACTS=1 python3 -m pytest tests/browser_dashboard/test_17_desk.py`
rewrites the inbox's pictures under tests/browser/artefacts/ (dashboard-inbox*.png)."""

from __future__ import annotations

import json
import os
import re
import struct
import urllib.request
import zlib
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest
from aiohttp import web
from playwright.sync_api import Page, expect

from agentsvc.api.widget import embed_snippet
from tests.support.axe import serious_violations
from tests.support.dashboard_stack import (
    PASSWORD,
    Tab,
    ensure_owner,
    in_owners_team,
    nav,
    owner_key,
    public_post,
    sign_in,
    wait_for,
)

HERE = Path(__file__).resolve().parent
ARTEFACTS = HERE.parent / "browser" / "artefacts"
# A browser where the member allowed desktop notifications (Chromium's headless shell, which
# the tests run, answers "denied" whatever a context grants): records each notification the
# page makes and counts the beeps (Web Audio oscillators).
RECORD_NOTIFICATIONS = """
(() => {
  const oscillator = AudioContext.prototype.createOscillator;
  window.__beeps = 0;
  AudioContext.prototype.createOscillator = function () {
    window.__beeps++;
    return oscillator.call(this);
  };
  window.__notified = [];
  window.Notification = class {
    constructor(title, options) { window.__notified.push({title, body: (options || {}).body}); }
    static get permission() { return "granted"; }
    static requestPermission() { return Promise.resolve("granted"); }
  };
})();
"""


# A browser that has not asked for the notification permission yet; counts the asks.
NEVER_ASKED = """
(() => {
  let permission = "default";
  window.__asked = 0;
  window.Notification = class {
    static get permission() { return permission; }
    static requestPermission() {
      window.__asked++;
      permission = "granted";
      return Promise.resolve(permission);
    }
  };
})();
"""


def _picture(page: Page, shots: Path, name: str) -> None:
    """A screenshot: kept under tests/browser/artefacts/ when asked, else a test's file."""
    keep = os.environ.get("AGENTSVC_WRITE_ARTEFACTS") == "1"
    page.screenshot(path=str((ARTEFACTS if keep else shots) / f"{name}.png"))


def _png(width: int = 8, height: int = 8) -> bytes:
    """A small valid PNG (a plain orange square)."""
    raw = b"".join(b"\x00" + b"\xf0\x8a\x24" * width for _ in range(height))

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    head = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", head)
        + chunk(b"IDAT", zlib.compress(raw))
        + chunk(b"IEND", b"")
    )


def _host_site(stack, agent_id: str) -> str:
    """A page of another origin that embeds the widget with the README's snippet and
    declares its signed-in customer (unverified: no hash or token)."""
    customer = {"userId": "user-eve", "userEmail": "eve@example.com", "userName": "Eve Martin"}
    snippet = embed_snippet({"agentId": agent_id, **customer}, stack.url + "/widget.js")
    html = (
        "<!doctype html><html><head><meta charset='utf-8'><title>Shop</title>"
        f"{snippet}<script>agentsvc.identify({{userId: 'user-eve',"
        " attributes: {plan: 'Gold', orders: 12}});</script>"
        "</head><body><h1>A shop</h1></body></html>"
    )

    async def page(request: web.Request) -> web.Response:
        return web.Response(text=html, content_type="text/html")

    app = web.Application()
    app.router.add_get("/{tail:.*}", page)
    return f"http://127.0.0.1:{stack.run(stack._serve(app, 0))}/shop"


def _chat(stack, key: str, body: dict) -> str:
    """One chat turn over the API (as the site's server); the conversation's id."""
    request = urllib.request.Request(
        stack.url + "/api/v1/chat",
        data=json.dumps(body).encode(),
        headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json"},
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=10) as resp:  # noqa: S310 (loopback)
        stream = resp.read().decode()
    return re.search(r'"conversationId":\s*"([^"]+)"', stream).group(1)


def _waiting(stack, key: str, agent_id: str, text: str, user=None, then: str = "") -> str:
    """A conversation that asks for a person (and the visitor's next message); its id."""
    body = {"agentId": agent_id, "messages": [{"role": "user", "content": text}]}
    if user:
        body["user"] = user
    conv_id = _chat(stack, key, body)
    stack.api("POST", f"/conversations/{conv_id}/handoff", key, {})
    if then:
        _chat(
            stack,
            key,
            {**body, "conversationId": conv_id, "messages": [{"role": "user", "content": then}]},
        )
    return conv_id


def _visitor(name: str) -> dict:
    """A visitor signed in on the shop (the site's server vouches for them)."""
    first = name.split()[0].lower()
    return {"id": f"user-{first}", "name": name, "email": f"{first}@example.com"}


@pytest.fixture(scope="module")
def desk(stack) -> dict:
    """An agent with handoff on, a second member (Sam), and a few waiting conversations."""
    ensure_owner(stack)
    key = owner_key(stack)
    agent = stack.api(
        "POST",
        "/agents",
        key,
        {
            "name": "Shop helper",
            "systemPrompt": "We open at nine. Parcels ship within a day. Sizes can be"
            " exchanged within 30 days. Refunds are paid within 5 days of the return.",
        },
    )["data"]
    stack.api("PATCH", f"/agents/{agent['id']}", key, {"handoff": {"enabled": True}})
    invitation = stack.api(
        "POST", "/team/invite", key, {"email": "sam@example.com", "role": "member"}
    )
    token = parse_qs(urlsplit(invitation["link"]).query)["token"][0]
    public_post(
        stack,
        "/team/invitations/accept",
        {"token": token, "password": PASSWORD, "name": "Sam Support"},
    )
    people = [
        ("My order never arrived", "Ana Lima", "It was order 1043, paid on Monday."),
        ("Can I change the size?", "Ben Okafor", "The shoes are one size too small."),
        ("Do you ship to Norway?", "Cleo Berg", ""),
        ("Where is my refund?", "Dana Novak", "I sent the parcel back two weeks ago."),
    ]
    ids = [
        _waiting(stack, key, agent["id"], text, _visitor(name), then) for text, name, then in people
    ]
    members = stack.api("GET", "/team/members", key)
    sam = next(m for m in members if m["email"] == "sam@example.com")
    stack.api("POST", f"/conversations/{ids[3]}/assign", key, {"memberId": sam["id"]})
    return {"key": key, "agent": agent, "ids": ids, "shop": _host_site(stack, agent["id"])}


def _signed_in(tab: Tab, stack) -> Page:
    sign_in(tab.page, stack)
    in_owners_team(tab.page)
    return tab.page


def test_the_inbox_lists_views_searches_and_moves_by_keyboard(browser, stack, desk, shots):
    tab = Tab(browser, stack)
    try:
        page = _signed_in(tab, stack)
        page.set_viewport_size({"width": 1280, "height": 800})
        nav(page, "Inbox")
        main = page.locator("main")
        table = main.get_by_role("table", name="Conversations")
        expect(table.get_by_role("link", name="My order never arrived")).to_be_visible()
        row = table.locator("tr", has_text="My order never arrived")
        expect(row).to_contain_text("Ana Lima")
        expect(row).to_contain_text("Shop helper")
        expect(row).to_contain_text("Waiting for a person")
        expect(row).to_contain_text(re.compile(r"for (under a minute|\d+ min)"))
        expect(row).to_contain_text("Nobody")
        _picture(page, shots, "dashboard-inbox")
        assert serious_violations(page, "main") == []

        # Search by the visitor's name, then clear.
        search = main.get_by_role("searchbox", name="Search the inbox")
        search.fill("Cleo")
        expect(table.get_by_role("link")).to_have_count(1)
        expect(table.get_by_role("link", name="Do you ship to Norway?")).to_be_visible()
        search.fill("")
        expect(main.get_by_role("link", name="Can I change the size?")).to_be_visible()
        # Mine: nothing is the owner's yet; Waiting: the three.
        main.get_by_role("button", name="Mine", exact=True).click()
        expect(main.get_by_text("No conversation in this view.")).to_be_visible()
        main.get_by_role("button", name="Waiting", exact=True).click()
        expect(main.get_by_role("link", name="My order never arrived")).to_be_visible()

        # j/k move through the list; Enter opens.
        main.get_by_role("button", name="All", exact=True).click()
        expect(main.get_by_role("button", name="All", exact=True)).to_have_attribute(
            "aria-pressed", "true"
        )
        main.focus()
        page.keyboard.press("j")
        links = main.get_by_role("table", name="Conversations").get_by_role("link")
        expect(links.first).to_be_focused()
        page.keyboard.press("j")
        expect(links.nth(1)).to_be_focused()
        page.keyboard.press("k")
        expect(links.first).to_be_focused()
        title = links.first.inner_text()
        page.keyboard.press("Enter")
        expect(main.get_by_role("heading", name=title)).to_be_visible()
    finally:
        tab.close()


def test_a_new_waiting_conversation_appears_live_with_a_desktop_notification(browser, stack, desk):
    tab = Tab(browser, stack)
    try:
        tab.context.add_init_script(RECORD_NOTIFICATIONS)
        page = _signed_in(tab, stack)
        # The member wants desktop notifications and a sound (Profile).
        nav(page, "Profile")
        prefs = page.get_by_role("form", name="Notifications")
        prefs.get_by_label("Show a desktop notification").check()
        prefs.get_by_label("Play a sound").check()
        prefs.get_by_role("button", name="Update notifications").click()
        expect(page.get_by_text("Notifications saved")).to_be_visible()

        nav(page, "Inbox")
        main = page.locator("main")
        expect(main.get_by_role("link", name="My order never arrived")).to_be_visible()
        _waiting(stack, desk["key"], desk["agent"]["id"], "Is the shop open on Sunday?")
        expect(main.get_by_role("link", name="Is the shop open on Sunday?")).to_be_visible()
        notified = wait_for(lambda: page.evaluate("window.__notified"))
        assert notified == [
            {"title": "A visitor is waiting for a person", "body": "Agent: Shop helper"}
        ]
        assert page.evaluate("window.__beeps") == 1
    finally:
        tab.close()


def test_the_inbox_catches_up_when_its_live_stream_comes_back(browser, stack, desk):
    """What happened while the live stream was cut (a network blip, a server restart) shows
    when it reconnects: the list is read again each time the stream opens."""
    tab = Tab(browser, stack)
    try:
        page = _signed_in(tab, stack)
        events = "**/api/v1/inbox/events*"
        page.route(events, lambda route: route.abort())
        nav(page, "Inbox")
        main = page.locator("main")
        expect(main.get_by_role("link", name="My order never arrived")).to_be_visible()
        _waiting(stack, desk["key"], desk["agent"]["id"], "Do you sell gift cards?")
        page.unroute(events)
        expect(main.get_by_role("link", name="Do you sell gift cards?")).to_be_visible()
    finally:
        tab.close()


def test_assign_a_conversation_to_a_member(browser, stack, desk):
    tab = Tab(browser, stack)
    try:
        tab.context.add_init_script(NEVER_ASKED)
        page = _signed_in(tab, stack)
        page.goto(f"{stack.url}/#/inbox/{desk['ids'][1]}")
        main = page.locator("main")
        expect(main.get_by_role("heading", name="Can I change the size?")).to_be_visible()
        main.get_by_label("Assign to").select_option(label="Sam Support")
        expect(main.locator(".status-row")).to_contain_text("Sam Support")
        expect(main.get_by_text("Sam Support took the conversation")).to_be_visible()
        # Taken by someone: "Take it" is gone.
        expect(main.get_by_role("button", name="Take it")).to_be_hidden()
        nav(page, "Inbox")
        # Desktop notifications are on (the previous test) and this browser was never asked
        # (headless Chromium answers "denied" at once: a stand-in asks): only a click asks.
        turn_on = main.get_by_role("button", name="Turn on desktop notifications")
        assert page.evaluate("window.__asked") == 0
        turn_on.click()
        expect(turn_on).to_be_hidden()
        assert page.evaluate("window.__asked") == 1
        row = main.locator("tr", has_text="Can I change the size?")
        expect(row).to_contain_text("Sam Support")
        expect(row).to_contain_text("With a person")
        expect(row).not_to_contain_text("unread")  # opened: read
        main.get_by_role("button", name="Unassigned", exact=True).click()
        expect(main.get_by_role("link", name="My order never arrived")).to_be_visible()
        expect(main.get_by_role("link", name="Can I change the size?")).to_have_count(0)
    finally:
        tab.close()


def test_a_private_note_never_reaches_the_visitor_and_a_canned_response_is_inserted(
    browser, stack, desk, shots
):
    member = Tab(browser, stack)
    visitor = browser.new_context(viewport={"width": 1200, "height": 800}, locale="en-IE")
    visitor.set_default_timeout(10_000)
    v = visitor.new_page()
    try:
        page = _signed_in(member, stack)
        # A canned response, made on the Team page.
        nav(page, "Team")
        add = page.get_by_role("form", name="Add a canned response")
        add.get_by_label("Shortcut").fill("tracking")
        add.get_by_label("Title").fill("Tracking link")
        add.get_by_label("Text").fill("Your parcel can be followed at track.example.com.")
        add.get_by_role("button", name="Add response").click()
        expect(page.get_by_text("/tracking", exact=True)).to_be_visible()

        # The visitor asks for a person in the widget.
        v.goto(desk["shop"], referer="https://search.example.com/?q=parcel")
        v.wait_for_function("() => window.agentsvc && window.agentsvc.ready === true")
        widget = v.locator("#agentsvc-widget")
        widget.get_by_role("button", name="Open chat").click()
        widget.get_by_role("textbox", name="Message").fill("Where is parcel 4471?")
        widget.get_by_role("button", name="Send").click()
        log = widget.get_by_role("log")
        expect(log.locator(".assistant[aria-busy=false]")).to_contain_text("ship")
        widget.get_by_role("button", name="Talk to a person").click()
        expect(log).to_contain_text("A person from the team will answer here shortly.")

        nav(page, "Inbox")
        main = page.locator("main")
        main.get_by_role("link", name="Where is parcel 4471?").click()
        expect(main.get_by_role("heading", name="Where is parcel 4471?")).to_be_visible()
        main.get_by_role("button", name="Take it").click()
        expect(main.get_by_role("button", name="Take it")).to_be_hidden()
        expect(log).to_contain_text("Olivia Owner joined the conversation.")

        # "n" opens the private note; it shows in the timeline, marked as private.
        main.focus()
        page.keyboard.press("n")
        box = main.get_by_label("Private note for your team")
        expect(box).to_be_focused()
        box.fill("Careful: this customer had two lost parcels before.")
        main.get_by_role("button", name="Add note").click()
        note = main.locator(".msg.note")
        expect(note).to_contain_text("Careful: this customer had two lost parcels before.")
        expect(note).to_contain_text("Private note – only your team sees this")

        # "r" goes back to the reply; "/" and a few letters offer the canned response.
        box.press("Escape")
        page.keyboard.press("r")
        reply = main.get_by_label("Reply to the visitor")
        expect(reply).to_be_focused()
        reply.press_sequentially("Hello! /trac")
        listbox = main.get_by_role("listbox", name="Canned responses")
        expect(listbox.get_by_role("option")).to_have_count(1)
        option = listbox.get_by_role("option", name="/tracking Tracking link")
        expect(option).to_have_attribute("aria-selected", "true")
        expect(reply).to_have_attribute("aria-activedescendant", option.get_attribute("id"))
        reply.press("Enter")
        expect(listbox).to_be_hidden()
        expect(reply).to_have_value("Hello! Your parcel can be followed at track.example.com.")
        page.set_viewport_size({"width": 1280, "height": 800})
        main.get_by_role("button", name="Send reply").click()

        # The reply, sent after the note, reaches the widget; the note never did.
        expect(log).to_contain_text("Your parcel can be followed at track.example.com.")
        expect(widget).not_to_contain_text("two lost parcels")
        v.reload()
        v.wait_for_function("() => window.agentsvc && window.agentsvc.ready === true")
        widget.get_by_role("button", name="Open chat").click()
        expect(log).to_contain_text("Your parcel can be followed at track.example.com.")
        expect(widget).not_to_contain_text("two lost parcels")

        panel = main.get_by_role("complementary", name="Visitor")
        expect(panel.get_by_role("heading", name="Eve Martin")).to_be_visible()
        expect(panel).to_contain_text("eve@example.com")
        expect(panel).to_contain_text("Not verified")
        expect(panel).to_contain_text(desk["shop"])
        expect(panel).to_contain_text("https://search.example.com/?q=parcel")
        expect(panel).to_contain_text("English (Ireland)")
        expect(panel).to_contain_text("Gold")
        page.evaluate("document.getElementById('toasts').replaceChildren()")
        _picture(page, shots, "dashboard-inbox-conversation")
        assert serious_violations(page, "main") == []

        # "?" lists the shortcuts; "e" closes the conversation.
        main.focus()
        page.keyboard.press("?")
        shortcuts = main.locator("details", has_text="Keyboard shortcuts")
        expect(shortcuts).to_have_attribute("open", "")
        expect(shortcuts).to_contain_text("Close the conversation")
        page.keyboard.press("e")
        expect(main.locator(".status-row")).to_contain_text("Closed")

        # The conversation page names the member and shows the note and the handoff events.
        conv_id = page.url.rsplit("/", 1)[1]
        page.goto(f"{stack.url}/#/conversations/{conv_id}")
        timeline = main.get_by_role("log", name="Messages")
        reply_entry = timeline.locator("article", has_text="track.example.com")
        expect(reply_entry.locator(".who")).to_have_text("Olivia Owner")
        expect(timeline).to_contain_text("Private note – only your team sees this")
        expect(timeline).to_contain_text("The visitor asked for a person")
        expect(timeline).to_contain_text("Olivia Owner took the conversation")
        expect(timeline).to_contain_text("The conversation was closed")
    finally:
        member.close()
        visitor.close()


def test_the_profile_takes_a_picture_and_the_owner_renames_the_team(browser, stack, desk):
    tab = Tab(browser, stack)
    try:
        page = _signed_in(tab, stack)
        nav(page, "Profile")
        main = page.locator("main")
        assert serious_violations(page, "main") == []
        card = page.get_by_role("form", name="Your picture")
        card.get_by_label("Picture file").set_input_files(
            {"name": "me.png", "mimeType": "image/png", "buffer": _png()}
        )
        card.get_by_role("button", name="Upload picture").click()
        expect(page.get_by_text("Picture saved")).to_be_visible()
        picture = card.locator("img.avatar")
        expect(picture).to_be_visible()
        # Visible is not loaded: wait for the picture's bytes, then check its size.
        loaded = "(img) => img.complete && img.naturalWidth > 0"
        page.wait_for_function(loaded, arg=picture.element_handle())
        assert page.evaluate("(img) => img.naturalWidth", picture.element_handle()) == 8

        # The password changes (and back, for the other files).
        form = page.get_by_role("form", name="Password")
        for old, new in ((PASSWORD, "another horse battery"), ("another horse battery", PASSWORD)):
            form.get_by_label("Current password").fill(old)
            form.get_by_label("New password").fill(new)
            form.get_by_role("button", name="Change password").click()
            expect(form.get_by_label("Current password")).to_have_value("")
        expect(form.get_by_role("alert")).to_be_hidden()

        # The picture shows beside the member's name in the inbox.
        page.goto(f"{stack.url}/#/inbox/{desk['ids'][0]}")
        main.get_by_role("button", name="Take it").click()
        expect(main.locator(".status-row img.avatar")).to_be_visible()
        # Removed, the initial shows again.
        nav(page, "Profile")
        card.get_by_role("button", name="Remove picture").click()
        expect(card.locator("span.avatar")).to_have_text("O")

        # The owner renames the team; the top bar follows.
        nav(page, "Team")
        rename = page.get_by_role("form", name="Rename the team")
        rename.get_by_label("Team name").fill("Parcel Shop support")
        rename.get_by_role("button", name="Rename team").click()
        expect(page.locator(".topbar")).to_contain_text("Parcel Shop support")
        # Back to its first name, which the other files choose it by.
        rename = page.get_by_role("form", name="Rename the team")
        rename.get_by_label("Team name").fill("Olivia Owner's team")
        rename.get_by_role("button", name="Rename team").click()
        expect(page.locator(".topbar")).to_contain_text("Olivia Owner's team")
    finally:
        tab.close()
