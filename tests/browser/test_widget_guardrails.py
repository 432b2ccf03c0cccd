"""Guardrails as the visitor sees them in the widget (Chromium): an answer that says what
the agent must not say ends as the fallback alone, the same text the team reads; a
message over the agent's longest is refused in words the widget shows."""

from __future__ import annotations

from playwright.sync_api import expect

from tests.support.widget_page import launcher, load

PROMPT = "We open at nine in the morning. Shipping is free over fifty euros."
FALLBACK = "A person from the team will answer this."


def test_the_visitor_ends_with_the_fallback_and_reads_why_a_message_is_refused(page, stack):
    agent_id = stack.new_agent(PROMPT)
    guardrails = {
        "mustNotSay": {"words": ["fifty euros"], "fallback": FALLBACK},
        "maxVisitorMessageChars": 40,
    }
    stack.api("PATCH", f"/agents/{agent_id}", {"guardrails": guardrails})
    stack.embed({"agentId": agent_id})
    load(page, stack)
    launcher(page).click()
    box = page.get_by_role("textbox", name="Message")
    box.fill("Is shipping free?")
    page.get_by_role("button", name="Send").click()
    log = page.get_by_role("log")
    expect(log.locator(".assistant[aria-busy=false]")).to_have_text(FALLBACK)
    expect(log.locator(".assistant")).to_have_count(1)
    assert "fifty" not in log.inner_text()
    conv_id = page.evaluate(
        f"() => JSON.parse(localStorage.getItem('agentsvc:{agent_id}:conversation'))"
    )["conversationId"]
    stored = stack.api("GET", f"/conversations/{conv_id}")["data"]
    assert stored["messages"][1]["content"] == FALLBACK and stored["flaggedAt"]

    box.fill("Could you tell me all about your shipping costs to Norway?")
    page.get_by_role("button", name="Send").click()
    expect(page.get_by_role("dialog")).to_contain_text(
        "Your message is too long: 58 characters, and this chat takes at most 40."
    )
