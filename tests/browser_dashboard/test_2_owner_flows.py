"""The owner's main flows, from creating an agent to reading what visitors left behind."""

from __future__ import annotations

import csv
import io
import re
import urllib.error
from pathlib import Path

import pytest
from playwright.sync_api import expect

from agentsvc.api.widget import embed_snippet
from tests.support.dashboard_stack import (
    chat_as_key,
    create_api_key,
    ensure_owner,
    fill_headers,
    nav,
    public_post,
    sign_in,
    start_new_tool,
    wait_for,
)


def test_owner_creates_an_agent_tools_and_a_trigger_and_chats(tab, stack):
    ensure_owner(stack)
    page = tab.page
    sign_in(page, stack)

    # Agent.
    page.get_by_role("link", name="New agent").click()
    expect(page.get_by_text("Builtin answers offline, from the prompt")).to_be_visible()
    page.get_by_label("Name", exact=True).fill("Support bot")
    page.get_by_label("Temperature (0-100)").fill("30")
    page.get_by_label("System prompt").fill(
        "We ship worldwide within 3 days. Returns are free for 30 days."
    )
    page.get_by_role("button", name="Create agent").click()
    expect(page.get_by_role("heading", name="Support bot")).to_be_visible()
    expect(page.get_by_label("Temperature (0-100)")).to_have_value("30")
    # No provider is configured: the model is chosen from the builtin one alone.
    expect(page.get_by_label("Model", exact=True)).to_have_value("builtin")
    expect(page.get_by_label("Model", exact=True).locator("option")).to_have_count(1)
    expect(page.get_by_label("Language")).to_have_value("english")
    page.get_by_label("Language").select_option("german")
    page.get_by_role("button", name="Save changes").click()
    expect(page.locator(".toast").filter(has_text="Saved Support bot")).to_be_visible()
    page.reload()
    expect(page.get_by_label("Language")).to_have_value("german")
    page.get_by_label("Language").select_option("english")
    page.get_by_role("button", name="Save changes").click()
    expect(page.locator(".toast").filter(has_text="Saved Support bot").last).to_be_visible()

    # A mock tool: bad JSON is caught in the page, the API's own 400 is shown inline.
    nav(page, "Tools")
    expect(page.get_by_text("0 of unlimited tools on the pro plan")).to_be_visible()
    editor = start_new_tool(page, "order_status", "Look up the status of an order")
    # The tool input builder's JSON view, for advanced users, is checked as it is typed.
    editor.get_by_role("group", name="Tool input").get_by_role("button", name="JSON").click()
    schema = editor.get_by_label("Input schema (JSON Schema)")
    schema.fill('{"type": "object", "properties": {"orderId": ')
    expect(editor.locator("#input-schema-status")).to_contain_text("not valid JSON")
    editor.get_by_role("button", name="Create tool").click()
    expect(editor.get_by_role("alert")).to_contain_text("inputSchema: not valid JSON")
    schema.fill(
        '{"type": "object", "properties": {"orderId": {"type": "strin"}}, "required": ["orderId"]}'
    )
    editor.get_by_role("button", name="Create tool").click()
    expect(editor.get_by_role("alert")).to_contain_text("inputSchema.properties.orderId.type")
    schema.fill(
        '{"type": "object", "properties": {"orderId": {"type": "string", "minLength": "x"}}}'
    )
    editor.get_by_role("button", name="Create tool").click()
    expect(editor.get_by_role("alert")).to_contain_text("inputSchema")  # the API's message
    schema.fill(
        '{"type": "object", "properties": {"orderId": {"type": "string",'
        ' "description": "The order number"}}, "required": ["orderId"]}'
    )
    expect(editor.locator("#input-schema-status")).to_have_text("Looks valid.")
    editor.get_by_label("Response").fill("Order shipped on Monday")
    editor.get_by_role("button", name="Create tool").click()
    expect(page.get_by_role("heading", name="order_status")).to_be_visible()

    # Test run of the tool through the builtin model.
    run = page.get_by_role("form", name="Test run")
    run.get_by_label("Input (JSON)").fill('{"orderId": "A-17"}')
    run.get_by_role("button", name="Run tool").click()
    expect(run.locator(".test-output")).to_contain_text("Order shipped on Monday")

    # A duplicate name is the API's DUPLICATE_NAME, shown inline.
    nav(page, "Tools")
    editor = start_new_tool(page, "order_status", "Again")
    editor.get_by_role("button", name="Create tool").click()
    expect(editor.get_by_role("alert")).to_contain_text("already has a tool named")

    # A form tool delivering to a loopback webhook.
    editor.get_by_label("Name", exact=True).fill("contact_form")
    editor.get_by_label("Description").fill("Collect the visitor's contact details")
    editor.get_by_label("Type").select_option("form")
    expect(editor.get_by_label("Response")).to_be_hidden()  # only the chosen type's fields
    expect(editor.get_by_label("URL", exact=True)).to_be_hidden()
    editor.get_by_label("Webhook URL").fill(stack.receiver_url + "/hook")
    editor.get_by_role("button", name="Create tool").click()
    expect(page.get_by_role("heading", name="contact_form")).to_be_visible()
    expect(page.get_by_text("Webhook signing secret")).to_contain_text("whsec_")
    nav(page, "Tools")
    expect(page.get_by_role("link", name="contact_form")).to_be_visible()
    expect(page.get_by_text("2 of unlimited tools")).to_be_visible()

    # Triggers: from a template, a show_form trigger, toggled off and on.
    nav(page, "Triggers")
    page.locator(".template").filter(has_text="Pricing page help").get_by_role(
        "button", name="Use template"
    ).click()
    form = page.get_by_role("form", name="New trigger")
    expect(form.get_by_label("Page (glob)")).to_have_value("/pricing")
    form.get_by_role("button", name="Create trigger").click()
    expect(page.get_by_role("link", name="Pricing page help")).to_be_visible()

    page.get_by_role("link", name="New trigger").click()
    form = page.get_by_role("form", name="New trigger")
    form.get_by_label("Name", exact=True).fill("Leaving? Leave your e-mail")
    form.get_by_label("Trigger type").select_option("custom_event")
    form.get_by_label("Event name").fill("cart_updated")
    form.get_by_label("Event data match (JSON, optional)").fill('{"total": {"$regex": "9"}}')
    form.get_by_label("Action").select_option("show_form")
    expect(form.get_by_label("Form tool")).to_have_value(re.compile("^tool_"))
    form.get_by_role("button", name="Create trigger").click()
    expect(form.get_by_role("alert")).to_contain_text("$regex")  # the API's 400, inline
    form.get_by_label("Trigger type").select_option("scroll_depth")
    form.get_by_label("Scroll depth (%)").fill("150")
    form.get_by_role("button", name="Create trigger").click()  # the browser refuses 150
    assert form.get_by_label("Scroll depth (%)").evaluate("el => el.validity.rangeOverflow")
    form.get_by_label("Scroll depth (%)").fill("60")
    form.get_by_role("button", name="Create trigger").click()
    row = page.get_by_role("row").filter(has_text="Leaving? Leave your e-mail")
    expect(row).to_contain_text("Scroll depth at 60 %")
    toggle = row.get_by_role("button", name="Enabled: Leaving? Leave your e-mail")
    expect(toggle).to_have_text("On")
    toggle.click()
    expect(toggle).to_have_text("Off")
    expect(toggle).to_have_attribute("aria-pressed", "false")

    # Chat preview: a streamed answer from the prompt, then the form tool filled in.
    nav(page, "Chat preview")
    page.get_by_label("Message").fill("Do you ship worldwide?")
    page.get_by_role("button", name="Send").click()
    log = page.get_by_role("log", name="Transcript")
    expect(log.locator(".msg.assistant").last).to_contain_text("within 3 days")
    expect(log.locator(".msg.assistant").last).not_to_have_attribute("aria-busy", "true")
    log.get_by_role("button", name="Good answer").click()
    expect(log.get_by_role("button", name="Good answer")).to_have_attribute("aria-pressed", "true")
    page.get_by_label("Message").fill("/tool contact_form")
    page.get_by_role("button", name="Send").click()
    chat_form = page.get_by_role("form", name="Form contact_form")
    chat_form.get_by_label("E-mail").fill("visitor@example.org")
    chat_form.get_by_label("Message").fill("Call me back, please")
    chat_form.get_by_role("button", name="Send").click()
    expect(chat_form).to_contain_text("Thanks! We will be in touch.")
    expect(chat_form).to_contain_text("webhook delivered")
    sent = {"email": "visitor@example.org", "message": "Call me back, please"}
    assert wait_for(lambda: [r for r in stack.received if r["body"].get("formData") == sent]), [
        r["body"].get("formData") for r in stack.received
    ]


