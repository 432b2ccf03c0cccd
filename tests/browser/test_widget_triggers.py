"""Triggers in Chromium: each type and action, priority, once per session, the shared vectors."""

from __future__ import annotations

import json
from pathlib import Path

from playwright.sync_api import Error as PlaywrightError
from playwright.sync_api import expect

from tests.support.widget_page import eventually, launcher, load, stats, trigger

VECTORS = json.loads(
    (Path(__file__).parent.parent / "vectors" / "trigger_rules.json").read_text("utf-8")
)


def _counts(stack, agent_id, trigger_id):
    entry = stats(stack, agent_id).get(trigger_id) or {}
    return entry.get("firedCount", 0), entry.get("convertedCount", 0)


def _bubble(page, message):
    return page.get_by_role("button", name=message, exact=True)


def test_shared_trigger_vectors_run_in_the_widget(page, stack):
    agent_id = stack.new_agent()
    stack.embed({"agentId": agent_id})
    load(page, stack)
    results = page.evaluate(
        """(v) => ({
            glob: v.glob.map(c => agentsvc.rules.globMatches(c.pattern, c.path)),
            eventData: v.eventData.map(c => agentsvc.rules.eventDataMatches(c.conditions, c.data)),
        })""",
        VECTORS,
    )
    glob_failures = [
        c
        for c, got in zip(VECTORS["glob"], results["glob"], strict=True)
        if got is not c["expected"]
    ]
    data_failures = [
        c
        for c, got in zip(VECTORS["eventData"], results["eventData"], strict=True)
        if got is not c["expected"]
    ]
    assert glob_failures == [] and data_failures == []
    assert len(results["glob"]) >= 10 and len(results["eventData"]) >= 10


def test_time_on_page_bubble_priority_duration_and_once(page, stack):
    agent_id = stack.new_agent()
    first = trigger(
        stack,
        agent_id,
        name="Welcome",
        triggerType="time_on_page",
        conditions={"timeOnPage": 5},
        actionType="show_bubble",
        actionConfig={"message": "Need help choosing?", "duration": 4},
        priority=1,
    )
    second = trigger(
        stack,
        agent_id,
        name="Later",
        triggerType="time_on_page",
        conditions={"timeOnPage": 5},
        actionType="show_bubble",
        actionConfig={"message": "Second bubble"},
        priority=5,
    )
    stack.embed({"agentId": agent_id})
    page.clock.install()
    load(page, stack)
    # The page's time stands still from here: on a busy machine, real time passing between
    # the load and the next step showed the bubble before its five seconds.
    pause_soon(page)
    page.clock.run_for(4000)
    expect(_bubble(page, "Need help choosing?")).to_be_hidden()
    page.clock.run_for(1500)
    # Both are due at once: the lower priority value wins, and only one action shows.
    expect(_bubble(page, "Need help choosing?")).to_be_visible()
    expect(_bubble(page, "Second bubble")).to_be_hidden()
    assert eventually(lambda: _counts(stack, agent_id, first["id"]) == (1, 0))
    assert _counts(stack, agent_id, second["id"]) == (0, 0)
    # The bubble goes away after its duration (seconds).
    page.clock.run_for(4500)
    expect(_bubble(page, "Need help choosing?")).to_be_hidden()
    page.clock.resume()

    # triggerOnce (the default): a reload in the same session does not fire it again, but
    # the other one, not yet fired, now gets its turn.
    page.reload()
    page.wait_for_function("() => window.agentsvc && window.agentsvc.ready === true")
    page.clock.run_for(6000)
    expect(_bubble(page, "Second bubble")).to_be_visible()
    expect(_bubble(page, "Need help choosing?")).to_be_hidden()
    # Clicking the bubble opens the chat and counts as a conversion.
    _bubble(page, "Second bubble").click()
    expect(page.get_by_role("dialog")).to_be_visible()
    assert eventually(lambda: _counts(stack, agent_id, second["id"]) == (1, 1))
    assert _counts(stack, agent_id, first["id"]) == (1, 0)


