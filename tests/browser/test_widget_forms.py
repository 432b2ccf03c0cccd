"""Forms in Chromium: every field type, validation, files, webhook delivery, client handlers."""

from __future__ import annotations

import base64

from playwright.sync_api import expect

from tests.support.widget_page import eventually, launcher, load, stats, trigger

PNG_1PX = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
)

EVERY_FIELD = {
    "title": "Book a demo",
    "submitLabel": "Book it",
    "successMessage": "Thanks, we will be in touch.",
    "fields": [
        {
            "name": "name",
            "label": "Your name",
            "type": "text",
            "validation": {
                "required": {"value": True, "message": "Tell us your name"},
                "minLength": {"value": 2},
            },
        },
        {
            "name": "email",
            "label": "E-mail",
            "type": "email",
            "validation": {"required": {"value": True}},
        },
        {"name": "phone", "label": "Phone", "type": "tel"},
        {
            "name": "seats",
            "label": "Seats",
            "type": "number",
            "validation": {
                "min": {"value": 1, "message": "At least one seat"},
                "max": {"value": 500},
            },
        },
        {"name": "notes", "label": "Notes", "type": "textarea"},
        {
            "name": "plan",
            "label": "Plan",
            "type": "select",
            "options": [{"label": "Starter", "value": "starter"}, {"label": "Pro", "value": "pro"}],
        },
        {
            "name": "topics",
            "label": "Topics",
            "type": "multiselect",
            "options": [
                {"label": "Billing", "value": "billing"},
                {"label": "API", "value": "api"},
                {"label": "Security", "value": 3},
            ],
        },
        {"name": "day", "label": "Day", "type": "date"},
        {"name": "slot", "label": "Slot", "type": "datetime"},
        {"name": "brief", "label": "Brief", "type": "file"},
        {"name": "logo", "label": "Logo", "type": "image"},
        {
            "name": "code",
            "label": "Code",
            "type": "text",
            "validation": {"pattern": {"value": "[A-Z]{3}", "message": "Three capitals"}},
        },
    ],
}


def _form_tool(stack, agent_id, name, schema, **extra):
    return stack.api(
        "POST",
        "/tools",
        {
            "agentId": agent_id,
            "name": name,
            "description": "Collects details",
            "executionType": "form",
            "inputSchema": {"type": "object", "properties": {}},
            "formSchema": schema,
            **extra,
        },
    )


def _submissions(stack, agent_id):
    return stack.api("GET", f"/form-submissions?agentId={agent_id}")["submissions"]


