"""An agent's Sources in a real browser (issue 34 item 1): from the Knowledge page, an owner
adds a sitemap of a site served on 127.0.0.1 in plain words, follows its first sync live
(the progress bar, then the counts), reads each page's status in words with a failed page's
error, syncs again, changes the schedule and deletes the source (its documents go too).
On the agent's Appearance, the owner turns on "Show an answer's sources under it", read back
through the API. A member gets the same forms. No serious or critical axe-core finding at
1280 and 390 px; nothing wider than a 390 px screen; no e-mail address shown."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest
from aiohttp import web
from playwright.sync_api import Page, expect

from tests.support.axe import findings_at_both_widths
from tests.support.dashboard_stack import (
    PASSWORD,
    Tab,
    ensure_owner,
    in_owners_team,
    nav,
    owner_key,
    public_post,
    sign_in,
)
from tests.support.site import Site, serve

ARTEFACTS = Path(__file__).resolve().parents[1] / "browser" / "artefacts"
MEMBER = "sources-member@example.com"
SLOW_SECONDS = 2.0  # the slow page keeps each sync running long enough to be seen


class SlowSite(Site):
    """The test site, with one page that answers after a while."""

    async def handle(self, request: web.Request) -> web.StreamResponse:
        if request.path == "/delivery":
            await asyncio.sleep(SLOW_SECONDS)
        return await super().handle(request)


@pytest.fixture(scope="module")
def shop(stack):
    """An agent; a member of the team; a shop's site: a sitemap of three pages, one failing."""
    ensure_owner(stack)
    key = owner_key(stack)
    agent = stack.api("POST", "/agents", key, {"name": "Sources shop"})["data"]
    invitation = stack.api("POST", "/team/invite", key, {"email": MEMBER, "role": "member"})
    token = parse_qs(urlsplit(invitation["link"]).query)["token"][0]
    public_post(
        stack,
        "/team/invitations/accept",
        {"token": token, "password": PASSWORD, "name": "Mo Member"},
    )
    site = SlowSite()
    site.page("/hours", "Hours", "<p>We open at nine on Saturdays.</p>")
    site.page("/delivery", "Delivery", "<p>Parcels ship within a day.</p>")
    site.raw["/broken"] = (500, "text/html", b"<p>Oops</p>")
    site.sitemaps["/sitemap.xml"] = ["/hours", "/delivery", "/broken"]
    server = stack.run(serve(site))
    yield {"key": key, "id": agent["id"], "site": site}
    stack.run(server.close())


def _picture(page: Page, shots: Path, name: str, width: int = 1280) -> None:
    keep = os.environ.get("AGENTSVC_WRITE_ARTEFACTS") == "1"
    page.set_viewport_size({"width": width, "height": 860})
    page.evaluate("window.scrollTo(0, 0); document.getElementById('toasts').replaceChildren()")
    page.screenshot(path=str((ARTEFACTS if keep else shots) / name), full_page=True)
    page.set_viewport_size({"width": 1280, "height": 860})


