"""The widget while a person approves the agent's tool call (issue 36): a plain waiting
note, then the decision and the answer in the same chat; or, when the visitor left and came
back, the answer stored meanwhile."""

from __future__ import annotations

from playwright.sync_api import expect

from tests.support.widget_page import eventually, launcher, load

SCHEMA = {
    "type": "object",
    "properties": {"order": {"type": "string"}},
    "required": ["order"],
}


def _agent_with_refund(stack) -> str:
    agent_id = stack.new_agent()
    stack.api(
        "POST",
        "/tools",
        {
            "agentId": agent_id,
            "name": "refund",
            "description": "Refund an order",
            "executionType": "mock",
            "inputSchema": SCHEMA,
            "mockResponse": '{"refunded": "order A1"}',
            "requiresApproval": True,
        },
    )
    return agent_id


def _pending(stack, agent_id: str) -> list:
    return stack.api("GET", f"/approvals?status=pending&agentId={agent_id}")["data"]


def _ask(page, stack, agent_id: str):
    stack.embed({"agentId": agent_id})
    load(page, stack)
    launcher(page).click()
    box = page.get_by_role("textbox", name="Message")
    box.fill('/tool refund {"order": "A1"}')
    page.get_by_role("button", name="Send").click()
    log = page.get_by_role("log")
    expect(log.get_by_role("status")).to_have_text(
        "Waiting for a person from the team to approve this…"
    )
    return log


def test_the_visitor_waits_then_sees_the_answer(page, stack):
    agent_id = _agent_with_refund(stack)
    log = _ask(page, stack, agent_id)
    expect(page.get_by_role("button", name="Send")).to_be_disabled()
    (waiting,) = eventually(lambda: _pending(stack, agent_id))
    stack.api("POST", f"/approvals/{waiting['id']}/approve", {})
    expect(log).to_contain_text("A person from the team approved this.")
    expect(log.locator(".assistant[aria-busy=false]").last).to_contain_text("order A1")
    expect(page.get_by_role("button", name="Send")).to_be_enabled()
    assert page.errors == []


def test_a_visitor_who_left_sees_the_outcome_when_back(page, stack):
    agent_id = _agent_with_refund(stack)
    _ask(page, stack, agent_id)
    (waiting,) = eventually(lambda: _pending(stack, agent_id))
    page.goto("about:blank")  # the visitor leaves; the service notices within a second
    page.wait_for_timeout(1500)
    stack.api("POST", f"/approvals/{waiting['id']}/deny", {"reason": "Order already refunded"})
    conv_id = waiting["conversationId"]
    stored = eventually(
        lambda: [
            m
            for m in stack.api("GET", f"/conversations/{conv_id}")["data"]["messages"]
            if m["role"] == "assistant"
        ]
    )
    assert stored and "Order already refunded" in stored[0]["content"]
    load(page, stack)
    launcher(page).click()
    log = page.get_by_role("log")
    expect(log).to_contain_text("Order already refunded")
    assert page.errors == []