def test_every_field_type_validates_and_delivers_to_the_webhook(page, stack):
    agent_id = stack.new_agent()
    tool = _form_tool(
        stack,
        agent_id,
        "book_demo",
        EVERY_FIELD,
        formExecutionMode="webhook",
        formWebhookUrl=stack.receiver_url + "/hooks/demo",
    )
    stack.embed({"agentId": agent_id})
    load(page, stack)
    page.evaluate("agentsvc.showForm('book_demo')")
    form = page.get_by_role("form", name="Book a demo")
    expect(form).to_be_visible()
    submit = form.get_by_role("button", name="Book it")

    # Client-side validation matches the server's rules and names the problems in place.
    form.get_by_label("E-mail").fill("not-an-address")
    form.get_by_label("Seats").fill("0")
    form.get_by_label("Code").fill("abc")
    submit.click()
    expect(form.get_by_text("Tell us your name")).to_be_visible()
    expect(form.get_by_text("Must be an e-mail address")).to_be_visible()
    expect(form.get_by_text("At least one seat")).to_be_visible()
    expect(form.get_by_text("Three capitals")).to_be_visible()
    expect(form.get_by_label("Your name")).to_be_focused()
    expect(form.get_by_label("Your name")).to_have_attribute("aria-invalid", "true")
    assert _submissions(stack, agent_id) == []

    form.get_by_label("Your name").fill("Ada Lovelace")
    form.get_by_label("E-mail").fill("ada@example.com")
    form.get_by_label("Phone").fill("+44 20 7946 0000")
    form.get_by_label("Seats").fill("12")
    form.get_by_label("Notes").fill("Line one\nLine two")
    form.get_by_label("Plan").select_option(label="Pro")
    form.get_by_label("Topics").select_option(label=["API", "Security"])
    form.get_by_label("Day").fill("2026-12-01")
    form.get_by_label("Slot").fill("2026-12-01T10:30")
    form.get_by_label("Brief").set_input_files(
        {"name": "brief.txt", "mimeType": "text/plain", "buffer": b"hello brief"}
    )
    # An image field refuses other files, and every file is checked against 5 MB.
    form.get_by_label("Logo").set_input_files(
        {"name": "big.png", "mimeType": "image/png", "buffer": b"\0" * (5 * 1024 * 1024 + 1)}
    )
    form.get_by_label("Code").fill("ABC")
    submit.click()
    expect(form.get_by_text("The file is over 5 MB")).to_be_visible()
    form.get_by_label("Logo").set_input_files(
        {"name": "logo.txt", "mimeType": "text/plain", "buffer": b"x"}
    )
    submit.click()
    expect(form.get_by_text("Must be an image")).to_be_visible()
    form.get_by_label("Logo").set_input_files(
        {"name": "logo.png", "mimeType": "image/png", "buffer": PNG_1PX}
    )
    submit.click()
    expect(page.get_by_text("Thanks, we will be in touch.")).to_be_visible()

    hooks = eventually(lambda: stack.receiver.received)
    hook = next(h for h in hooks if h["path"] == "/hooks/demo")
    data = hook["body"]["formData"]
    assert hook["body"]["toolId"] == tool["id"]
    assert data["name"] == "Ada Lovelace"
    assert data["email"] == "ada@example.com"
    assert data["seats"] == 12
    assert data["notes"] == "Line one\nLine two"
    assert data["plan"] == "pro"
    assert data["topics"] == ["api", 3]
    assert data["day"] == "2026-12-01"
    assert data["slot"] == "2026-12-01T10:30"
    assert data["code"] == "ABC"
    # Files travel as data URLs with the name the widget sent, which the submission keeps.
    brief = base64.b64encode(b"hello brief").decode()
    assert data["brief"] == "data:text/plain;name=brief.txt;base64," + brief
    logo = base64.b64encode(PNG_1PX).decode()
    assert data["logo"] == "data:image/png;name=logo.png;base64," + logo
    assert "webhook-signature" in hook["headers"]
    sub = eventually(
        lambda: [s for s in _submissions(stack, agent_id) if s["status"] == "webhook_success"]
    )[0]
    assert set(sub["fieldsCompleted"]) == set(data)
    assert sub["formData"]["brief"] == {
        "fileName": "brief.txt",
        "contentType": "text/plain",
        "size": 11,
    }

    analytics = stack.api("GET", f"/form-submissions/analytics?agentId={agent_id}")["analytics"]
    entry = next(a for a in analytics if a["toolId"] == tool["id"])
    assert (entry["impressions"], entry["started"], entry["submitted"]) == (1, 1, 1)


def test_client_handler_runs_and_reports_its_outcome(page, stack):
    agent_id = stack.new_agent()
    schema = {
        "fields": [
            {
                "name": "email",
                "label": "E-mail",
                "type": "email",
                "validation": {"required": {"value": True}},
            }
        ],
        "submitLabel": "Join",
    }
    _form_tool(
        stack,
        agent_id,
        "newsletter",
        schema,
        formExecutionMode="client",
        formClientHandler="subscribe",
    )
    stack.embed(
        {"agentId": agent_id},
        after=(
            "<script>window.calls = [];"
            "agentsvc.registerFormHandler('subscribe', function (values, ctx) {"
            "  window.calls.push([values, ctx.toolName]);"
            "  if (values.email === 'bad@example.com') throw new Error('List is full');"
            "  return new Promise(function (r) {"
            "    r({success: true, message: 'Subscribed ' + values.email, data: {list: 'news'}});"
            "  });"
            "});</script>"
        ),
    )
    load(page, stack)
    page.evaluate("agentsvc.showForm('newsletter')")
    form = page.get_by_role("form").last
    form.get_by_label("E-mail").fill("ada@example.com")
    form.get_by_role("button", name="Join").click()
    expect(page.get_by_text("Subscribed ada@example.com")).to_be_visible()
    assert page.evaluate("window.calls") == [[{"email": "ada@example.com"}, "newsletter"]]
    ok = eventually(
        lambda: [s for s in _submissions(stack, agent_id) if s["status"] == "client_success"]
    )
    assert ok[0]["clientResult"]["data"] == {"list": "news"}

    page.evaluate("agentsvc.showForm('newsletter')")
    form = page.get_by_role("form").last
    form.get_by_label("E-mail").fill("bad@example.com")
    form.get_by_role("button", name="Join").click()
    expect(page.get_by_text("List is full")).to_be_visible()
    failed = eventually(
        lambda: [s for s in _submissions(stack, agent_id) if s["status"] == "client_failed"]
    )
    assert failed[0]["clientResult"]["message"] == "List is full"


