"""The widget in Chromium: embedding, streaming chat, tool results, errors, identity, looks."""

from __future__ import annotations

import hashlib
import hmac
import json
import time

import jwt
from playwright.sync_api import expect

from tests.support.widget_page import eventually, launcher, load, pixel, read_png


def _conversation(stack, conv_id: str) -> dict:
    return stack.api("GET", f"/conversations/{conv_id}")["data"]


def _stored(page, agent_id: str, what: str):
    raw = page.evaluate(f"() => localStorage.getItem('agentsvc:{agent_id}:{what}')")
    return json.loads(raw) if raw else None


def test_streaming_chat_feedback_and_continuation(page, stack):
    agent_id = stack.new_agent(
        "We open at nine in the morning. Shipping is free over fifty euros. "
        "Returns are accepted within thirty days."
    )
    stack.embed({"agentId": agent_id})
    load(page, stack)

    button = launcher(page)
    expect(button).to_have_attribute("aria-expanded", "false")
    expect(page.get_by_role("dialog")).to_be_hidden()
    button.click()
    expect(page.get_by_role("button", name="Close chat")).to_have_attribute("aria-expanded", "true")
    dialog = page.get_by_role("dialog")
    expect(dialog).to_be_visible()
    box = page.get_by_role("textbox", name="Message")
    expect(box).to_be_focused()

    # Record, at each streamed delta, the busy message's text: it grows while busy.
    page.evaluate(
        """() => { window.seen = []; agentsvc.on('stream', (e) => {
            if (e.event !== 'content_block_delta') return;
            const busy = document.getElementById('agentsvc-widget').shadowRoot
                .querySelector('.log .assistant[aria-busy=true]');
            window.seen.push(busy ? busy.textContent : null);
        }); }"""
    )
    box.fill("When do you open in the morning?")
    page.get_by_role("button", name="Send").click()
    log = page.get_by_role("log")
    done = log.locator(".assistant[aria-busy=false]")
    expect(done).to_contain_text("We open at nine in the morning.")
    seen = page.evaluate("window.seen")
    # The builtin model streams in several chunks (60 ms apart here).
    assert len(seen) >= 2, seen
    assert None not in seen
    assert all(len(a) < len(b) for a, b in zip(seen, seen[1:], strict=False)), seen
    assert done.inner_text().startswith(seen[-1])
    expect(log.locator(".user")).to_have_text("When do you open in the morning?")

    session_id = _stored(page, agent_id, "session")
    assert isinstance(session_id, str) and session_id
    conv = _stored(page, agent_id, "conversation")
    conv_id = conv["conversationId"]
    assert conv_id.startswith("conv_")
    stored = _conversation(stack, conv_id)
    assert stored["sessionId"] == session_id if "sessionId" in stored else True
    assert [m["role"] for m in stored["messages"]] == ["user", "assistant"]

    # Feedback: a thumbs-up is stored on the assistant message.
    done.get_by_role("button", name="Good answer").click()
    expect(done.get_by_role("button", name="Good answer")).to_have_attribute("aria-pressed", "true")
    assert eventually(lambda: _conversation(stack, conv_id)["messages"][1]["rating"] == "up")

    # A new page load shows the transcript and continues the same conversation.
    page.reload()
    page.wait_for_function("() => window.agentsvc && window.agentsvc.ready === true")
    launcher(page).click()
    expect(log.locator(".user")).to_have_count(1)
    expect(log.locator(".assistant")).to_contain_text("We open at nine")
    expect(log.get_by_role("button", name="Good answer")).to_have_attribute("aria-pressed", "true")
    page.get_by_role("textbox", name="Message").fill("Is shipping free?")
    page.keyboard.press("Enter")
    expect(log.locator(".assistant").nth(1)).to_contain_text("Shipping is free")
    expect(log.locator(".assistant[aria-busy=true]")).to_have_count(0)
    messages = _conversation(stack, conv_id)["messages"]
    assert [m["content"] for m in messages if m["role"] == "user"] == [
        "When do you open in the morning?",
        "Is shipping free?",
    ]
    page.get_by_role("log").get_by_role("button", name="Bad answer").nth(1).click()
    assert eventually(lambda: _conversation(stack, conv_id)["messages"][3]["rating"] == "down")

    # Esc closes the panel and gives focus back to the launcher.
    page.keyboard.press("Escape")
    expect(dialog).to_be_hidden()
    expect(launcher(page)).to_be_focused()
    expect(launcher(page)).to_have_attribute("aria-expanded", "false")


