"""Issue 36's Usage page in Chromium: tokens and cost per day as charts, per agent and per
model tables, and the budgets set in words (the team's: at its limit the agents answer with
their offline message; an agent's, warned only at its limit), with axe-core finding nothing
serious at 1280 and 390 px."""

from __future__ import annotations

import os
from pathlib import Path

from playwright.sync_api import Page, expect

from tests.support.axe import findings_at_both_widths
from tests.support.dashboard_stack import (
    chat_as_key,
    ensure_owner,
    in_owners_team,
    nav,
    owner_key,
    sign_in,
)

ARTEFACTS = Path(__file__).resolve().parents[1] / "browser" / "artefacts"
OFFLINE = "Our team is away right now. Leave your e-mail address and we will answer there."


def _picture(page: Page, shots: Path, name: str) -> None:
    keep = os.environ.get("AGENTSVC_WRITE_ARTEFACTS") == "1"
    page.evaluate("window.scrollTo(0, 0); document.getElementById('toasts').replaceChildren()")
    page.screenshot(path=str((ARTEFACTS if keep else shots) / name), full_page=True)


def _last_answer(stack, key: str, agent_id: str) -> str:
    listed = stack.api("GET", f"/conversations?agentId={agent_id}&limit=1", key)["data"]
    conv = stack.api("GET", f"/conversations/{listed[0]['id']}", key)["data"]
    return conv["messages"][-1]["content"]


def test_usage_charts_tables_and_budgets_in_words(tab, stack, shots):
    ensure_owner(stack)
    key = owner_key(stack)
    agent = stack.api(
        "POST", "/agents", key, {"name": "Till helper", "systemPrompt": "We open at nine."}
    )["data"]
    for text in ("When do you open?", "Are you open at nine?", "Opening hours?"):
        chat_as_key(stack, key, agent["id"], text)
    report = stack.api("GET", "/usage?groupBy=agent", key)["data"]
    spent = next(r for r in report["rows"] if r["agentId"] == agent["id"])
    assert spent["answers"] == 3 and spent["cost"] > 0 and report["currency"] == "USD"
    # The page's totals are the team's: other tests on this stack answered too.
    answers = sum(r["answers"] for r in report["rows"])

    page = tab.page
    sign_in(page, stack)
    in_owners_team(page)
    page.get_by_label("Agent", exact=True).select_option(agent["id"])
    nav(page, "Usage")
    main = page.locator("main")
    expect(main.get_by_role("heading", name="Usage and costs")).to_be_visible()
    expect(main.locator("svg.chart")).to_have_count(2)
    expect(main.get_by_role("img", name="Tokens per day", exact=False)).to_be_visible()
    expect(main.get_by_role("img", name="Cost per day", exact=False)).to_be_visible()
    per_agent = main.get_by_role("table", name="Usage per agent")
    expect(per_agent.get_by_role("row").filter(has_text="Till helper")).to_contain_text("3")
    expect(main.get_by_role("table", name="Usage per model")).to_contain_text("Builtin")
    main.get_by_role("button", name="Last 7 days").click()
    expect(main.get_by_role("button", name="Last 7 days")).to_have_attribute(
        "aria-pressed", "true"
    )

    # The team's budget, below what was spent: the agents answer with their offline message.
    team = main.get_by_role("form", name="Team budget")
    expect(team).to_contain_text("No budget: nothing stops the answers.")
    team.get_by_label("Monthly limit (USD)").fill("0.01")
    team.get_by_label("Warn me at (%)").fill("50")
    expect(team).to_contain_text("At the limit the agent answers with its offline message")
    expect(main.get_by_role("list", name="Totals")).to_contain_text(f"Answers{answers}")
    team.get_by_role("button", name="Save budget").click()
    team = page.locator("main").get_by_role("form", name="Team budget")
    expect(team).to_contain_text("Limit reached: the offline message answers until the month ends")
    chat_as_key(stack, key, agent["id"], "When do you open?")
    assert _last_answer(stack, key, agent["id"]) == OFFLINE
    assert findings_at_both_widths(page) == []
    _picture(page, shots, "26-usage-1280.png")

    # The agent's budget, warned at its limit only; then the team's raised, then removed.
    form = page.locator("main").get_by_role("form", name="Budget of Till helper")
    form.get_by_label("Monthly limit (USD)").fill("25")
    form.get_by_label("Warn me at (%)").fill("")
    form.get_by_role("button", name="Save budget").click()
    expect(page.get_by_text("Budget saved")).to_be_visible()
    shown = stack.api("GET", f"/agents/{agent['id']}", key)["data"]["budget"]
    assert (shown["monthlyLimit"], shown["warnAtPercent"]) == (25, None)
    team = page.locator("main").get_by_role("form", name="Team budget")
    team.get_by_label("Monthly limit (USD)").fill("100")
    team.get_by_role("button", name="Save budget").click()
    expect(page.locator("main").get_by_role("form", name="Team budget")).not_to_contain_text(
        "Limit reached"
    )
    chat_as_key(stack, key, agent["id"], "When do you open?")
    assert _last_answer(stack, key, agent["id"]) != OFFLINE
    page.locator("main").get_by_role("form", name="Team budget").get_by_role(
        "button", name="Remove budget"
    ).click()
    expect(page.locator("main").get_by_role("form", name="Team budget")).to_contain_text(
        "No budget"
    )
    audit = stack.api("GET", "/audit-log?action=team.budget_changed", key)["data"]
    assert len(audit) == 3