def test_form_from_a_chat_tool_call_links_the_conversation(page, stack):
    agent_id = stack.new_agent()
    _form_tool(
        stack,
        agent_id,
        "callback",
        {
            "fields": [
                {
                    "name": "phone",
                    "label": "Phone",
                    "type": "tel",
                    "validation": {"required": {"value": True}},
                }
            ],
            "successMessage": "We will call you.",
        },
        formExecutionMode="webhook",
        formWebhookUrl=stack.receiver_url + "/hooks/callback",
    )
    stack.embed({"agentId": agent_id})
    load(page, stack)
    launcher(page).click()
    page.get_by_role("textbox", name="Message").fill("/tool callback {}")
    page.get_by_role("button", name="Send").click()
    form = page.get_by_role("log").get_by_role("form")
    form.get_by_label("Phone").fill("12")
    form.get_by_role("button", name="Submit").click()
    expect(form.get_by_text("Must be a telephone number")).to_be_visible()
    form.get_by_label("Phone").fill("+1 555 0100")
    form.get_by_role("button", name="Submit").click()
    expect(page.get_by_text("We will call you.")).to_be_visible()
    conv_id = page.evaluate(
        f"() => JSON.parse(localStorage.getItem('agentsvc:{agent_id}:conversation')).conversationId"
    )
    hook = eventually(
        lambda: [h for h in stack.receiver.received if h["path"] == "/hooks/callback"]
    )[0]
    assert hook["body"]["conversationId"] == conv_id
    assert hook["body"]["formData"] == {"phone": "+1 555 0100"}


def test_show_form_trigger_action_converts_on_submit(page, stack):
    agent_id = stack.new_agent()
    tool = _form_tool(
        stack,
        agent_id,
        "feedback",
        {"fields": [{"name": "score", "label": "Score", "type": "number"}]},
        formExecutionMode="webhook",
        formWebhookUrl=stack.receiver_url + "/hooks/feedback",
    )
    found = trigger(
        stack,
        agent_id,
        name="Ask feedback",
        triggerType="custom_event",
        conditions={"event": "checkout_done"},
        actionType="show_form",
        actionConfig={"toolId": tool["id"]},
    )
    stack.embed({"agentId": agent_id})
    load(page, stack)
    page.evaluate("agentsvc.track('checkout_done')")
    form = page.get_by_role("form")
    expect(form.get_by_label("Score")).to_be_visible()
    expect(page.get_by_role("dialog")).to_be_visible()

    def counts():
        entry = stats(stack, agent_id).get(found["id"]) or {}
        return entry.get("firedCount", 0), entry.get("convertedCount", 0)

    assert eventually(lambda: counts() == (1, 0))
    form.get_by_label("Score").fill("9")
    form.get_by_role("button", name="Submit").click()
    expect(page.get_by_text("Thank you!")).to_be_visible()
    assert eventually(lambda: counts() == (1, 1))
    # The submission carries the trigger that showed the form (the analytics' funnel).
    submission = stack.api("GET", f"/form-submissions?agentId={agent_id}")["submissions"][0]
    detail = stack.api("GET", f"/form-submissions/{submission['id']}")
    assert detail["id"] == submission["id"]
    figures = stack.api("GET", f"/agents/{agent_id}/analytics")["data"]
    assert figures["totals"]["triggerSubmissions"] == 1
    assert figures["triggers"][0]["triggerId"] == found["id"]