def test_scroll_depth_opens_chat_prefilled_and_converts(page, stack):
    agent_id = stack.new_agent("We deliver within two days.")
    found = trigger(
        stack,
        agent_id,
        name="Deep reader",
        triggerType="scroll_depth",
        conditions={"scrollDepth": 50},
        actionType="open_chat",
        actionConfig={"message": "How fast do you deliver?"},
        triggerOnce=False,
    )
    stack.embed({"agentId": agent_id})
    stack.host.body_html = "<div style='height:5000px'>long page</div>"
    load(page, stack)
    page.evaluate("window.scrollTo(0, 1000)")
    page.wait_for_timeout(200)
    expect(page.get_by_role("dialog")).to_be_hidden()
    page.evaluate("window.scrollTo(0, 2800)")
    expect(page.get_by_role("dialog")).to_be_visible()
    box = page.get_by_role("textbox", name="Message")
    expect(box).to_have_value("How fast do you deliver?")
    assert eventually(lambda: _counts(stack, agent_id, found["id"]) == (1, 0))
    page.get_by_role("button", name="Send").click()
    expect(page.get_by_role("log").locator(".assistant")).to_contain_text("two days")
    assert eventually(lambda: _counts(stack, agent_id, found["id"]) == (1, 1))
    # The chat it started carries the trigger (the analytics' funnel).
    conversation = stack.api("GET", f"/conversations?agentId={agent_id}")["data"][0]
    assert conversation["triggerId"] == found["id"]
    figures = stack.api("GET", f"/agents/{agent_id}/analytics")["data"]
    assert figures["totals"]["triggerConversations"] == 1


def test_the_greeting_template_shows_the_greeting_as_the_agents_message(page, stack):
    """Issue 29 item 10: "Open the chat with a greeting" greets as the agent; the visitor's
    text box stays empty. The greeting is not stored; the model gets it as the agent's
    earlier turn with the visitor's first message."""
    agent_id = stack.new_agent("We deliver within two days.")
    templates = stack.api("GET", "/triggers/templates")
    template = next(t for t in templates if t["name"] == "Welcome after 30 seconds")
    greeting = template["actionConfig"]["greeting"]
    found = trigger(
        stack,
        agent_id,
        name=template["name"],
        triggerType="custom_event",
        conditions={"event": "welcome"},
        actionType=template["actionType"],
        actionConfig=template["actionConfig"],
    )
    stack.embed({"agentId": agent_id})
    load(page, stack)
    page.evaluate("agentsvc.track('welcome')")
    expect(page.get_by_role("dialog")).to_be_visible()
    log = page.get_by_role("log")
    expect(log.locator(".assistant")).to_have_text(greeting)
    expect(page.get_by_role("textbox", name="Message")).to_have_value("")
    # Nothing to rate: the greeting is not an answer.
    expect(log.get_by_role("button", name="Good answer")).to_have_count(0)
    page.get_by_role("textbox", name="Message").fill("How fast do you deliver?")
    page.get_by_role("button", name="Send").click()
    expect(log.locator(".assistant").nth(1)).to_contain_text("two days")
    assert eventually(lambda: _counts(stack, agent_id, found["id"]) == (1, 1))
    conversation = stack.api("GET", f"/conversations?agentId={agent_id}")["data"][0]
    messages = stack.api("GET", f"/conversations/{conversation['id']}")["data"]["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant"]
    assert greeting not in [m["content"] for m in messages]
    # A reload keeps the greeting where it was in the transcript.
    page.reload()
    launcher(page).click()
    expect(page.get_by_role("log").locator(".assistant").first).to_have_text(greeting)


def test_exit_intent_after_a_few_seconds(page, stack):
    agent_id = stack.new_agent()
    trigger(
        stack,
        agent_id,
        name="Leaving",
        triggerType="exit_intent",
        conditions={},
        actionType="show_bubble",
        actionConfig={"message": "Before you go: 10% off"},
    )
    stack.embed({"agentId": agent_id})
    page.clock.install()
    load(page, stack)
    page.mouse.move(600, 400)
    page.mouse.move(600, -5)  # too early: the visitor just arrived
    page.wait_for_timeout(100)
    expect(_bubble(page, "Before you go: 10% off")).to_be_hidden()
    page.clock.run_for(3500)
    page.mouse.move(600, 300)
    page.mouse.move(600, 150)  # inside the page: no intent
    page.wait_for_timeout(100)
    expect(_bubble(page, "Before you go: 10% off")).to_be_hidden()
    page.mouse.move(600, -5)
    expect(_bubble(page, "Before you go: 10% off")).to_be_visible()