def test_owner_reads_conversations_submissions_and_analytics(tab, stack):
    ensure_owner(stack)
    page = tab.page
    sign_in(page, stack)
    key = create_api_key(page)
    agent_id = page.locator("#agent-picker").input_value()
    assert agent_id, "the previous test created an agent"

    # Conversations: the preview conversation is listed and readable.
    nav(page, "Conversations")
    page.get_by_label("Feedback filter").select_option("up")  # rated in the preview
    expect(page.get_by_role("row").filter(has_text="Do you ship")).to_contain_text("👍 1")
    page.get_by_label("Feedback filter").select_option("")
    link = page.get_by_role("link", name="Do you ship worldwide?")
    expect(link).to_be_visible()
    link.click()
    expect(page.get_by_role("log", name="Messages")).to_contain_text("within 3 days")

    # Rate the answer as an external client would; the feedback filter finds it.
    conversations = stack.api("GET", f"/conversations?agentId={agent_id}", key)["data"]
    preview = next(c for c in conversations if c["title"] == "Do you ship worldwide?")
    conv = stack.api("GET", f"/conversations/{preview['id']}", key)["data"]
    answer = next(m for m in conv["messages"] if m["role"] == "assistant")
    stack.api(
        "POST",
        f"/conversations/{conv['id']}/feedback",
        key,
        {"messageId": answer["id"], "rating": "down"},
    )
    nav(page, "Conversations")
    page.get_by_label("Feedback filter").select_option("up")
    expect(page.get_by_text("No conversation matches these filters.")).to_be_visible()
    page.get_by_label("Feedback filter").select_option("down")
    expect(page.get_by_role("link", name="Do you ship worldwide?")).to_be_visible()
    expect(page.get_by_role("row").filter(has_text="Do you ship")).to_contain_text("👎 1")
    page.get_by_role("link", name="Do you ship worldwide?").click()
    expect(page.get_by_label("Rated down")).to_be_visible()

    # CSV export, built in the page from the API's answers.
    nav(page, "Conversations")
    page.get_by_label("Feedback filter").select_option("")
    with page.expect_download() as download:
        page.get_by_role("button", name="Export CSV").click()
    rows = list(csv.DictReader(io.StringIO(Path(download.value.path()).read_text())))
    assert {r["content"] for r in rows} >= {"Do you ship worldwide?", "/tool contact_form"}
    assert any(r["rating"] == "down" for r in rows)
    assert download.value.suggested_filename == "conversations-support-bot.csv"

    # Pages by cursor: Next and Previous walk the list (more than one page of 20).
    total = len(stack.api("GET", f"/conversations?agentId={agent_id}&limit=100", key)["data"])
    for n in range(max(0, 21 - total)):
        chat_as_key(stack, key, agent_id, f"paging question {n}")
    total = stack.api("GET", f"/conversations?agentId={agent_id}", key)["pagination"]["total"]
    assert total >= 21
    nav(page, "Form submissions")  # away and back: the list is fetched again
    nav(page, "Conversations")
    pager = page.locator(".pager")
    expect(pager).to_contain_text(f"1–20 of {total}")
    pager.get_by_role("button", name="Next").click()
    expect(pager).to_contain_text(f"21–{total} of {total}")
    expect(pager.get_by_role("button", name="Next")).to_be_disabled()
    pager.get_by_role("button", name="Previous").click()
    expect(pager).to_contain_text(f"1–20 of {total}")
    expect(pager.get_by_role("button", name="Previous")).to_be_disabled()
    listed = stack.api("GET", f"/conversations?agentId={agent_id}&limit=100", key)["data"]
    for conversation in listed:
        if conversation["title"].startswith("paging question"):
            stack.api("DELETE", f"/conversations/{conversation['id']}", key)

    # Submissions: status filter, delivery log.
    nav(page, "Form submissions")
    expect(page.get_by_role("row").filter(has_text="contact_form")).to_contain_text("Delivered")
    page.get_by_label("Status filter").select_option("webhook_failed")
    expect(page.get_by_text("No submissions match.")).to_be_visible()
    page.get_by_label("Status filter").select_option("")
    page.get_by_role("row").filter(has_text="contact_form").get_by_role("link").click()
    expect(page.get_by_role("heading", name="Submission of contact_form")).to_be_visible()
    expect(page.get_by_role("cell", name="visitor@example.org", exact=True)).to_be_visible()
    delivery = page.locator(".delivery")
    expect(delivery).to_contain_text("Webhook")
    expect(delivery).to_contain_text(stack.receiver_url + "/hook")
    expect(delivery.get_by_role("cell", name="200", exact=True)).to_be_visible()

    # A delivery that failed every attempt is replayed from the dashboard.
    tools = stack.api("GET", f"/tools?agentId={agent_id}", key)
    form_tool = next(t for t in tools if t["name"] == "contact_form")
    stack.failing = True
    submitted = public_post(
        stack,
        "/form-submissions/submit",
        {
            "toolId": form_tool["id"],
            "formData": {"email": "late@example.org"},
            "fieldsCompleted": ["email"],
        },
    )

    def failed():
        sub = stack.api("GET", f"/form-submissions/{submitted['submissionId']}", key)
        return sub["status"] == "webhook_failed"

    assert wait_for(failed)
    nav(page, "Form submissions")
    page.get_by_label("Status filter").select_option("webhook_failed")
    row = page.get_by_role("row").filter(has_text="contact_form")
    expect(row).to_have_count(1)
    row.get_by_role("link").click()
    expect(page.get_by_text("503").first).to_be_visible()
    stack.failing = False
    page.get_by_role("button", name="Redeliver").click()
    expect(page.locator(".submission-status")).to_contain_text("Delivered")
    expect(page.get_by_role("button", name="Redeliver")).to_have_count(0)
    assert stack.received[-1]["body"]["formData"] == {"email": "late@example.org"}
    nav(page, "Form submissions")
    page.get_by_label("Status filter").select_option("")

    # Analytics: the funnel and the trigger chart are drawn as SVG.
    nav(page, "Analytics")
    funnel = page.get_by_role("img", name="Form funnel of Contact form")
    expect(funnel).to_be_visible()
    expect(funnel.locator("rect.bar")).to_have_count(5)
    bars = page.get_by_role("img", name="Trigger fired and converted counts")
    expect(bars).to_be_visible()
    expect(bars.locator("rect.bar")).to_have_count(2 * 2 + 2)  # two triggers x two series + legend
    expect(
        page.locator(".chart-card").get_by_role("cell", name="Pricing page help", exact=True)
    ).to_be_visible()

    # Trigger stats move with the widget's events.
    triggers = stack.api("GET", f"/triggers?agentId={agent_id}", key)
    pricing = next(t for t in triggers if t["name"] == "Pricing page help")
    for event in ("fired", "fired", "converted"):
        public_post(
            stack,
            "/triggers/event",
            {
                "agentId": agent_id,
                "triggerId": pricing["id"],
                "triggerName": pricing["name"],
                "triggerType": pricing["triggerType"],
                "actionType": pricing["actionType"],
                "eventType": event,
                "sessionId": "s1",
            },
        )

    def counted():
        stats = stack.api("GET", f"/triggers/stats?agentId={agent_id}", key)
        return stats.get(pricing["id"], {}).get("firedCount") == 2

    assert wait_for(counted)
    nav(page, "Triggers")
    row = page.get_by_role("row").filter(has_text="Pricing page help")
    expect(row.get_by_role("cell").nth(4)).to_have_text("2")
    expect(row.get_by_role("cell").nth(5)).to_have_text("1")