def test_stub_queue_isolation_and_text_only(page, stack):
    agent_id = stack.new_agent("Our motto is <img src=x onerror=alert(1)> <b>bold</b> and fun.")
    # Calls made before the script loads are queued by the stub and replayed in order.
    stack.embed(
        {"agentId": agent_id},
        after=(
            "<script>window.seen = [];"
            "agentsvc.on('open', function () { window.seen.push('open'); });"
            "agentsvc.open({message: 'queued hello'});</script>"
        ),
    )
    stack.host.body_html = "<h1 id='title'>Host page</h1><button id='host-btn'>Host</button>"
    load(page, stack)
    expect(page.get_by_role("dialog")).to_be_visible()
    expect(page.get_by_role("textbox", name="Message")).to_have_value("queued hello")
    assert page.evaluate("window.seen") == ["open"]
    assert page.evaluate("typeof window.agentsvc.q") == "undefined"

    # Host styles do not leak in; widget styles do not leak out.
    launcher_bg = page.evaluate(
        "() => getComputedStyle(document.getElementById('agentsvc-widget').shadowRoot"
        ".querySelector('.launcher')).backgroundColor"
    )
    assert launcher_bg == "rgb(36, 87, 214)"
    log_color = page.evaluate(
        "() => getComputedStyle(document.getElementById('agentsvc-widget').shadowRoot"
        ".querySelector('.log')).color"
    )
    assert log_color != "rgb(255, 0, 0)"
    assert (
        page.evaluate("() => getComputedStyle(document.getElementById('host-btn')).backgroundColor")
        == "rgb(0, 255, 0)"
    )
    assert (
        page.evaluate("() => getComputedStyle(document.getElementById('title')).color")
        == "rgb(255, 0, 0)"
    )

    # Text from the model is inserted as text, never as markup.
    page.get_by_role("textbox", name="Message").fill("What is your motto?")
    page.get_by_role("button", name="Send").click()
    answer = page.get_by_role("log").locator(".assistant[aria-busy=false]")
    expect(answer).to_contain_text("<img src=x onerror=alert(1)> <b>bold</b>")
    assert (
        page.evaluate(
            "() => document.getElementById('agentsvc-widget').shadowRoot"
            ".querySelectorAll('.log img, .log b').length"
        )
        == 0
    )


def test_errors_are_shown_with_retry(page, stack):
    agent_id = stack.new_agent("We sell bicycles and repair them too.")
    stack.embed({"agentId": agent_id})
    load(page, stack)
    failures = {"left": 1}

    def flaky(route):
        if failures["left"]:
            failures["left"] -= 1
            route.fulfill(
                status=429,
                content_type="application/json",
                headers={"Access-Control-Allow-Origin": "*", "Retry-After": "1"},
                body=json.dumps(
                    {"data": None, "error": {"code": "RATE_LIMITED", "message": "Slow down"}}
                ),
            )
        else:
            route.continue_()

    page.route("**/api/v1/chat", flaky)
    launcher(page).click()
    page.get_by_role("textbox", name="Message").fill("Do you repair bicycles?")
    page.get_by_role("button", name="Send").click()
    alert = page.get_by_role("alert")
    expect(alert).to_contain_text("Slow down")
    alert.get_by_role("button", name="Retry").click()
    expect(alert).to_have_count(0)
    expect(page.get_by_role("log").locator(".assistant")).to_contain_text("repair them")

    # An unknown agent: the service's message, plainly.
    page.unroute("**/api/v1/chat")
    stack.embed({"agentId": "agt_does_not_exist"})
    page.goto(stack.host_url + "/")
    page.wait_for_function("() => window.agentsvc && window.agentsvc.ready === true")
    launcher(page).click()
    page.get_by_role("textbox", name="Message").fill("hello?")
    page.get_by_role("button", name="Send").click()
    expect(page.get_by_role("alert")).to_contain_text("Agent not found")