def test_both_mode_runs_webhook_and_handler(page, stack):
    agent_id = stack.new_agent()
    _form_tool(
        stack,
        agent_id,
        "quote",
        {"fields": [{"name": "size", "label": "Size", "type": "number"}]},
        formExecutionMode="both",
        formWebhookUrl=stack.receiver_url + "/hooks/quote",
        formClientHandler="showQuote",
    )
    stack.embed(
        {"agentId": agent_id},
        after=(
            "<script>agentsvc.registerFormHandler('showQuote', function (values) {"
            "  return {success: true, message: 'Quote: ' + values.size * 10 + ' EUR'};"
            "});</script>"
        ),
    )
    load(page, stack)
    page.evaluate("agentsvc.showForm('quote')")
    form = page.get_by_role("form")
    form.get_by_label("Size").fill("7")
    form.get_by_role("button", name="Submit").click()
    expect(page.get_by_text("Quote: 70 EUR")).to_be_visible()
    assert eventually(lambda: [h for h in stack.receiver.received if h["path"] == "/hooks/quote"])[
        0
    ]["body"]["formData"] == {"size": 7}
    assert eventually(
        lambda: [s for s in _submissions(stack, agent_id) if s["status"] == "success"]
    )


def test_the_interface_form_example_stores_what_the_visitor_sends(page, stack):
    """`type: "form"` + `formFieldsSchema`, no webhook, no handler: stored as `submitted`."""
    agent_id = stack.new_agent()
    tool = stack.api(
        "POST",
        "/tools",
        {
            "agentId": agent_id,
            "name": "callback",
            "description": "Ask for a call back",
            "type": "form",
            "formFieldsSchema": [{"name": "phone", "label": "Phone", "type": "tel"}],
        },
    )
    assert tool["formExecutionMode"] == "client" and tool["formClientHandler"] is None
    stack.embed({"agentId": agent_id})
    load(page, stack)
    page.evaluate("agentsvc.showForm('callback')")
    form = page.get_by_role("form").last
    form.get_by_label("Phone").fill("+44 20 7946 0000")
    form.get_by_role("button", name="Submit").click()
    expect(page.get_by_text("Thank you!")).to_be_visible()
    [sub] = eventually(lambda: _submissions(stack, agent_id))
    assert sub["status"] == "submitted" and sub["formData"] == {"phone": "+44 20 7946 0000"}
    assert sub["clientResult"] is None  # no handler ran, none was reported


def test_catastrophic_pattern_does_not_hang_the_page(page, stack):
    # `^(a+)+$` backtracks exponentially in the browser's RegExp: the widget leaves such a
    # pattern to the server (RE2, linear), which refuses the value and names the field.
    agent_id = stack.new_agent()
    _form_tool(
        stack,
        agent_id,
        "evil",
        {
            "title": "Evil",
            "fields": [
                {
                    "name": "word",
                    "label": "Word",
                    "type": "text",
                    "validation": {"pattern": {"value": "^(a+)+$", "message": "Only a's"}},
                },
                {
                    "name": "code",
                    "label": "Code",
                    "type": "text",
                    "validation": {"pattern": {"value": "[A-Z]{3}", "message": "Three capitals"}},
                },
            ],
        },
        formExecutionMode="webhook",
        formWebhookUrl=stack.receiver_url + "/hooks/evil",
    )
    stack.embed({"agentId": agent_id})
    load(page, stack)
    page.evaluate("agentsvc.showForm('evil')")
    form = page.get_by_role("form", name="Evil")
    form.get_by_label("Word").fill("a" * 5000 + "!")
    form.get_by_label("Code").fill("abc")
    form.get_by_role("button", name="Submit").click()
    # A simple pattern is still checked in the page.
    expect(form.get_by_text("Three capitals")).to_be_visible(timeout=5000)
    form.get_by_label("Code").fill("ABC")
    form.get_by_role("button", name="Submit").click()
    expect(form.get_by_text("formData.word: Only a's")).to_be_visible(timeout=5000)
    assert page.evaluate("1 + 1") == 2  # the page still runs scripts
    assert _submissions(stack, agent_id) == []