def test_owner_manages_secrets_keys_and_the_widget(tab, stack):
    ensure_owner(stack)
    page = tab.page
    sign_in(page, stack)

    nav(page, "Secrets")
    form = page.get_by_role("form", name="Set a secret")
    form.get_by_label("Name").fill("CRM_TOKEN")
    form.get_by_label("Value").fill("s3cr3t-value")
    form.get_by_role("button", name="Save secret").click()
    expect(page.get_by_role("cell", name="CRM_TOKEN", exact=True)).to_be_visible()
    expect(page.locator("main")).not_to_contain_text("s3cr3t-value")

    # An http tool using the secret: the test run reaches the receiver with its value.
    nav(page, "Tools")
    editor = start_new_tool(page, "create_lead", "Create a lead in the CRM")
    editor.get_by_role("group", name="Tool input").get_by_role("button", name="JSON").click()
    editor.get_by_label("Input schema (JSON Schema)").fill(
        '{"type": "object", "properties": {"email": {"type": "string"}}, "required": ["email"]}'
    )
    editor.get_by_label("Type").select_option("http")
    editor.get_by_label("URL", exact=True).fill(stack.receiver_url + "/leads/{email}")
    editor.get_by_label("Method").select_option("POST")
    fill_headers(editor, "Headers", {"Authorization": "Bearer {{CRM_TOKEN}}"})
    editor.get_by_role("button", name="Create tool").click()
    expect(page.get_by_role("heading", name="create_lead")).to_be_visible()
    run = page.get_by_role("form", name="Test run")
    run.get_by_label("Input (JSON)").fill('{"email": "a b@example.org"}')
    run.get_by_role("button", name="Run tool").click()
    expect(run.locator(".test-output")).to_contain_text('"ok": true')
    lead = stack.received[-1]
    assert lead["path"] == "/leads/a b@example.org"
    assert lead["headers"]["Authorization"] == "Bearer s3cr3t-value"

    # API keys: shown once, then only masked; revoking stops it at once.
    key = create_api_key(page)
    assert stack.api("GET", "/secrets", key)[0]["name"] == "CRM_TOKEN"
    page.get_by_role("button", name="Done").click()
    expect(page.locator("#new-api-key")).to_have_count(0)
    expect(page.locator("main")).not_to_contain_text(key)
    masked = f"{key[:9]}…{key[-4:]}"
    row = page.get_by_role("row").filter(has_text=masked)
    row.get_by_role("button", name=re.compile("^Revoke")).click()
    page.get_by_role("dialog").get_by_role("button", name="Revoke key").click()
    expect(page.get_by_role("row").filter(has_text=masked)).to_have_count(0)
    with pytest.raises(urllib.error.HTTPError) as refused:
        stack.api("GET", "/secrets", key)
    assert refused.value.code == 401

    # Widget: the snippet names the agent and the instance; copy; live preview.
    nav(page, "Widget")
    agent_id = page.locator("#agent-picker").input_value()
    snippet = page.locator("#embed-snippet")
    # The very snippet the README and the demo page document.
    expect(snippet).to_have_text(embed_snippet({"agentId": agent_id}, f"{stack.url}/widget.js"))
    page.get_by_role("button", name="Copy snippet").click()
    expect(page.locator(".toast").filter(has_text="copied")).to_be_visible()
    assert page.evaluate("navigator.clipboard.readText()") == snippet.inner_text()
    frame = page.frame_locator("iframe[title='Widget preview']")
    expect(frame.get_by_role("button", name="Open chat")).to_be_visible()