def _tool(stack, agent_id, name, output, display):
    return stack.api(
        "POST",
        "/tools",
        {
            "agentId": agent_id,
            "name": name,
            "description": f"Shows {name}",
            "executionType": "mock",
            "inputSchema": {"type": "object", "properties": {}},
            "mockResponse": json.dumps(output),
            "displayConfig": display,
        },
    )


def test_tool_results_render_by_display_type(page, stack):
    agent_id = stack.new_agent("We sell lamps.")
    product = {"name": "Desk lamp", "cost": "€25", "pic": "https://example.com/lamp.png"}
    _tool(
        stack,
        agent_id,
        "show_product",
        product,
        {
            "type": "product_card",
            "fieldMappings": {"title": "name", "price": "cost", "image": "pic"},
            "options": {"showPrice": True, "showImage": True},
        },
    )
    _tool(
        stack,
        agent_id,
        "show_products",
        {"items": [product, {**product, "name": "Floor lamp"}]},
        {"type": "product_carousel", "fieldMappings": {"title": "name", "price": "cost"}},
    )
    _tool(
        stack,
        agent_id,
        "show_table",
        [{"size": "S", "watts": 5}, {"size": "L", "watts": 9}],
        {"type": "table"},
    )
    _tool(
        stack,
        agent_id,
        "show_buttons",
        [{"label": "Red", "value": "I want red"}, "Blue"],
        {"type": "buttons"},
    )
    _tool(stack, agent_id, "show_image", {"url": "https://example.com/a.png"}, {"type": "image"})
    _tool(stack, agent_id, "show_custom", {"x": [1, 2]}, {"type": "custom"})
    _tool(stack, agent_id, "show_text", "<i>plain</i>", {"type": "text"})
    stack.embed({"agentId": agent_id})
    load(page, stack)
    launcher(page).click()
    log = page.get_by_role("log")

    def call(name):
        before = log.locator(".tool").count()
        page.get_by_role("textbox", name="Message").fill(f"/tool {name} {{}}")
        page.get_by_role("button", name="Send").click()
        expect(log.locator(".tool")).to_have_count(before + 1)
        expect(page.get_by_role("button", name="Send")).to_be_enabled()
        return log.locator(".tool").last

    card = call("show_product")
    expect(card.locator(".card")).to_contain_text("Desk lamp")
    expect(card.locator(".card")).to_contain_text("€25")
    expect(card.get_by_role("img", name="Desk lamp")).to_have_attribute(
        "src", "https://example.com/lamp.png"
    )
    carousel = call("show_products")
    expect(carousel.locator(".card")).to_have_count(2)
    expect(carousel.locator(".card").nth(1)).to_contain_text("Floor lamp")
    table = call("show_table")
    expect(table.locator("th")).to_have_text(["size", "watts"])
    expect(table.locator("tbody tr")).to_have_count(2)
    image = call("show_image")
    expect(image.locator("img")).to_have_attribute("src", "https://example.com/a.png")
    custom = call("show_custom")
    assert json.loads(custom.locator("pre").inner_text()) == {"x": [1, 2]}
    text = call("show_text")
    expect(text).to_have_text("<i>plain</i>")
    buttons = call("show_buttons")
    expect(buttons.get_by_role("button")).to_have_text(["Red", "Blue"])
    buttons.get_by_role("button", name="Red").click()
    expect(log.locator(".user").last).to_have_text("I want red")


def _sign(secret: str, user_id: str) -> str:
    return hmac.new(secret.encode(), user_id.encode(), hashlib.sha256).hexdigest()


