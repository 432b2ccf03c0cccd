"""An agent's Versions in a real browser (issue 33, item 1): an owner changes an agent's
system prompt and temperature on its page, its handoff through the API, and opens Versions
from the agent's page: the timeline (newest first, each with its time, who made it (a name or
an API key's name, never an e-mail address) and its note, the live one badged "Live"); a
version's changes against the one before it (the prompt's removed and added lines marked by
more than colour, the other settings as "before → after" in words); version 1 restored with
a confirmation in plain words, after which version 5 is live and the agent's page shows the
first prompt again. No serious or critical axe-core finding at 1280 and 390 px; nothing
wider than a 390 px screen. A member sees the versions and restores one too. In draft mode
("Save changes as a draft first") a change waits in the draft, shown at the top of the
timeline with its changes against the live version; the owner talks to it, publishes it
with a note, then discards a second one, and goes back to changes going live at once."""

from __future__ import annotations

import os
import re
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest
from playwright.sync_api import Page, expect

from tests.support.axe import findings_at_both_widths, overflow, serious_violations
from tests.support.dashboard_stack import (
    OWNER_EMAIL,
    PASSWORD,
    Tab,
    ensure_owner,
    in_owners_team,
    owner_key,
    public_post,
    sign_in,
)

ARTEFACTS = Path(__file__).resolve().parents[1] / "browser" / "artefacts"
MEMBER = "versions-member@example.com"
FIRST = "We open at nine.\nParcels ship within a day.\nReturns are free for 30 days."
SECOND = "We open at ten.\nParcels ship within a day.\nReturns are free for 30 days."
THIRD = SECOND + "\nGift wrapping costs 3 euros."


@pytest.fixture(scope="module")
def shop(stack) -> dict:
    """An agent of the owner's team (version 1), and a member of the team."""
    ensure_owner(stack)
    key = owner_key(stack)
    body = {"name": "Versions shop", "systemPrompt": FIRST}
    agent = stack.api("POST", "/agents", key, body)["data"]
    invitation = stack.api("POST", "/team/invite", key, {"email": MEMBER, "role": "member"})
    token = parse_qs(urlsplit(invitation["link"]).query)["token"][0]
    joined = {"token": token, "password": PASSWORD, "name": "Max Member"}
    public_post(stack, "/team/invitations/accept", joined)
    return {"key": key, "agent": agent}


def _save_agent(page: Page, prompt: str, temperature: str | None = None) -> None:
    form = page.get_by_role("form", name="Agent settings")
    form.get_by_label("System prompt").fill(prompt)
    if temperature is not None:
        form.get_by_label("Temperature (0-100)").fill(temperature)
    form.get_by_role("button", name="Save changes").click()


def _entry(page: Page, number: int):
    """The timeline's button of one version."""
    timeline = page.get_by_role("region", name="Timeline")
    return timeline.get_by_role("button", name=re.compile(rf"^Version {number}\b"))


def _picture(page: Page, shots: Path, name: str) -> None:
    keep = os.environ.get("AGENTSVC_WRITE_ARTEFACTS") == "1"
    page.evaluate("window.scrollTo(0, 0); document.getElementById('toasts').replaceChildren()")
    page.screenshot(path=str((ARTEFACTS if keep else shots) / name))