def test_page_view_globs_and_spa_navigation(page, stack):
    agent_id = stack.new_agent()
    found = trigger(
        stack,
        agent_id,
        name="Pricing",
        triggerType="page_view",
        conditions={"page": "/pricing/**"},
        actionType="show_bubble",
        actionConfig={"message": "Questions about plans?"},
    )
    stack.embed({"agentId": agent_id})
    load(page, stack, "/blog/post")
    page.wait_for_timeout(200)
    expect(_bubble(page, "Questions about plans?")).to_be_hidden()
    # Single-page navigation (history.pushState) re-evaluates page globs.
    page.evaluate("history.pushState({}, '', '/pricing/teams?ref=nav')")
    expect(_bubble(page, "Questions about plans?")).to_be_visible()
    assert eventually(lambda: _counts(stack, agent_id, found["id"]) == (1, 0))
    page.get_by_role("button", name="Dismiss").click()
    expect(_bubble(page, "Questions about plans?")).to_be_hidden()

    # A plain load of a matching path fires too (a new session: a new context).
    other = page.context.browser.new_context()
    try:
        fresh = other.new_page()
        load(fresh, stack, "/pricing")
        expect(_bubble(fresh, "Questions about plans?")).to_be_visible()
    finally:
        other.close()


def test_custom_event_operators_and_nothing_while_open(page, stack):
    agent_id = stack.new_agent()
    trigger(
        stack,
        agent_id,
        name="Big cart",
        triggerType="custom_event",
        conditions={
            "event": "cart_updated",
            "eventData": {"total": {"$gte": 100}, "currency": {"$in": ["EUR", "USD"]}},
        },
        actionType="show_bubble",
        actionConfig={"message": "Free shipping unlocked!"},
        triggerOnce=False,
    )
    stack.embed({"agentId": agent_id})
    load(page, stack)
    bubble = _bubble(page, "Free shipping unlocked!")
    page.evaluate("agentsvc.track('cart_updated', {total: 50, currency: 'EUR'})")
    page.evaluate("agentsvc.track('cart_updated', {total: 150, currency: 'GBP'})")
    page.evaluate("agentsvc.track('other_event', {total: 150, currency: 'EUR'})")
    page.wait_for_timeout(100)
    expect(bubble).to_be_hidden()
    # While the chat is open no proactive action shows.
    launcher(page).click()
    page.evaluate("agentsvc.track('cart_updated', {total: 150, currency: 'EUR'})")
    page.wait_for_timeout(100)
    expect(bubble).to_be_hidden()
    page.keyboard.press("Escape")
    page.evaluate("agentsvc.track('cart_updated', {total: 150, currency: 'EUR'})")
    expect(bubble).to_be_visible()


def test_show_bubble_api_and_events(page, stack):
    agent_id = stack.new_agent()
    stack.embed({"agentId": agent_id})
    page.clock.install()
    load(page, stack)
    page.evaluate(
        "window.got = []; agentsvc.on('bubble', e => window.got.push(e.message));"
        "window.h = e => window.got.push('open'); agentsvc.on('open', window.h);"
    )
    page.evaluate("agentsvc.showBubble('Hi there', 2)")
    expect(_bubble(page, "Hi there")).to_be_visible()
    page.clock.run_for(2100)
    expect(_bubble(page, "Hi there")).to_be_hidden()
    page.evaluate("agentsvc.toggle()")
    expect(page.get_by_role("dialog")).to_be_visible()
    page.evaluate("agentsvc.off('open', window.h); agentsvc.close(); agentsvc.open()")
    assert page.evaluate("window.got") == ["Hi there", "open"]


def test_exit_intent_on_touch_devices_is_a_quick_scroll_up(browser, stack):
    agent_id = stack.new_agent()
    trigger(
        stack,
        agent_id,
        name="Leaving on mobile",
        triggerType="exit_intent",
        conditions={},
        actionType="show_bubble",
        actionConfig={"message": "Wait, a coupon!"},
    )
    stack.embed({"agentId": agent_id})
    stack.host.body_html = "<div style='height:6000px'>long page</div>"
    context = browser.new_context(
        viewport={"width": 390, "height": 700}, is_mobile=True, has_touch=True
    )
    try:
        page = context.new_page()
        page.clock.install()
        load(page, stack)
        assert page.evaluate("matchMedia('(pointer: coarse)').matches")
        # The page's time stands still between the steps: the widget measures a scroll's
        # speed with Date.now(), and real time passing between two scrolls on a busy machine
        # made a quick scroll slow.
        pause_soon(page)
        bubble = page.get_by_role("button", name="Wait, a coupon!")
        scroll_to(page, 2000)
        scroll_to(page, 1000)  # too early: just arrived
        expect(bubble).to_be_hidden()
        page.clock.run_for(3500)
        scroll_to(page, 2500)
        page.clock.run_for(500)
        scroll_to(page, 2400)  # a small move up is reading, not leaving
        page.clock.run_for(100)
        expect(bubble).to_be_hidden()
        scroll_to(page, 1500)
        page.clock.run_for(100)
        expect(bubble).to_be_visible()
    finally:
        context.close()