def test_identity_signing(page, stack):
    agent_id = stack.new_agent("Your account manager is Grace.")
    secret = stack.api("PUT", f"/agents/{agent_id}/identity-secret", {})["data"]["secret"]
    stack.embed(
        {
            "agentId": agent_id,
            "userId": "cust-7",
            "userEmail": "ada@example.com",
            "userName": "Ada",
            "userHash": _sign(secret, "cust-7"),
        }
    )
    load(page, stack)

    def ask() -> dict:
        page.evaluate("agentsvc.send('Who is my account manager?')")
        expect(page.get_by_role("log").locator(".assistant[aria-busy=false]")).to_have_count(1)
        conv_id = _stored(page, agent_id, "conversation")["conversationId"]
        return _conversation(stack, conv_id)

    signed = ask()
    assert signed["user"] == {
        "id": "cust-7",
        "email": "ada@example.com",
        "name": "Ada",
        "verified": False,  # the hash signs the id only
        "verifiedBy": "userHash",
    }

    # identify() as someone else with a wrong hash: a new conversation, kept anonymous.
    page.evaluate("agentsvc.identify({userId: 'cust-8', userHash: 'deadbeef'})")
    expect(page.get_by_role("log").locator(".msg")).to_have_count(0)
    forged = ask()
    assert forged["id"] != signed["id"]
    assert forged["user"] is None

    # identify() with a signed token: every field verified; its sub names a new visitor.
    token = jwt.encode(
        {"sub": "cust-9", "email": "grace@example.com", "name": "Grace", "exp": time.time() + 600},
        secret,
        algorithm="HS256",
    )
    page.evaluate(
        "(t) => agentsvc.identify({userId: null, userEmail: null, userHash: null, userToken: t})",
        token,
    )
    expect(page.get_by_role("log").locator(".msg")).to_have_count(0)
    tokened = ask()
    assert tokened["id"] != forged["id"]
    assert tokened["user"] == {
        "id": "cust-9",
        "email": "grace@example.com",
        "name": "Grace",
        "verified": True,
        "verifiedBy": "userToken",
    }

    # reset() forgets the user, the session and the conversation.
    old_session = _stored(page, agent_id, "session")
    page.evaluate("agentsvc.reset()")
    assert _stored(page, agent_id, "conversation") is None
    anonymous = ask()
    assert anonymous["user"] is None
    assert _stored(page, agent_id, "session") != old_session


def test_screenshot_of_open_widget(page, stack, tmp_path):
    agent_id = stack.new_agent("Hello from the lamp shop.")
    stack.embed({"agentId": agent_id})
    stack.host.body_html = "<main style='background:#fff;height:100vh'></main>"
    load(page, stack)
    launcher(page).click()
    dialog = page.get_by_role("dialog")
    expect(dialog).to_be_visible()
    path = tmp_path / "widget-open.png"
    page.screenshot(path=str(path))
    data = path.read_bytes()
    assert len(data) > 2000
    width, height, rows = read_png(data)
    assert (width, height) == (1200, 800)
    # The panel's header (the brand blue) and its white body are where the layout puts them.
    header = dialog.locator(".head").bounding_box()
    body = page.get_by_role("log").bounding_box()
    hx, hy = int(header["x"] + 8), int(header["y"] + header["height"] / 2)
    assert pixel(rows, hx, hy) == (36, 87, 214)
    bx, by = int(body["x"] + body["width"] / 2), int(body["y"] + body["height"] / 2)
    assert pixel(rows, bx, by) == (255, 255, 255)
    assert header["x"] + header["width"] <= width and body["y"] + body["height"] <= height
    colours = {pixel(rows, x, y) for y in range(0, height, 20) for x in range(0, width, 20)}
    assert len(colours) > 3


def test_works_under_a_strict_content_security_policy(page, stack):
    agent_id = stack.new_agent("We answer within a day.")
    csp = (
        "default-src 'none'; style-src 'self'; img-src https:; "
        f"script-src 'unsafe-inline' {stack.api_url}; connect-src {stack.api_url}"
    )
    stack.embed(
        {"agentId": agent_id},
        before=f'<meta http-equiv="Content-Security-Policy" content="{csp}">',
    )
    violations = []
    page.on(
        "console",
        lambda msg: violations.append(msg.text) if "Content Security" in msg.text else None,
    )
    load(page, stack)
    launcher(page).click()
    header_bg = page.evaluate(
        "() => getComputedStyle(document.getElementById('agentsvc-widget').shadowRoot"
        ".querySelector('.head')).backgroundColor"
    )
    assert header_bg == "rgb(36, 87, 214)"
    page.evaluate("agentsvc.send('How fast do you answer?')")
    expect(page.get_by_role("log").locator(".assistant")).to_contain_text("within a day")
    assert [v for v in violations if "style" in v] == []