def test_knowledge_documents_feed_the_agent(tab, stack):
    ensure_owner(stack)
    page = tab.page
    sign_in(page, stack)
    nav(page, "Knowledge")
    text = page.get_by_role("form", name="Add text")
    text.get_by_label("Title").fill("Warranty")
    text.get_by_label("Content").fill(
        "Every kettle carries a two year warranty covering the heater."
    )
    text.get_by_role("button", name="Add text").click()
    docs = page.get_by_role("table", name="Documents")
    expect(docs.get_by_role("row").filter(has_text="Warranty")).to_contain_text("Ready")

    upload = page.get_by_role("form", name="Upload a file")
    upload.get_by_label("File").set_input_files(
        {"name": "care.md", "mimeType": "text/markdown", "buffer": b"# Care\n\nDescale monthly."}
    )
    upload.get_by_role("button", name="Upload").click()
    expect(docs.get_by_role("row").filter(has_text="care.md")).to_contain_text("Markdown")
    upload.get_by_label("File").set_input_files(
        {"name": "photo.png", "mimeType": "image/png", "buffer": b"\x89PNG\r\n"}
    )
    upload.get_by_role("button", name="Upload").click()
    expect(upload.get_by_role("alert")).to_be_visible()  # the API's refusal, inline

    docs.get_by_role("link", name="Warranty").click()
    expect(page.locator(".document-text")).to_have_text(
        "Every kettle carries a two year warranty covering the heater."
    )
    nav(page, "Chat preview")
    page.get_by_label("Message").fill("What warranty does the kettle carry?")
    page.get_by_role("button", name="Send").click()
    answer = page.get_by_role("log", name="Transcript").locator(".msg.assistant").last
    expect(answer).to_contain_text("two year warranty")


