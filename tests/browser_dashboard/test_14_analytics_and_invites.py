"""Issue 31 items 3 and 7 in Chromium: analytics a person can read (cards with the change
against the days before, chart text of at least 12 px with no label cut off, presets,
tooltips, a CSV per chart), and an invitation shared by its link when no mail leaves the
server: the invited person joins the team and has no empty team of their own."""

from __future__ import annotations

import csv
import io
import re
from datetime import UTC, datetime, timedelta

from playwright.sync_api import Page, expect

from tests.support.dashboard_stack import (
    Tab,
    accept_invitation,
    chat_as_key,
    ensure_owner,
    in_owners_team,
    nav,
    owner_key,
    sign_in,
)

# Every chart's texts: the size they are drawn at on screen, and whether each lies wholly
# inside its drawing (a label cut at the edge would not).
CHART_TEXTS = """() => [...document.querySelectorAll("main svg.chart")].map((svg) => {
    const frame = svg.getBoundingClientRect();
    const scale = svg.getScreenCTM().a;
    return {
        name: svg.getAttribute("aria-label"),
        texts: [...svg.querySelectorAll("text")].map((t) => {
            const r = t.getBoundingClientRect();
            return {
                text: t.textContent,
                px: parseFloat(getComputedStyle(t).fontSize) * scale,
                inside: r.width > 0 && r.left >= frame.left - 0.5 && r.right <= frame.right + 0.5
                    && r.top >= frame.top - 0.5 && r.bottom <= frame.bottom + 0.5,
            };
        }),
    };
})"""

# Every chart is drawn at the width of its frame (bars may be wider, and scroll), never scaled.
DRAWN_TO_FIT = """() => [...document.querySelectorAll("main svg.chart")].every((svg) => {
    const width = Number(svg.getAttribute("width"));
    const room = Math.floor(svg.parentElement.clientWidth);
    const fits = width === room || (svg.classList.contains("bars") && width > room);
    return fits && Math.abs(svg.getScreenCTM().a - 1) < 0.001;
})"""


def _check_chart_texts(page: Page) -> int:
    page.wait_for_function(DRAWN_TO_FIT)
    charts = page.evaluate(CHART_TEXTS)
    assert len(charts) >= 4, charts
    for chart in charts:
        assert chart["texts"], chart["name"]
        for text in chart["texts"]:
            assert text["px"] >= 12, (chart["name"], text)
            assert text["inside"], (chart["name"], text)
            assert "_" not in text["text"], (chart["name"], text)  # words, not codes
    return len(charts)


def _csv_of(page: Page, card) -> list[list[str]]:
    with page.expect_download() as download:
        card.get_by_role("button", name="Download CSV").click()
    with open(download.value.path(), encoding="utf-8", newline="") as fh:
        return list(csv.reader(io.StringIO(fh.read())))


