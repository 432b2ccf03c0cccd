"""An agent's Evaluations in a real browser (issue 33): from the agent's page, an owner
creates a set, is told a case needs a check (the API's message), adds three cases in plain
words and deletes one, runs the set on the live version and follows the run to its results:
the pass rate, and each case's verdict in words, its reason and its answer. On the
Evaluations page, the owner sets the check before publishing, read back through the API.
No serious or critical axe-core finding at 1280 and 390 px; nothing wider than a 390 px
screen; no e-mail address shown."""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest
from playwright.sync_api import Page, expect

from tests.support.axe import findings_at_both_widths
from tests.support.dashboard_stack import (
    PASSWORD,
    Tab,
    ensure_owner,
    in_owners_team,
    owner_key,
    public_post,
    sign_in,
)

ARTEFACTS = Path(__file__).resolve().parents[1] / "browser" / "artefacts"
PROMPT = "We open at ten on Sundays.\nParcels ship within a day."
MEMBER = "evals-member@example.com"


@pytest.fixture(scope="module")
def shop(stack) -> dict:
    """An agent the builtin model answers from its prompt; a member of the team."""
    ensure_owner(stack)
    key = owner_key(stack)
    agent = stack.api("POST", "/agents", key, {"name": "Evals shop", "systemPrompt": PROMPT})
    invitation = stack.api("POST", "/team/invite", key, {"email": MEMBER, "role": "member"})
    token = parse_qs(urlsplit(invitation["link"]).query)["token"][0]
    joined = {"token": token, "password": PASSWORD, "name": "Mia Member"}
    public_post(stack, "/team/invitations/accept", joined)
    return {"key": key, "id": agent["data"]["id"]}


def _picture(page: Page, shots: Path, name: str, width: int = 1280) -> None:
    keep = os.environ.get("AGENTSVC_WRITE_ARTEFACTS") == "1"
    page.set_viewport_size({"width": width, "height": 860})
    page.evaluate("window.scrollTo(0, 0); document.getElementById('toasts').replaceChildren()")
    page.screenshot(path=str((ARTEFACTS if keep else shots) / name), full_page=True)
    page.set_viewport_size({"width": 1280, "height": 860})


def _add_case(page: Page, question: str, must: str = "", must_not: str = "") -> None:
    """Fill the case form in and send it; once added, the form is empty again."""
    form = page.get_by_role("form", name="Add a case")
    form.get_by_label("Question").fill(question)
    form.get_by_label("The answer must mention").fill(must)
    form.get_by_label("The answer must not mention").fill(must_not)
    form.get_by_role("button", name="Add case").click()
    if must or must_not:
        expect(form.get_by_label("Question")).to_have_value("")