def test_an_owner_reads_and_restores_versions(tab, stack, shop, shots):
    page = tab.page
    agent = shop["agent"]
    sign_in(page, stack)
    in_owners_team(page)
    page.goto(f"{stack.url}/#/agents/{agent['id']}")

    # Two changes on the agent's page; each save says the version it made.
    _save_agent(page, SECOND)
    expect(page.locator(".toast").filter(has_text="(version 2)")).to_be_visible()
    _save_agent(page, THIRD, temperature="20")
    expect(page.locator(".toast").filter(has_text="(version 3)")).to_be_visible()
    stack.api("PATCH", f"/agents/{agent['id']}", shop["key"], {"handoff": {"enabled": True}})
    page.reload()

    # Versions, from the agent's page: newest first, the live one badged.
    page.get_by_role("link", name="Versions", exact=True).click()
    expect(page.get_by_role("heading", name="Versions of Versions shop")).to_be_visible()
    timeline = page.get_by_role("region", name="Timeline")
    expect(timeline.get_by_role("button")).to_have_count(4)
    expect(timeline.locator("li strong")).to_have_text(
        ["Version 4 Live", "Version 3 ", "Version 2 ", "Version 1 "]
    )
    expect(_entry(page, 4)).to_contain_text("Olivia Owner with the API key “checks”")
    expect(_entry(page, 3)).to_contain_text("Olivia Owner")
    expect(_entry(page, 1)).to_contain_text("Created")
    expect(_entry(page, 1).locator("time")).to_have_attribute("datetime", agent["createdAt"])
    assert "@" not in page.locator("main").inner_text()

    # The live version is shown first: its handoff change in words.
    detail = page.get_by_role("region", name="The chosen version")
    expect(detail.get_by_role("heading", name="Version 4")).to_be_visible()
    expect(detail.get_by_text("What changed since version 3")).to_be_visible()
    expect(detail.locator("ul > li")).to_have_text(["Handoff to a person: off → on"])
    expect(detail.get_by_text("This is the live version")).to_be_visible()
    expect(detail.get_by_role("button", name="Restore this version")).to_have_count(0)

    # Version 3: the temperature in words, the added line marked "+" and said "Added".
    _entry(page, 3).click()
    expect(_entry(page, 3)).to_have_attribute("aria-current", "true")
    expect(page).to_have_url(re.compile(r"/versions/3$"))
    expect(detail.get_by_role("heading", name="Version 3")).to_be_focused()
    expect(detail.locator("ul > li")).to_have_text(["Temperature: 70 → 20"])
    added = detail.locator(".diff-line.added")
    expect(added).to_have_count(1)
    expect(added).to_have_text("+Added: Gift wrapping costs 3 euros.")
    expect(added.locator("ins")).to_be_visible()

    # Version 2: the removed line struck through and marked "−", the added one after it.
    _entry(page, 2).click()
    expect(detail.get_by_role("heading", name="Version 2")).to_be_visible()
    diff = detail.get_by_role("group", name="System prompt, line by line")
    expect(diff.locator(".diff-line.removed del")).to_have_text("Removed: We open at nine.")
    expect(diff.locator(".diff-line.added ins")).to_have_text("Added: We open at ten.")
    expect(diff.locator(".diff-line.removed > [aria-hidden=true]")).to_have_text("−")
    struck = diff.locator(".diff-line.removed del")
    assert struck.evaluate("el => getComputedStyle(el).textDecorationLine") == "line-through"
    expect(diff.locator(".diff-line:not(.removed):not(.added)")).to_have_text(
        [" Parcels ship within a day.", " Returns are free for 30 days."]
    )
    expect(detail.locator("ul")).to_have_count(0)
    assert findings_at_both_widths(page) == []
    _picture(page, shots, "dashboard-versions.png")
    page.set_viewport_size({"width": 390, "height": 844})
    page.screenshot(path=str(shots / "versions-390.png"), full_page=True)
    page.set_viewport_size({"width": 1280, "height": 860})

    # Version 1: nothing before it, all its settings; restored in plain words.
    _entry(page, 1).click()
    expect(detail.get_by_text("The first version kept")).to_be_visible()
    expect(detail.locator("details pre")).to_have_text(FIRST)
    detail.get_by_role("button", name="Restore this version").click()
    dialog = page.get_by_role("dialog")
    expect(dialog).to_contain_text(
        "The agent will answer as in version 1 again."
        " This is saved as a new version; nothing is deleted."
    )
    assert findings_at_both_widths(page) == []
    page.screenshot(path=str(shots / "versions-restore-dialog.png"))
    dialog.get_by_role("button", name="Restore version 1").click()
    expect(page.get_by_role("status").filter(has_text="Version 5 is now live")).to_have_text(
        "Version 5 is now live: the agent answers as in version 1 again."
    )
    expect(_entry(page, 5)).to_contain_text("Live")
    expect(_entry(page, 5)).to_contain_text("Restored version 1")
    expect(_entry(page, 5)).to_have_attribute("aria-current", "true")
    expect(_entry(page, 4).locator(".tag")).to_have_count(0)
    expect(detail.get_by_role("heading", name="Version 5")).to_be_visible()
    expect(detail.locator("ul > li")).to_have_text(
        ["Temperature: 20 → 70", "Handoff to a person: on → off"]
    )
    expect(detail.locator(".diff-line.removed")).to_have_count(2)
    assert findings_at_both_widths(page) == []
    _picture(page, shots, "dashboard-versions-restored.png")

    # The agent's page shows the first prompt again; the API agrees.
    page.get_by_role("link", name="Back to the agent").click()
    form = page.get_by_role("form", name="Agent settings")
    expect(form.get_by_label("System prompt")).to_have_value(FIRST)
    expect(form.get_by_label("Temperature (0-100)")).to_have_value("70")
    got = stack.api("GET", f"/agents/{agent['id']}", shop["key"])["data"]
    assert (got["version"], got["systemPrompt"], got["handoff"]["enabled"]) == (5, FIRST, False)

    # A version in the address opens on it (a reload keeps the choice).
    page.goto(f"{stack.url}/#/agents/{agent['id']}/versions/2")
    expect(_entry(page, 2)).to_have_attribute("aria-current", "true")
    expect(detail.get_by_role("heading", name="Version 2")).to_be_visible()


