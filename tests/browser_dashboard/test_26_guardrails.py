"""An agent's Guardrails in a real browser (issue 36): the owner turns on hiding card
numbers and e-mail addresses, adds a blocked topic and a phrase the agent must never say,
and a longest message, in plain words on the agent's page; the save says the version it
made, and a reload shows them again. The try box says, without a model, what would happen
to a text with the settings on the page, saved or not. A pattern RE2 refuses is named in
the form's alert. An answer the agent must not give is replaced; its conversation is
flagged (in the list's filter and on its page, with the guardrails' note) until a member
marks it reviewed. No serious or critical axe-core finding at 1280 and 390 px; nothing
wider than a 390 px screen."""

from __future__ import annotations

import os
from pathlib import Path

from playwright.sync_api import expect

from tests.support.axe import findings_at_both_widths
from tests.support.dashboard_stack import (
    chat_as_key,
    ensure_owner,
    in_owners_team,
    owner_key,
    sign_in,
)

ARTEFACTS = Path(__file__).resolve().parents[1] / "browser" / "artefacts"
PROMPT = "We open at nine. Parcels ship within a day."


def _picture(page, shots: Path) -> None:
    """The Guardrails section and the try box, as the owners' guide shows them."""
    keep = os.environ.get("AGENTSVC_WRITE_ARTEFACTS") == "1"
    page.evaluate("window.scrollTo(0, 0); document.getElementById('toasts').replaceChildren()")
    area = page.evaluate(
        """() => {
            const [a, b] = ["Guardrails", "Try the guardrails"].map((name) =>
                document.querySelector(`form[aria-label="${name}"]`).getBoundingClientRect());
            return {x: a.x, y: a.y + scrollY, width: a.width, height: b.bottom - a.top};
        }"""
    )
    path = (ARTEFACTS if keep else shots) / "dashboard-guardrails.png"
    page.screenshot(path=str(path), full_page=True, clip=area)


def test_an_owner_sets_tries_and_reviews_guardrails(tab, stack, shots):
    ensure_owner(stack)
    key = owner_key(stack)
    agent = stack.api("POST", "/agents", key, {"name": "Guarded shop", "systemPrompt": PROMPT})
    agent = agent["data"]
    page = tab.page
    sign_in(page, stack)
    in_owners_team(page)
    page.goto(f"{stack.url}/#/agents/{agent['id']}")

    form = page.get_by_role("form", name="Guardrails", exact=True)
    form.get_by_label("Card numbers").check()
    form.get_by_label("E-mail addresses").check()
    form.get_by_role("button", name="Add a topic").click()
    topic = form.get_by_role("group", name="Blocked topic")
    topic.get_by_label("Name").fill("legal")
    topic.get_by_label("Words or phrases, separated by commas").fill("lawsuit, attorney")
    topic.get_by_label("Reply instead of the model").fill("Please write to legal@shop.test.")
    never = form.get_by_role("group", name="Never say")
    never.get_by_label("Words or phrases, separated by commas").fill("guaranteed refund, nine")
    never.get_by_label("Answer instead (the conversation is flagged)").fill("A person will answer.")
    form.get_by_label("Longest visitor message (characters)").fill("500")
    form.get_by_role("button", name="Save guardrails").click()
    expect(page.locator(".toast").filter(has_text="Guardrails saved (version 2)")).to_be_visible()

    # The try box: the settings on the page, in words; nothing is saved by trying.
    box = page.get_by_role("form", name="Try the guardrails")
    box.get_by_label("Text").fill("A lawsuit! My card 4111 1111 1111 1111. A guaranteed refund?")
    box.get_by_role("button", name="Try it").click()
    said = box.get_by_role("status")
    expect(said.locator("li")).to_have_text(
        [
            "Blocked topic “legal” (the word “lawsuit”), answered Please write to legal@shop.test.",
            "Hidden: 1 card.",
            "The model reads: A lawsuit! My card [card]. A guaranteed refund?",
            "Stored: A lawsuit! My card [card]. A guaranteed refund?",
            "As an answer: the word “guaranteed refund”, replaced by A person will answer.",
        ]
    )
    _picture(page, shots)
    form.get_by_label("Longest visitor message (characters)").fill("10")
    box.get_by_role("button", name="Try it").click()
    expect(said.locator("li").first).to_have_text("Too long: over 10 characters.")
    assert findings_at_both_widths(page) == []

    # A pattern RE2 refuses: the alert names it, and nothing is saved.
    form.get_by_label("Your own patterns, one per line").fill("order = (#[0-9]+")
    form.get_by_role("button", name="Save guardrails").click()
    expect(form.get_by_role("alert")).to_contain_text("guardrails.redact.patterns[0].pattern")
    expect(form.get_by_role("alert")).to_contain_text("“(#[0-9]+”")
    page.reload()
    form = page.get_by_role("form", name="Guardrails", exact=True)
    expect(form.get_by_label("Card numbers")).to_be_checked()
    expect(form.get_by_label("Phone numbers")).not_to_be_checked()
    expect(form.get_by_role("group", name="Blocked topic").get_by_label("Name")).to_have_value(
        "legal"
    )
    expect(form.get_by_label("Longest visitor message (characters)")).to_have_value("500")
    expect(form.get_by_label("Your own patterns, one per line")).to_have_value("")

    # The builtin model's answer says "nine": replaced, and its conversation flagged.
    chat_as_key(stack, key, agent["id"], "When do you open?")
    page.goto(f"{stack.url}/#/conversations")
    page.get_by_label("Feedback filter").select_option(label="Flagged by a guardrail")
    row = page.get_by_role("table", name="Conversations").get_by_role("row").nth(1)
    expect(row).to_contain_text("Flagged")
    row.get_by_role("link").click()
    notice = page.locator(".notice").filter(has_text="Flagged for review")
    expect(notice).to_be_visible()
    expect(page.get_by_role("log", name="Messages")).to_contain_text("A person will answer.")
    expect(page.get_by_role("log", name="Messages")).to_contain_text(
        "The agent's answer said the word “nine”, which it must not say"
    )
    assert "We open at nine" not in page.get_by_role("log", name="Messages").inner_text()
    assert findings_at_both_widths(page) == []
    notice.get_by_role("button", name="Mark reviewed").click()
    expect(notice).to_have_count(0)
    flagged = stack.api("GET", f"/conversations?agentId={agent['id']}&flagged=true", key)
    assert flagged["data"] == []