def test_owner_edits_and_deletes(tab, stack):
    ensure_owner(stack)
    page = tab.page
    sign_in(page, stack)

    # Edit a tool (PUT) and a trigger (PUT).
    nav(page, "Tools")
    page.get_by_role("link", name="order_status").click()
    editor = page.get_by_role("form", name="Edit tool")
    editor.get_by_label("Description").fill("Look up where an order is")
    editor.get_by_label("Enabled").uncheck()
    editor.get_by_role("button", name="Save tool").click()
    expect(page.locator(".toast").filter(has_text="Tool saved")).to_be_visible()
    nav(page, "Tools")
    row = page.get_by_role("row").filter(has_text="order_status")
    expect(row).to_contain_text("Look up where an order is")
    expect(row.get_by_role("cell").nth(2)).to_have_text("No")

    nav(page, "Triggers")
    page.get_by_role("link", name="Pricing page help").click()
    form = page.get_by_role("form", name="Edit trigger")
    form.get_by_label("Priority").fill("5")
    form.get_by_label("Pre-filled message (optional)").fill("Questions about plans?")
    form.get_by_role("button", name="Save trigger").click()
    row = page.get_by_role("row").filter(has_text="Pricing page help")
    expect(row.get_by_role("cell").nth(3)).to_have_text("5")

    # Delete a trigger, a tool and a conversation, each after a confirmation.
    page.get_by_role("link", name="Leaving? Leave your e-mail").click()
    page.get_by_role("button", name="Delete trigger").click()
    page.get_by_role("dialog").get_by_role("button", name="Cancel").click()
    expect(page.get_by_role("heading", name="Leaving? Leave your e-mail")).to_be_visible()
    page.get_by_role("button", name="Delete trigger").click()
    page.get_by_role("dialog").get_by_role("button", name="Delete trigger").click()
    expect(page.get_by_role("link", name="Pricing page help")).to_be_visible()
    expect(page.get_by_role("link", name="Leaving? Leave your e-mail")).to_have_count(0)

    nav(page, "Tools")
    page.get_by_role("link", name="create_lead").click()
    page.get_by_role("button", name="Delete tool").click()
    page.get_by_role("dialog").get_by_role("button", name="Delete tool").click()
    expect(page.get_by_role("link", name="order_status")).to_be_visible()
    expect(page.get_by_role("link", name="create_lead")).to_have_count(0)

    nav(page, "Conversations")
    page.get_by_role("link", name=re.compile(r"^\/tool order_status")).click()
    page.get_by_role("button", name="Delete conversation").click()
    page.get_by_role("dialog").get_by_role("button", name="Delete").click()
    expect(page.get_by_role("link", name="Do you ship worldwide?")).to_be_visible()
    expect(page.get_by_role("link", name=re.compile(r"^\/tool order_status"))).to_have_count(0)

    # Create and delete an agent; the picker follows.
    nav(page, "Agents")
    page.get_by_role("link", name="New agent").click()
    page.get_by_label("Name", exact=True).fill("Temporary")
    page.get_by_role("button", name="Create agent").click()
    expect(page.locator("#agent-picker")).to_contain_text("Temporary")
    page.get_by_role("button", name="Delete agent").click()
    page.get_by_role("dialog").get_by_role("button", name="Delete agent").click()
    expect(page.get_by_role("heading", name="Agents", exact=True)).to_be_visible()
    expect(page.get_by_role("link", name="Temporary")).to_have_count(0)
    expect(page.locator("#agent-picker")).not_to_contain_text("Temporary")
