"""Conversations search and export, the Review page (a thumbs-down turned into a curated
answer in one form; curated answers edited and deleted) and the Analytics charts of the
agent's days, driven in Chromium against the real server."""

from __future__ import annotations

import csv
import io
import json
import urllib.request
from datetime import UTC, datetime, timedelta
from pathlib import Path

from playwright.sync_api import expect

from tests.support.dashboard_stack import ensure_owner, nav, owner_key, sign_in

PROMPT = "Refunds are paid within five days. Parcels ship worldwide. We open at nine."


def chat(stack, key: str, agent_id: str, text: str, **extra) -> dict:
    """One chat turn over the API; the message_start event (conversation and answer ids)."""
    body = {"agentId": agent_id, "messages": [{"role": "user", "content": text}], **extra}
    request = urllib.request.Request(
        stack.url + "/api/v1/chat",
        data=json.dumps(body).encode(),
        headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json"},
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=10) as resp:  # noqa: S310 (loopback)
        raw = resp.read().decode()
    start = raw.split("event: message_start\ndata: ", 1)[1].split("\n", 1)[0]
    return json.loads(start)


def answer_of(stack, key: str, agent_id: str, text: str) -> str:
    """The text of the agent's answer to a new conversation's question."""
    start = chat(stack, key, agent_id, text)
    conv = stack.api("GET", f"/conversations/{start['conversationId']}", key)["data"]
    return conv["messages"][-1]["content"]