def test_analytics_cards_charts_presets_tooltips_and_csv(browser, stack, shots):
    ensure_owner(stack)
    key = owner_key(stack)
    agent = stack.api("POST", "/agents", key, {"name": "Numbers desk"})["data"]
    for text in ("Where is my order?", "Do you ship to Chile?", "Can I pay later?"):
        chat_as_key(stack, key, agent["id"], text)
    # A trigger whose name a spreadsheet would run: the CSV defuses it.
    stack.api(
        "POST",
        f"/triggers?agentId={agent['id']}",
        key,
        {
            "name": "=SUM(1,2)",
            "triggerType": "time_on_page",
            "conditions": {"timeOnPage": 30},
            "actionType": "open_chat",
            "actionConfig": {"message": "Hi!"},
        },
    )
    today = datetime.now(UTC).date()
    totals = stack.api("GET", f"/agents/{agent['id']}/analytics", key)["data"]["totals"]
    assert totals["conversations"] == 3
    tab = Tab(browser, stack)
    page = tab.page
    try:
        sign_in(page, stack)
        in_owners_team(page)
        page.get_by_label("Agent", exact=True).select_option(agent["id"])
        nav(page, "Analytics")
        main = page.locator("main")

        # Cards: the period's figures, each with its change against the 30 days before.
        cards = main.get_by_role("region", name="Totals").locator("li.stat")
        expect(cards).to_have_count(6)
        conversations = cards.filter(has_text="Conversations")
        expect(conversations.locator(".stat-value")).to_have_text("3")
        expect(conversations.locator(".stat-change")).to_have_text("▲ New (none before)")
        before_to = today - timedelta(days=30)
        before = f"from={(before_to - timedelta(days=29)).isoformat()}&to={before_to.isoformat()}"
        assert any(before in url for _, url in tab.requests), tab.requests
        for i in range(6):
            expect(cards.nth(i).locator(".stat-value")).to_have_text(re.compile(r"^\d+$"))
            expect(cards.nth(i).locator(".stat-change")).not_to_be_empty()
        # The day after today: nothing yet, against today's figures.
        tomorrow = (today + timedelta(days=1)).isoformat()
        range_form = main.get_by_role("form", name="Range of days")
        range_form.get_by_label("From", exact=True).fill(tomorrow)
        range_form.get_by_label("To", exact=True).fill(tomorrow)
        range_form.get_by_role("button", name="Show").click()
        expect(conversations.locator(".stat-value")).to_have_text("0")
        expect(conversations.locator(".stat-change")).to_have_text("▼ −100 % from 3")
        expect(conversations.locator(".stat-change")).to_have_class("stat-change bad")

        # Presets: the last 7, 30 and 90 days.
        presets = range_form.get_by_role("group", name="Presets")
        presets.get_by_role("button", name="Last 7 days").click()
        expect(presets.get_by_role("button", name="Last 7 days")).to_have_attribute(
            "aria-pressed", "true"
        )
        expect(range_form.get_by_label("From", exact=True)).to_have_value(
            (today - timedelta(days=6)).isoformat()
        )
        main.get_by_text("Figures per day: the figures as a table").click()
        days = main.get_by_role("table", name="Figures per day")
        expect(days.get_by_role("row")).to_have_count(8)
        expect(conversations.locator(".stat-value")).to_have_text("3")
        presets.get_by_role("button", name="Last 90 days").click()
        expect(presets.get_by_role("button", name="Last 90 days")).to_have_attribute(
            "aria-pressed", "true"
        )
        expect(presets.get_by_role("button", name="Last 7 days")).to_have_attribute(
            "aria-pressed", "false"
        )
        main.get_by_text("Figures per day: the figures as a table").click()
        expect(main.get_by_role("table", name="Figures per day").get_by_role("row")).to_have_count(
            91
        )

        # Chart text: at least 12 px as drawn, every label inside its drawing; also at 390 px.
        assert _check_chart_texts(page) >= 4
        page.screenshot(path=str(shots / "analytics.png"), full_page=True)

        # Tooltips: under the pointer, and from the keyboard.
        activity = main.locator("section.chart-card").filter(
            has=page.get_by_role("heading", name="Activity")
        )
        tip = activity.locator(".chart-tip")
        expect(tip).to_be_hidden()
        activity.locator("rect.band").last.hover(force=True)
        expect(tip).to_be_visible()
        expect(tip).to_contain_text("Conversations: 3")
        page.mouse.move(0, 0)
        expect(tip).to_be_hidden()
        frame = activity.get_by_role("group")
        frame.focus()
        page.keyboard.press("End")
        expect(tip).to_contain_text("Visitor messages: 3")
        page.keyboard.press("ArrowLeft")
        expect(tip).to_contain_text("Conversations: 0")
        page.keyboard.press("Escape")
        expect(tip).to_be_hidden()
        bars = main.locator("section.chart-card").filter(
            has=page.get_by_role("heading", name="Fired and converted")
        )
        bars.locator("rect.bar.series0:not(.key)").first.hover(force=True)
        expect(bars.locator(".chart-tip")).to_contain_text("Fired: 0")

        # A CSV per chart: the chart's rows, formulas defused.
        rows = _csv_of(page, activity)
        assert rows[0] == ["Day", "Conversations", "Visitor messages", "Answers"]
        assert len(rows) == 1 + 90
        assert rows[-1] == [today.isoformat(), "3", "3", "3"]
        assert rows[1] == [(today - timedelta(days=89)).isoformat(), "0", "0", "0"]
        rows = _csv_of(page, bars)
        assert rows == [["Trigger", "Fired", "Converted"], ["'=SUM(1,2)", "0", "0"]]
        funnel = main.locator("section.chart-card").filter(
            has=page.get_by_role("heading", name="Trigger funnel")
        )
        assert _csv_of(page, funnel)[0] == ["Step", "Count"]

        page.set_viewport_size({"width": 390, "height": 800})
        assert _check_chart_texts(page) >= 4
        page.screenshot(path=str(shots / "analytics-390.png"), full_page=True)
    finally:
        stack.api("DELETE", f"/agents/{agent['id']}", key)
        tab.close()


def test_a_copied_invitation_link_lets_the_invited_person_join(browser, stack):
    ensure_owner(stack)
    key = owner_key(stack)
    owner = Tab(browser, stack)
    page = owner.page
    sign_in(page, stack)
    in_owners_team(page)
    nav(page, "Team")
    expect(page.locator("main")).to_contain_text("Mail is not set up on this server")
    invite = page.get_by_role("form", name="Invite a member")
    invite.get_by_label("E-mail").fill("lena@example.com")
    invite.get_by_role("button", name="Send invitation").click()
    row = (
        page.get_by_role("table", name="Invitations")
        .get_by_role("row")
        .filter(has_text="lena@example.com")
    )
    expect(row).to_contain_text("Pending")
    row.get_by_role("button", name="Copy link for lena@example.com").click()
    expect(page.locator("#toasts")).to_contain_text("Link copied")
    link = page.evaluate("navigator.clipboard.readText()")
    listed = {i["email"]: i for i in stack.api("GET", "/team/invitations", key)}
    assert link == listed["lena@example.com"]["link"]
    assert link.startswith(stack.url + "/accept-invitation?token=")

    # Opened in a browser that knows nobody: Lena joins, in the inviting team alone.
    lena = accept_invitation(browser, stack, link, "Lena")
    lpage = lena.page
    expect(lpage.locator(".team-name")).to_have_text("Olivia Owner's team")
    expect(lpage.get_by_label("Team", exact=True)).to_have_count(0)  # no team of her own
    session = lpage.evaluate("async () => (await (await fetch('/api/v1/auth/session')).json())")
    assert [t["role"] for t in session["data"]["teams"]] == ["member"]

    # The owner's page: Lena is a member, her invitation accepted, its link gone.
    page.reload()
    members = page.get_by_role("table", name="Members")
    expect(members.get_by_role("cell", name="lena@example.com", exact=True)).to_be_visible()
    expect(row).to_contain_text("Accepted")
    expect(row.get_by_role("button", name="Copy link for lena@example.com")).to_have_count(0)
    lena.close()
    owner.close()