def pause_soon(page) -> None:
    """Stop the page's clock a moment from its now. The moment must still be ahead when the
    browser gets the order: on a busy machine it may not be, so a longer one is tried."""
    for ahead in (0.05, 0.1, 0.2, 0.4, 0.8):
        try:
            page.clock.pause_at(page.evaluate("Date.now()") / 1000 + ahead)
            return
        except PlaywrightError as err:
            if "to the past" not in str(err):
                raise
    raise AssertionError("the page's clock could not be paused")


def scroll_to(page, y: int) -> None:
    """Scroll, and return once the page's scroll listeners (the widget's first) have run."""
    page.evaluate(
        """y => new Promise(done => {
            addEventListener("scroll", () => done(), { once: true });
            scrollTo(0, y);
        })""",
        y,
    )


def _bubble_then(stack, agent_id, action_type, action_config):
    """A page-view bubble trigger, and a custom-event trigger with the given action."""
    bubble = trigger(
        stack,
        agent_id,
        name="Hello bubble",
        triggerType="page_view",
        conditions={"page": "/**"},
        actionType="show_bubble",
        actionConfig={"message": "Hi! Questions?"},  # no duration: shown until dismissed
    )
    later = trigger(
        stack,
        agent_id,
        name="Intent",
        triggerType="custom_event",
        conditions={"event": "pricing_viewed"},
        actionType=action_type,
        actionConfig=action_config,
        priority=10,  # a later priority than the bubble's does not matter once it shows
    )
    return bubble, later


def test_open_chat_trigger_replaces_a_showing_bubble(page, stack):
    agent_id = stack.new_agent()
    bubble, later = _bubble_then(
        stack, agent_id, "open_chat", {"message": "Which plan suits a team of five?"}
    )
    stack.embed({"agentId": agent_id})
    load(page, stack)
    expect(_bubble(page, "Hi! Questions?")).to_be_visible()
    page.evaluate("agentsvc.track('pricing_viewed')")
    expect(page.get_by_role("dialog")).to_be_visible()
    expect(page.get_by_role("textbox", name="Message")).to_have_value(
        "Which plan suits a team of five?"
    )
    expect(_bubble(page, "Hi! Questions?")).to_be_hidden()
    assert eventually(lambda: _counts(stack, agent_id, later["id"]) == (1, 0))
    # The bubble was shown, never clicked: fired, not converted.
    assert _counts(stack, agent_id, bubble["id"]) == (1, 0)


def test_show_form_trigger_replaces_a_showing_bubble(page, stack):
    agent_id = stack.new_agent()
    tool = stack.api(
        "POST",
        "/tools",
        {
            "agentId": agent_id,
            "name": "callback",
            "description": "Asks for a phone number",
            "executionType": "form",
            "inputSchema": {"type": "object", "properties": {}},
            "formSchema": {"fields": [{"name": "phone", "label": "Phone", "type": "tel"}]},
            "formExecutionMode": "webhook",
            "formWebhookUrl": stack.receiver_url + "/hooks/callback",
        },
    )
    bubble, later = _bubble_then(stack, agent_id, "show_form", {"toolId": tool["id"]})
    stack.embed({"agentId": agent_id})
    load(page, stack)
    expect(_bubble(page, "Hi! Questions?")).to_be_visible()
    page.evaluate("agentsvc.track('pricing_viewed')")
    expect(page.get_by_role("form").get_by_label("Phone")).to_be_visible()
    expect(page.get_by_role("dialog")).to_be_visible()
    expect(_bubble(page, "Hi! Questions?")).to_be_hidden()
    assert eventually(lambda: _counts(stack, agent_id, later["id"]) == (1, 0))
    assert _counts(stack, agent_id, bubble["id"]) == (1, 0)


def test_a_showing_bubble_is_not_replaced_by_another_bubble(page, stack):
    agent_id = stack.new_agent()
    _bubble_then(stack, agent_id, "show_bubble", {"message": "A second hint"})
    stack.embed({"agentId": agent_id})
    load(page, stack)
    expect(_bubble(page, "Hi! Questions?")).to_be_visible()
    page.evaluate("agentsvc.track('pricing_viewed')")
    page.wait_for_timeout(200)
    # One hint at a time: the first stays, the second waits for its next chance.
    expect(_bubble(page, "Hi! Questions?")).to_be_visible()
    expect(_bubble(page, "A second hint")).to_be_hidden()