def test_demo_page_embeds_a_working_widget(page, stack):
    agent_id = stack.new_agent("The demo agent says hello.")
    page.goto(f"{stack.api_url}/widget/demo?agentId={agent_id}")
    page.wait_for_function("() => window.agentsvc && window.agentsvc.ready === true")
    page.get_by_role("button", name="Open the chat from the page").click()
    expect(page.get_by_role("dialog")).to_be_visible()
    page.get_by_role("textbox", name="Message").fill("What does the demo agent say?")
    page.get_by_role("button", name="Send").click()
    expect(page.get_by_role("log").locator(".assistant")).to_contain_text("says hello")


def test_deleted_or_foreign_conversations_start_afresh(page, stack):
    agent_id = stack.new_agent("Parcels leave the warehouse every evening.")
    stack.embed({"agentId": agent_id, "userId": "u-1"})
    load(page, stack)
    page.evaluate("agentsvc.send('When do parcels leave?')")
    log = page.get_by_role("log")
    expect(log.locator(".assistant[aria-busy=false]")).to_have_count(1)
    first = _stored(page, agent_id, "conversation")["conversationId"]

    # The conversation was deleted on the service: the next message starts a new one.
    stack.api("DELETE", f"/conversations/{first}")
    page.evaluate("agentsvc.send('Every evening?')")
    expect(log.locator(".assistant[aria-busy=false]")).to_have_count(2)
    expect(page.get_by_role("alert")).to_have_count(0)
    second = _stored(page, agent_id, "conversation")["conversationId"]
    assert second != first
    assert [m["content"] for m in _conversation(stack, second)["messages"] if m["role"] == "user"][
        -1
    ] == "Every evening?"

    # The same browser without that user (signed out): the transcript is not shown.
    stack.embed({"agentId": agent_id})
    page.reload()
    page.wait_for_function("() => window.agentsvc && window.agentsvc.ready === true")
    launcher(page).click()
    expect(log.locator(".msg")).to_have_count(0)
    assert _stored(page, agent_id, "conversation") is None


def test_a_page_that_identifies_the_visitor_on_every_load_keeps_their_transcript(page, stack):
    """identify() queued by the embed stub before the script loads (as a site that knows its
    user calls it on every page) says who the visitor is before the stored transcript is
    checked against them: a reload keeps the conversation; another user does not get it."""
    agent_id = stack.new_agent("We open at nine in the morning.")
    who = "<script>agentsvc.identify({userId: %s, userName: 'Vera'});</script>"
    stack.embed({"agentId": agent_id}, after=who % "'cust-9'")
    load(page, stack)
    launcher(page).click()
    page.get_by_role("textbox", name="Message").fill("When do you open?")
    page.keyboard.press("Enter")
    log = page.get_by_role("log")
    expect(log.locator(".assistant[aria-busy=false]")).to_contain_text("We open at nine")
    conv_id = _stored(page, agent_id, "conversation")["conversationId"]

    page.reload()
    page.wait_for_function("() => window.agentsvc && window.agentsvc.ready === true")
    launcher(page).click()
    expect(log.locator(".user")).to_have_text("When do you open?")
    assert _stored(page, agent_id, "conversation")["conversationId"] == conv_id

    # The same browser, another signed-in user: a fresh start.
    stack.embed({"agentId": agent_id}, after=who % "'cust-10'")
    page.reload()
    page.wait_for_function("() => window.agentsvc && window.agentsvc.ready === true")
    launcher(page).click()
    expect(log.locator(".user")).to_have_count(0)
    assert _stored(page, agent_id, "conversation") is None
