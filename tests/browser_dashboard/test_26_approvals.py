"""Tool calls a person approves first, in the Inbox (issue 36): a visitor's call shows up
live with the tool's name and its input in words; the owner edits the input (a mistyped
JSON is refused in words) and approves, and denies another with a reason; each visitor's
stream goes on with the outcome. The tool editor's "Requires approval". No serious or
critical axe-core finding with a call waiting, at 1280 and 390 px."""

from __future__ import annotations

import json
import threading
import urllib.request

import pytest
from playwright.sync_api import expect

from tests.support.axe import findings_at_both_widths
from tests.support.dashboard_stack import Tab, ensure_owner, in_owners_team, nav, owner_key, sign_in

SCHEMA = {"type": "object", "properties": {"order": {"type": "string"}}, "required": ["order"]}


class Visitor(threading.Thread):
    """A visitor's chat turn, its stream read to the end in a thread of its own."""

    def __init__(self, stack, agent_id: str, order: str):
        super().__init__(daemon=True)
        text = f'/tool refund {{"order": "{order}"}}'
        self.body = {"agentId": agent_id, "messages": [{"role": "user", "content": text}]}
        self.url = stack.url + "/api/v1/chat"
        self.stream = ""
        self.start()

    def run(self) -> None:
        request = urllib.request.Request(
            self.url,
            data=json.dumps(self.body).encode(),
            headers={"Content-Type": "application/json"},
            method="POST",
        )
        with urllib.request.urlopen(request, timeout=60) as resp:  # noqa: S310 (loopback)
            self.stream = resp.read().decode()


@pytest.fixture(scope="module")
def shop(stack):
    """An agent whose `refund` tool requires approval."""
    ensure_owner(stack)
    key = owner_key(stack)
    agent = stack.api("POST", "/agents", key, {"name": "Approvals shop"})["data"]
    tool = {
        "agentId": agent["id"],
        "name": "refund",
        "description": "Refund an order",
        "executionType": "mock",
        "inputSchema": SCHEMA,
        "mockResponse": '{"refunded": true}',
        "requiresApproval": True,
    }
    stack.api("POST", "/tools", key, tool)
    return agent["id"]


def test_a_member_approves_with_an_edited_input_and_denies(tab: Tab, stack, shop):
    page = tab.page
    sign_in(page, stack)
    in_owners_team(page)
    nav(page, "Inbox")
    first = Visitor(stack, shop, "A1")
    card = page.get_by_role("article", name="refund waits for approval")
    expect(card).to_be_visible()
    expect(card).to_contain_text("Approvals shop")
    expect(card.locator("dl")).to_contain_text("order")
    expect(card.locator("dl")).to_contain_text("A1")
    assert findings_at_both_widths(page) == []

    card.get_by_role("button", name="Edit input").click()
    box = card.get_by_label("Input (JSON)")
    expect(box).to_be_focused()
    box.fill('{"order": "A2"')
    card.get_by_role("button", name="Approve with this input").click()
    expect(card.get_by_role("alert")).to_contain_text("input: not valid JSON")
    box.fill('{"order": 2}')
    card.get_by_role("button", name="Approve with this input").click()
    expect(card.get_by_role("alert")).to_contain_text("input:")
    box.fill('{"order": "A2"}')
    card.get_by_role("button", name="Approve with this input").click()
    expect(card).to_be_hidden()
    first.join(20)
    assert '"status": "approved"' in first.stream.replace('":"', '": "')
    assert '{"order":"A2"}' in first.stream

    second = Visitor(stack, shop, "A3")
    card = page.get_by_role("article", name="refund waits for approval")
    expect(card).to_contain_text("A3")
    card.get_by_role("button", name="Deny").click()
    card.get_by_label("Reason").fill("This order was refunded last week")
    card.get_by_role("button", name="Deny", exact=True).last.click()
    expect(card).to_be_hidden()
    second.join(20)
    assert "This order was refunded last week" in second.stream
    expect(page.get_by_role("heading", name="Waiting for approval")).to_be_hidden()


def test_the_tool_editor_sets_requires_approval(tab: Tab, stack, shop):
    page = tab.page
    sign_in(page, stack)
    in_owners_team(page)
    key = owner_key(stack)
    (tool,) = stack.api("GET", f"/tools?agentId={shop}", key)
    page.goto(f"{stack.url}/#/tools/{tool['id']}")
    approval = page.get_by_label("Requires approval")
    expect(approval).to_be_checked()
    page.get_by_label("Decision within (seconds)").fill("600")
    approval.uncheck()
    page.get_by_role("button", name="Save tool").click()
    expect(page.get_by_text("Tool saved")).to_be_visible()
    saved = stack.api("GET", f"/tools/{tool['id']}", key)
    assert (saved["requiresApproval"], saved["approvalTimeoutSeconds"]) == (False, 600)