def test_a_member_sees_and_restores_versions(browser, stack, shop):
    agent = shop["agent"]
    tab = Tab(browser, stack)
    try:
        page = tab.page
        page.set_viewport_size({"width": 390, "height": 844})
        sign_in(page, stack, MEMBER)
        page.goto(f"{stack.url}/#/agents/{agent['id']}/versions")
        latest = stack.api("GET", f"/agents/{agent['id']}", shop["key"])["data"]["version"]
        expect(_entry(page, latest)).to_have_attribute("aria-current", "true")
        _entry(page, 2).click()
        detail = page.get_by_role("region", name="The chosen version")
        expect(detail.get_by_role("heading", name="Version 2")).to_be_in_viewport()
        detail.get_by_role("button", name="Restore this version").click()
        page.get_by_role("dialog").get_by_role("button", name="Restore version 2").click()
        expect(page.get_by_role("status").filter(has_text="is now live")).to_have_text(
            f"Version {latest + 1} is now live: the agent answers as in version 2 again."
        )
        expect(_entry(page, latest + 1)).to_contain_text("Max Member")
        assert OWNER_EMAIL not in page.locator("main").inner_text()
        assert MEMBER not in page.locator("main").inner_text()
        assert overflow(page) <= 0
        assert serious_violations(page, "main") == []
    finally:
        tab.close()


def test_an_owner_drafts_tries_publishes_and_discards(tab, stack, shop, shots):
    page = tab.page
    live = "We open at nine.\nParcels ship within a day."
    drafted = "We open at eight.\nParcels ship within a day."
    agent = stack.api("POST", "/agents", shop["key"], {"name": "Draft shop", "systemPrompt": live})
    agent = agent["data"]
    sign_in(page, stack)
    in_owners_team(page)
    page.goto(f"{stack.url}/#/agents/{agent['id']}")

    # Draft mode on, with a change: it waits in the draft; visitors keep version 1.
    form = page.get_by_role("form", name="Agent settings")
    form.get_by_label("Save changes as a draft first").check()
    _save_agent(page, drafted)
    expect(page.locator(".toast").filter(has_text="Saved Draft shop in the draft")).to_be_visible()
    notice = page.locator("main .notice")
    expect(notice).to_contain_text(
        "A draft waits: visitors still talk to version 1; the settings below are the draft's."
    )
    expect(form.get_by_label("System prompt")).to_have_value(drafted)
    expect(form.get_by_label("Save changes as a draft first")).to_be_checked()
    got = stack.api("GET", f"/agents/{agent['id']}", shop["key"])["data"]
    assert (got["systemPrompt"], got["draft"]["snapshot"]["systemPrompt"]) == (live, drafted)
    assert findings_at_both_widths(page) == []
    page.evaluate("window.scrollTo(0, 0)")
    page.screenshot(path=str(shots / "agent-with-a-draft.png"))

    # The draft on Versions: at the top, chosen, its changes against the live version.
    notice.get_by_role("link", name="Try it, publish it or discard it under Versions").click()
    timeline = page.get_by_role("region", name="Timeline")
    expect(timeline.locator("li strong")).to_have_text(["Draft ", "Version 1 Live"])
    draft = timeline.get_by_role("button", name=re.compile("^Draft"))
    expect(draft).to_have_attribute("aria-current", "true")
    expect(draft).to_contain_text("from version 1")
    detail = page.get_by_role("region", name="The chosen version")
    expect(detail.get_by_role("heading", name="Draft", exact=True)).to_be_visible()
    expect(detail.get_by_text("What changed since version 1")).to_be_visible()
    diff = detail.get_by_role("group", name="System prompt, line by line")
    expect(diff.locator(".diff-line.removed del")).to_have_text("Removed: We open at nine.")
    expect(diff.locator(".diff-line.added ins")).to_have_text("Added: We open at eight.")

    # A chat with the draft answers from it.
    chat = detail.get_by_role("region", name="Try the draft")
    chat.get_by_label("Message").fill("When do you open?")
    chat.get_by_role("button", name="Send").click()
    expect(chat.locator(".msg.assistant .text")).to_have_text("We open at eight.")
    assert findings_at_both_widths(page) == []
    _picture(page, shots, "dashboard-versions-draft.png")
    page.set_viewport_size({"width": 390, "height": 844})
    page.screenshot(path=str(shots / "versions-draft-390.png"), full_page=True)
    page.set_viewport_size({"width": 1280, "height": 860})

    # Published with a note: version 2 is live, the draft gone from the timeline.
    publish = detail.get_by_role("form", name="Publish the draft")
    publish.get_by_label("Note (optional)").fill("Opening at eight")
    publish.get_by_role("button", name="Publish").click()
    expect(page.get_by_role("status").filter(has_text="is now live")).to_have_text(
        "Version 2 is now live: visitors get the draft's changes."
    )
    expect(timeline.locator("li strong")).to_have_text(["Version 2 Live", "Version 1 "])
    expect(_entry(page, 2)).to_contain_text("Opening at eight")
    got = stack.api("GET", f"/agents/{agent['id']}", shop["key"])["data"]
    assert (got["version"], got["systemPrompt"], got["draft"]) == (2, drafted, None)

    # A second draft: draft mode cannot be left while it waits; it is discarded.
    page.get_by_role("link", name="Back to the agent").click()
    _save_agent(page, drafted + "\nClosed on Sundays.")
    expect(page.locator("main .notice")).to_contain_text("visitors still talk to version 2")
    form.get_by_label("Save changes as a draft first").uncheck()
    form.get_by_role("button", name="Save changes").click()
    expect(form.get_by_role("alert")).to_contain_text("publish it or discard it before")
    page.get_by_role("link", name="Versions", exact=True).click()
    page.get_by_role("button", name="Discard the draft").click()
    page.get_by_role("dialog").get_by_role("button", name="Discard the draft").click()
    expect(page.get_by_role("status").filter(has_text="discarded")).to_have_text(
        "The draft is discarded."
    )
    expect(timeline.locator("li strong")).to_have_text(["Version 2 Live", "Version 1 "])

    # Back to changes going live at once.
    page.get_by_role("link", name="Back to the agent").click()
    expect(form.get_by_label("System prompt")).to_have_value(drafted)
    form.get_by_label("Save changes as a draft first").uncheck()
    _save_agent(page, live)
    expect(page.locator(".toast").filter(has_text="Saved Draft shop (version 3)")).to_be_visible()
    got = stack.api("GET", f"/agents/{agent['id']}", shop["key"])["data"]
    assert (got["versioning"], got["version"], got["systemPrompt"]) == ("live", 3, live)