def test_an_owner_builds_runs_and_gates_a_set(tab, stack, shop, shots):
    page = tab.page
    sign_in(page, stack)
    in_owners_team(page)
    page.goto(f"{stack.url}/#/agents/{shop['id']}")
    page.get_by_role("link", name="Evaluations", exact=True).click()
    expect(page.get_by_role("heading", name="Evaluations of Evals shop")).to_be_visible()
    expect(page.get_by_text("No sets yet")).to_be_visible()

    # A new set opens on its own page.
    page.get_by_label("Name of a new set").fill("Opening hours")
    page.get_by_role("button", name="Create set").click()
    expect(page.get_by_role("heading", name="Opening hours", exact=True)).to_be_visible()

    # A case without a check is refused in the API's words; then three, one deleted.
    _add_case(page, "Anything?")
    refused = page.get_by_role("form", name="Add a case").get_by_role("alert")
    expect(refused).to_contain_text("something to check")
    _add_case(page, "When do you open?", must="ten")
    cases = page.get_by_role("region", name="Cases", exact=True).locator("tbody tr")
    expect(cases).to_have_count(1)
    _add_case(page, "Pineapples?", must="pineapple")
    _add_case(page, "Do you sell gift cards?", must="gift, card", must_not="no\nnot")
    expect(cases).to_have_count(3)
    expect(cases.nth(2)).to_contain_text("Must mention: gift, card")
    expect(cases.nth(2)).to_contain_text("Must not mention: no, not")
    page.get_by_role("button", name="Delete case: Do you sell gift cards?").click()
    page.get_by_role("dialog").get_by_role("button", name="Delete case").click()
    expect(cases).to_have_count(2)
    expect(cases.first).to_contain_text("Must mention: ten")
    assert findings_at_both_widths(page) == []
    _picture(page, shots, "24-evals-set-1280.png")

    # Run on the live version (the default): the run's page follows it to its results.
    form = page.get_by_role("form", name="Run the set")
    expect(form.get_by_label("Version")).to_have_value("")
    expect(form.get_by_label("Version").locator("option:checked")).to_have_text(
        "The live version (1)"
    )
    form.get_by_role("button", name="Run", exact=True).click()
    expect(page.get_by_role("heading", name="Version 1 on “Opening hours”")).to_be_visible()
    status = page.get_by_role("status").filter(has_text="passed")
    expect(status).to_have_text("Done: 1 of 2 passed (50 %)", timeout=30_000)
    results = page.locator("ol.results > li")
    expect(results).to_have_count(2)
    passed = results.filter(has_text="When do you open?")
    expect(passed).to_contain_text("✓ Passed It says what it must and nothing it must not")
    failed = results.filter(has_text="Pineapples?")
    expect(failed).to_contain_text('✗ Failed It does not say "pineapple"')
    passed.get_by_text("The answer (in").click()
    expect(passed.locator(".answer-text")).to_contain_text("ten")
    assert findings_at_both_widths(page) == []
    _picture(page, shots, "24-evals-run-1280.png")
    _picture(page, shots, "24-evals-run-390.png", 390)

    # The set lists the run; the check before publishing is set on the Evaluations page.
    page.get_by_role("link", name="Back to the set").click()
    runs = page.get_by_role("region", name="Runs", exact=True).locator("tbody tr")
    expect(runs).to_have_count(1)
    expect(runs.first).to_contain_text("Version 1Done1 of 2 passed (50 %)")
    page.get_by_role("link", name="All sets").click()
    gate = page.get_by_role("form", name="Check before publishing")
    gate.get_by_label("Set").select_option(label="Opening hours")
    gate.get_by_label("Minimum pass rate (%)").fill("80")
    gate.get_by_label("Largest drop against the live version (points)").fill("10")
    gate.get_by_role("button", name="Save the check").click()
    expect(page.locator(".toast").filter(has_text="each publish is checked first")).to_be_visible()
    agent = stack.api("GET", f"/agents/{shop['id']}", shop["key"])["data"]
    evalset = page.get_by_role("link", name="Opening hours").get_attribute("href").split("/")[-1]
    assert agent["publishGate"] == {"evalsetId": evalset, "minPassRate": 80, "maxDrop": 10}
    expect(
        page.get_by_role("table", name="Evaluation sets").locator("tbody td").nth(1)
    ).to_have_text("2")
    assert findings_at_both_widths(page) == []
    assert "@" not in page.locator("main").inner_text()
    _picture(page, shots, "24-evals-1280.png")

    # Removed again: drafts publish without a check.
    gate.get_by_label("Set").select_option(label="None: publish without a check")
    gate.get_by_role("button", name="Save the check").click()
    expect(page.locator(".toast").filter(has_text="without a check")).to_be_visible()
    assert stack.api("GET", f"/agents/{shop['id']}", shop["key"])["data"]["publishGate"] is None


def test_a_member_may_do_the_same(browser, stack, shop):
    """The API asks no owner for any of it: a member gets the same forms."""
    tab = Tab(browser, stack)
    try:
        page = tab.page
        sign_in(page, stack, MEMBER)
        page.goto(f"{stack.url}/#/agents/{shop['id']}/evals")
        expect(page.get_by_text("Any member of the team can change the sets")).to_be_visible()
        expect(page.get_by_role("button", name="Create set")).to_be_visible()
        expect(page.get_by_role("button", name="Save the check")).to_be_visible()
        page.get_by_role("link", name="Opening hours").click()
        expect(page.get_by_role("button", name="Add case")).to_be_visible()
        expect(page.get_by_role("button", name="Run", exact=True)).to_be_visible()
        assert "@" not in page.locator("main").inner_text()
    finally:
        tab.close()