def test_search_export_review_and_analytics(tab, stack):
    ensure_owner(stack)
    key = owner_key(stack)
    agent = stack.api("POST", "/agents", key, {"name": "Review desk", "systemPrompt": PROMPT})[
        "data"
    ]
    refund = chat(stack, key, agent["id"], "How are refunds paid?")
    chat(stack, key, agent["id"], "Do parcels ship to Peru?", user={"id": "visitor-7"})
    hats = chat(stack, key, agent["id"], "Do you sell hats?")
    chat(stack, key, agent["id"], "do you sell HATS")
    stack.api(
        "POST",
        f"/conversations/{hats['conversationId']}/feedback",
        key,
        {"messageId": hats["messageId"], "rating": "down"},
    )
    page = tab.page
    sign_in(page, stack)
    switcher = page.get_by_label("Team", exact=True)
    if switcher.count():  # earlier tests joined another team: act in the owner's
        switcher.select_option(label="Olivia Owner's team (owner)")
        expect(page.locator(".role-badge")).to_have_text("owner")
    page.locator("#agent-picker").select_option(agent["id"])

    # ── Conversations: search and filters, then the export of what is listed ──────────
    nav(page, "Conversations")
    main = page.locator("main")
    search = page.get_by_role("search", name="Search conversations")
    expect(main.get_by_role("row")).to_have_count(5)  # the header and four conversations
    search.get_by_label("Search messages").fill("refunds")
    search.get_by_role("button", name="Search").click()
    expect(main.get_by_role("link", name="How are refunds paid?")).to_be_visible()
    expect(main.get_by_role("row")).to_have_count(2)
    expect(page.locator(".pager")).to_contain_text("1–1 of 1")

    with page.expect_download() as download:
        page.get_by_role("button", name="Export CSV").click()
    assert download.value.suggested_filename == "conversations-review-desk.csv"
    rows = list(csv.DictReader(io.StringIO(Path(download.value.path()).read_text())))
    assert {r["conversationId"] for r in rows} == {refund["conversationId"]}
    assert [r["role"] for r in rows] == ["user", "assistant"]
    with page.expect_download() as download:
        page.get_by_role("button", name="Export JSON Lines").click()
    assert download.value.suggested_filename == "conversations-review-desk.jsonl"
    lines = Path(download.value.path()).read_text().splitlines()
    assert [json.loads(line)["conversationId"] for line in lines] == [refund["conversationId"]] * 2

    search.get_by_label("Search messages").fill("")
    search.get_by_label("Visitor id").fill("visitor-7")
    search.get_by_role("button", name="Search").click()
    expect(main.get_by_role("link", name="Do parcels ship to Peru?")).to_be_visible()
    expect(main.get_by_role("row")).to_have_count(2)
    search = page.get_by_role("search", name="Search conversations")
    search.get_by_role("button", name="Clear").click()
    search = page.get_by_role("search", name="Search conversations")
    search.get_by_label("Feedback filter").select_option("down")
    expect(main.get_by_role("row").filter(has_text="Do you sell hats?")).to_contain_text("👎 1")
    expect(main.get_by_role("row")).to_have_count(2)
    search = page.get_by_role("search", name="Search conversations")
    search.get_by_label("Feedback filter").select_option("")
    search = page.get_by_role("search", name="Search conversations")
    search.get_by_label("Status filter").select_option("closed")
    expect(main.get_by_text("No conversation matches these filters.")).to_be_visible()
    search = page.get_by_role("search", name="Search conversations")
    search.get_by_label("Status filter").select_option("")
    today = datetime.now(UTC).date()
    search = page.get_by_role("search", name="Search conversations")
    search.get_by_label("From", exact=True).fill((today + timedelta(days=1)).isoformat())
    search.get_by_role("button", name="Search").click()
    expect(main.get_by_text("No conversation matches these filters.")).to_be_visible()
    search = page.get_by_role("search", name="Search conversations")
    search.get_by_label("From", exact=True).fill(today.isoformat())
    search.get_by_label("To", exact=True).fill(today.isoformat())
    search.get_by_role("button", name="Search").click()
    expect(main.get_by_role("row")).to_have_count(5)
    page.get_by_role("search", name="Search conversations").get_by_role(
        "button", name="Clear"
    ).click()

    # ── Review: the thumbs-down answer becomes a curated answer with one form ──────────
    nav(page, "Review")
    item = main.get_by_role("article", name="Thumbs-down answer to Do you sell hats?")
    expect(item).to_contain_text("could not find anything relevant")
    form = item.get_by_role("form", name="Curated answer for: Do you sell hats?")
    expect(form.get_by_label("Question")).to_have_value("Do you sell hats?")
    form.get_by_label("Answer").fill("We sell caps and beanies, not hats.")
    form.get_by_role("button", name="Save as curated answer").click()
    expect(item.get_by_text("Answered by a curated answer")).to_be_visible()
    expect(form).to_be_hidden()
    listed = main.get_by_role("list", name="Curated answers")
    expect(listed).to_contain_text("We sell caps and beanies, not hats.")
    assert answer_of(stack, key, agent["id"], "Hats: do you sell them?") == (
        "We sell caps and beanies, not hats."
    )
    # Edited and deleted in place; a new one added with the page's own form.
    curated = listed.get_by_role("article", name="Curated answer: Do you sell hats?")
    curated.get_by_role("button", name="Edit").click()
    edit = curated.get_by_role("form", name="Edit: Do you sell hats?")
    edit.get_by_label("Answer").fill("Caps only.")
    edit.get_by_role("button", name="Save changes").click()
    expect(curated).to_contain_text("Caps only.")
    assert answer_of(stack, key, agent["id"], "do you sell hats") == "Caps only."
    add = main.get_by_role("form", name="Add a curated answer")
    add.get_by_label("Question").fill("Can I pay by invoice?")
    add.get_by_label("Answer").fill("Yes, for companies.")
    add.get_by_role("button", name="Add curated answer").click()
    expect(listed).to_contain_text("Yes, for companies.")
    curated.get_by_role("button", name="Delete").click()
    page.get_by_role("dialog").get_by_role("button", name="Delete answer").click()
    expect(listed.get_by_role("article", name="Curated answer: Do you sell hats?")).to_have_count(0)
    answers = stack.api("GET", f"/agents/{agent['id']}/answers", key)["data"]
    assert [a["question"] for a in answers] == ["Can I pay by invoice?"]
    # A duplicate question is refused where it was typed.
    add.get_by_label("Question").fill("can I pay by INVOICE")
    add.get_by_label("Answer").fill("Twice?")
    add.get_by_role("button", name="Add curated answer").click()
    expect(add.get_by_role("alert")).to_contain_text("already has an answer")

    # ── Analytics: charts of the agent's days, a table of their figures ───────────────
    nav(page, "Analytics")
    volume = main.get_by_role("img", name="Conversations, visitor messages and answers per day")
    expect(volume).to_be_visible()
    expect(volume.locator("polyline")).to_have_count(3)
    quality = main.get_by_role("img", name="Answer quality per day")
    expect(quality.locator("polyline")).to_have_count(3)
    expect(main.get_by_role("img", name="Trigger funnel")).to_be_visible()
    totals = main.get_by_role("region", name="Totals")
    expect(totals).to_contain_text("Conversations")
    main.get_by_text("Figures per day: the figures as a table").click()
    days = main.get_by_role("table", name="Figures per day")
    expect(days.get_by_role("row")).to_have_count(31)  # the header and 30 days
    shown_today = page.evaluate(  # the day as the browser's language writes it (Nov 26, 2026)
        """(iso) => new Date(iso + "T00:00:00Z").toLocaleDateString(undefined,
            {month: "short", day: "numeric", year: "numeric", timeZone: "UTC"})""",
        today.isoformat(),
    )
    expect(days.get_by_role("row").last).to_contain_text(shown_today)
    questions = main.get_by_role("table", name="Most frequent unanswered questions")
    row = questions.get_by_role("row").filter(has_text="sell hats")
    expect(row).to_contain_text("2")
    # A range of days; then "Write an answer" opens the Review page with the question.
    range_form = main.get_by_role("form", name="Range of days")
    range_form.get_by_label("From", exact=True).fill((today - timedelta(days=6)).isoformat())
    range_form.get_by_role("button", name="Show").click()
    main.get_by_text("Figures per day: the figures as a table").click()
    expect(main.get_by_role("table", name="Figures per day").get_by_role("row")).to_have_count(8)
    questions = main.get_by_role("table", name="Most frequent unanswered questions")
    questions.get_by_role("row").filter(has_text="sell hats").get_by_role(
        "button", name="Write an answer"
    ).click()
    expect(main.locator('.page[data-page="review"]')).to_be_visible()
    add = main.get_by_role("form", name="Add a curated answer")
    expect(add.get_by_label("Question")).to_have_value("do you sell HATS")  # the latest
    expect(add.get_by_label("Answer")).to_be_focused()
    stack.api("DELETE", f"/agents/{agent['id']}", key)