def test_an_owner_adds_follows_changes_and_deletes_a_source(tab, stack, shop, shots):
    page = tab.page
    site = shop["site"]
    sign_in(page, stack)
    in_owners_team(page)
    page.get_by_label("Agent", exact=True).select_option(shop["id"])
    nav(page, "Knowledge")
    page.get_by_role("link", name="Sources", exact=True).click()
    expect(page.get_by_role("heading", name="Sources of Sources shop")).to_be_visible()
    expect(page.get_by_text("No sources yet")).to_be_visible()

    # Added in plain words; the source's page follows the first sync live, then counts.
    form = page.get_by_role("form", name="Add a source")
    expect(form.get_by_label("What to follow").locator("option")).to_have_text(
        ["A sitemap", "A whole site, followed through its links", "One page"]
    )
    form.get_by_label("Address").fill(site.url("/sitemap.xml"))
    form.get_by_label("Pages to include (optional)").fill("[a-")
    form.get_by_role("button", name="Add source").click()
    expect(form.get_by_role("alert")).to_contain_text("the pattern [a- does not compile")
    form.get_by_label("Pages to include (optional)").fill("")
    form.get_by_label("How often to check").select_option(label="Every day")
    form.get_by_role("button", name="Add source").click()
    expect(page.get_by_role("heading", name=site.url("/sitemap.xml"))).to_be_visible()
    sync = page.get_by_role("region", name="Sync")
    expect(sync.get_by_label("Pages done")).to_be_visible()  # the bar, while it runs
    expect(sync.get_by_role("status")).to_have_text("Up to date", timeout=20_000)
    expect(sync.get_by_label("Pages done")).to_be_hidden()
    figures = sync.locator("dl.figures")
    expect(figures).to_contain_text("Pages found3")
    expect(figures).to_contain_text("Pages fetched2")
    expect(figures).to_contain_text("Pages failed1")

    # Each page's status in words; the failed one says why, for people.
    rows = page.get_by_role("table", name="Pages of the source").locator("tbody tr")
    expect(rows).to_have_count(3)
    expect(rows.filter(has_text="/broken")).to_contain_text("Failed")
    expect(rows.filter(has_text="/broken")).to_contain_text("the site answered 500")
    expect(rows.filter(has_text="/hours")).to_contain_text("Indexed")
    docs = stack.api("GET", f"/agents/{shop['id']}/documents", shop["key"])["data"]
    assert len(docs) == 2
    assert findings_at_both_widths(page) == []
    assert "@" not in page.locator("main").inner_text()
    _picture(page, shots, "25-source-390.png", 390)

    # Sync now: live again, to the same counts (unchanged pages answer 304).
    hits = site.hits["/hours"]
    page.get_by_role("button", name="Sync now").click()
    expect(sync.get_by_role("status")).not_to_have_text("Up to date")
    expect(sync.get_by_role("status")).to_have_text("Up to date", timeout=20_000)
    assert site.hits["/hours"] == hits + 1 and site.conditional["/hours"] >= 1
    expect(figures).to_contain_text("Pages changed0")

    # The schedule (and the patterns) changed; the next sync follows them.
    edit = page.get_by_role("form", name="Change the source")
    expect(edit.get_by_label("How often to check")).to_have_value("daily")
    edit.get_by_label("How often to check").select_option(label="Every week")
    edit.get_by_label("Pages to leave out (optional)").fill("/broken")
    edit.get_by_role("button", name="Save changes").click()
    expect(page.locator(".toast").filter(has_text="the next sync follows them")).to_be_visible()
    source_id = page.url.rsplit("/", 1)[-1]
    saved = stack.api("GET", f"/sources/{source_id}", shop["key"])["data"]
    assert saved["schedule"] == "weekly" and saved["exclude"] == ["/broken"]

    # The list: address, what in words, schedule in words, status, counts, syncs.
    page.get_by_role("link", name="All sources").click()
    listed = page.get_by_role("table", name="Sources").locator("tbody tr")
    expect(listed).to_have_count(1)
    expect(listed.first).to_contain_text("A sitemap")
    expect(listed.first).to_contain_text("Every week")
    expect(listed.first).to_contain_text("Up to date")
    expect(listed.first).to_contain_text("3 found, 2 fetched, 0 changed, 1 failed, 0 removed")
    assert findings_at_both_widths(page) == []
    _picture(page, shots, "25-sources-1280.png")

    # Deleted, with its documents.
    listed.first.get_by_role("link").click()
    page.get_by_role("button", name="Delete source").click()
    dialog = page.get_by_role("dialog")
    expect(dialog).to_contain_text("the documents its pages made")
    dialog.get_by_role("button", name="Delete source").click()
    expect(page.get_by_text("No sources yet")).to_be_visible()
    assert stack.api("GET", f"/agents/{shop['id']}/documents", shop["key"])["data"] == []


def test_an_owner_shows_an_answers_sources_in_the_widget(tab, stack, shop):
    page = tab.page
    sign_in(page, stack)
    in_owners_team(page)
    page.goto(f"{stack.url}/#/agents/{shop['id']}")
    form = page.get_by_role("form", name="Widget appearance")
    box = form.get_by_label("Show an answer's sources under it")
    expect(box).not_to_be_checked()
    box.check()
    form.get_by_role("button", name="Save appearance").click()
    expect(page.get_by_text("Appearance saved")).to_be_visible()
    agent = stack.api("GET", f"/agents/{shop['id']}", shop["key"])["data"]
    assert agent["showSources"] is True
    page.reload()
    form = page.get_by_role("form", name="Widget appearance")
    expect(form.get_by_label("Show an answer's sources under it")).to_be_checked()


def test_a_member_may_do_the_same(browser, stack, shop):
    """The API asks no owner for sources: a member gets the same forms."""
    tab = Tab(browser, stack)
    try:
        page = tab.page
        sign_in(page, stack, MEMBER)
        page.goto(f"{stack.url}/#/knowledge/sources")
        expect(page.get_by_text("Any member of the team can add, sync")).to_be_visible()
        expect(page.get_by_role("button", name="Add source")).to_be_visible()
        assert "@" not in page.locator("main").inner_text()
    finally:
        tab.close()