def test_a_long_history_pages_and_handoff_hours_and_tools_read_in_words(tab, stack, shop):
    page = tab.page
    key = shop["key"]
    agent = stack.api("POST", "/agents", key, {"name": "Busy shop"})["data"]
    path = f"/agents/{agent['id']}"
    for n in range(51):
        stack.api("PATCH", path, key, {"temperature": n})
    monday = [{"day": "mon", "start": "09:00", "end": "17:00"}]
    hours = {"timezone": "America/New_York", "intervals": monday}
    stack.api("PATCH", path, key, {"handoff": {"businessHours": hours}})
    tool = {
        "agentId": agent["id"],
        "name": "order_status",
        "description": "Where an order is",
        "executionType": "mock",
        "mockResponse": "Shipped",
        "inputSchema": {"type": "object", "properties": {}},
    }
    stack.api("POST", "/tools", key, tool)
    sign_in(page, stack)
    in_owners_team(page)
    page.goto(f"{stack.url}/#/agents/{agent['id']}/versions")

    # The newest 50 first, then the older ones on asking; each change in words.
    timeline = page.get_by_role("region", name="Timeline")
    expect(timeline.locator("li strong")).to_have_count(50)
    expect(_entry(page, 54)).to_have_attribute("aria-current", "true")
    detail = page.get_by_role("region", name="The chosen version")
    expect(detail.locator("ul > li")).to_have_text(["Tools: added order_status"])
    detail.get_by_text("All settings").click()
    expect(detail.locator("dd").last).to_have_text("order_status")
    _entry(page, 53).click()
    expect(detail.locator("ul > li")).to_have_text(
        ["Business hours: always → mon 09:00-17:00 (America/New York)"]
    )
    timeline.get_by_role("button", name="Show older versions").click()
    expect(timeline.locator("li strong")).to_have_count(54)
    expect(timeline.get_by_role("button", name="Show older versions")).to_have_count(0)
    _entry(page, 1).click()
    expect(detail.get_by_role("heading", name="Version 1")).to_be_visible()
    assert findings_at_both_widths(page) == []
