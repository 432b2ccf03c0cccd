"""The tool editor's builders: a form built field by field (reordered by keyboard and by
drag, with validation and options), previewed by the widget's own renderer, saved as the
JSON the API stores and submitted in the real widget; tool input parameters and result
display; a post action; JSON made by the API kept as it is; the JSON view checked live."""

from __future__ import annotations

import json

from playwright.sync_api import Page, expect

from tests.support.axe import serious_violations
from tests.support.dashboard_stack import (
    Tab,
    api_status,
    ensure_owner,
    in_owners_team,
    nav,
    owner_key,
    sign_in,
    start_new_tool,
    wait_for,
)


def _tools_of(page: Page, agent_id: str) -> None:
    """Act in the owner's team, on this agent's Tools page."""
    in_owners_team(page)
    page.get_by_label("Agent", exact=True).select_option(agent_id)
    nav(page, "Tools")


def _field(row, label: str):
    return row.get_by_label(label, exact=True)


EXPECTED_FORM = {
    "fields": [
        {
            "name": "company",
            "label": "Company",
            "type": "text",
            "validation": {"minLength": {"value": 2}, "pattern": {"value": "[A-Za-z ]+"}},
        },
        {
            "name": "email",
            "label": "E-mail",
            "type": "email",
            "validation": {"required": {"value": True, "message": "Your e-mail, please"}},
        },
        {"name": "message", "label": "Message", "type": "textarea"},
        {
            "name": "quantity",
            "label": "Quantity",
            "type": "number",
            "validation": {"required": {"value": True}, "min": {"value": 1}, "max": {"value": 99}},
        },
        {
            "name": "size",
            "label": "Size",
            "type": "select",
            "options": [{"label": "Small", "value": "s"}, {"label": "Large", "value": "Large"}],
        },
    ],
    "submitLabel": "Send",
    "successMessage": "Thanks! We will be in touch.",
}


def test_owner_builds_a_form_that_a_visitor_submits_in_the_widget(browser, stack, shots):
    ensure_owner(stack)
    key = owner_key(stack)
    agent = stack.api("POST", "/agents", key, {"name": "Quote desk"})["data"]
    tab = Tab(browser, stack)
    try:
        page = tab.page
        sign_in(page, stack)
        _tools_of(page, agent["id"])
        editor = start_new_tool(page, "quote_request", "Ask the visitor what to quote", "form")
        builder = editor.get_by_role("group", name="Form fields", exact=True)
        rows = builder.locator("fieldset.sortable")
        expect(rows).to_have_count(2)  # the example form: e-mail and message

        # Three more fields of three kinds, with validation and options.
        builder.get_by_role("button", name="Add field").click()
        company = rows.nth(2)
        expect(_field(company, "Label")).to_be_focused()
        _field(company, "Label").fill("Company")
        _field(company, "Field name").fill("2company")
        # The API's own rule, shown in the row before saving.
        expect(company.locator(".row-problems")).to_contain_text(
            "name: must be letters, digits and _ (starting with a letter or _)"
        )
        _field(company, "Field name").fill("company")
        expect(company.locator(".row-problems")).to_be_empty()
        _field(company, "Fewest characters").fill("2")
        company.get_by_label("Pattern").fill("(?=x)[A-Z]+")
        expect(company.locator(".row-problems")).to_contain_text(
            "pattern.value: is not a pattern the service can run"
        )
        company.get_by_label("Pattern").fill("[A-Za-z ]+")
        expect(company.locator(".row-problems")).to_be_empty()

        builder.get_by_role("button", name="Add field").click()
        size = rows.nth(3)
        _field(size, "Label").fill("Size")
        _field(size, "Field name").fill("size")
        _field(size, "Kind").select_option("select")
        options = size.get_by_role("group", name="Options")
        options.get_by_label("Option 1 label").fill("Small")
        options.get_by_label("Option 1 value").fill("s")
        options.get_by_role("button", name="Add option").click()
        options.get_by_label("Option 2 label").fill("Large")  # the value follows the label
        expect(options.get_by_label("Option 2 value")).to_have_value("Large")

        builder.get_by_role("button", name="Add field").click()
        quantity = rows.nth(4)
        _field(quantity, "Label").fill("Quantity")
        _field(quantity, "Field name").fill("quantity")
        _field(quantity, "Kind").select_option("number")
        _field(quantity, "Required").check()
        _field(quantity, "Smallest number").fill("1")
        _field(quantity, "Largest number").fill("99")

        # Reorder: Quantity up one place by keyboard, Company to the top by drag.
        _field(rows.nth(4), "Label").press("Alt+ArrowUp")
        expect(_field(rows.nth(3), "Label")).to_have_value("Quantity")
        expect(_field(rows.nth(3), "Label")).to_be_focused()
        expect(_field(rows.nth(4), "Label")).to_have_value("Size")
        # A real mouse drag by the handle, with both rows in view (no scrolling mid-drag).
        page.set_viewport_size({"width": 1280, "height": 2400})
        rows.nth(0).evaluate("row => row.scrollIntoView({block: 'start'})")
        rows.nth(2).locator("[data-part=handle]").drag_to(rows.nth(0))
        labels = [_field(rows.nth(i), "Label").input_value() for i in range(5)]
        assert labels == ["Company", "E-mail", "Message", "Quantity", "Size"]
        # And back and forth with the buttons.
        rows.nth(1).get_by_role("button", name="Move field 2 down").click()
        rows.nth(2).get_by_role("button", name="Move field 3 up").click()
        expect(_field(rows.nth(1), "Label")).to_have_value("E-mail")

        # The live preview is the widget's own form, with its own checks: once it has drawn
        # the last change (it redraws 200 ms after one, which replaced a form already
        # clicked on a loaded CI machine).
        busy = page.locator(".form-preview")
        expect(busy).not_to_have_attribute("aria-busy", "true", timeout=15_000)
        frame = page.frame_locator("iframe[title='Form preview']")
        preview = frame.locator("form.form")
        expect(preview.locator(":scope > label")).to_have_count(5, timeout=15_000)
        expect(preview.locator(":scope > label").first).to_contain_text("Company")
        expect(preview.get_by_label("Size")).to_be_visible()
        preview.get_by_role("button", name="Send").click()
        expect(preview.get_by_text("Your e-mail, please")).to_be_visible()

        # Delivery: stored only; after each submission, a webhook with a header.
        editor.get_by_label("Delivery").select_option("client")
        actions = editor.get_by_role("group", name="After each submission", exact=True)
        actions.get_by_role("button", name="Add action").click()
        actions.get_by_label("Address").fill(stack.receiver_url + "/after-form")
        actions.get_by_label("Headers").fill("X-Shop: garden")
        expect(editor.locator("#post-actions-status")).to_have_text("Looks valid.")
        assert serious_violations(page, 'form[aria-label="New tool"]') == []
        page.screenshot(path=str(shots / "form-builder.png"), full_page=True)
        editor.get_by_role("button", name="Create tool").click()
        expect(page.get_by_role("heading", name="quote_request")).to_be_visible()

        stored = stack.api("GET", f"/tools?agentId={agent['id']}", key)[0]
        assert stored["formSchema"] == EXPECTED_FORM
        assert stored["formPostActions"] == [
            {
                "type": "webhook",
                "url": stack.receiver_url + "/after-form",
                "headers": {"X-Shop": "garden"},
            }
        ]
        assert stored["formExecutionMode"] == "client"

        # A visitor fills the form in the real widget; the submission is stored.
        page.goto(f"{stack.url}/widget/demo?agentId={agent['id']}")
        page.wait_for_function("window.agentsvc && window.agentsvc.ready")
        page.evaluate("agentsvc.showForm('quote_request')")
        form = page.locator("#agentsvc-widget form.form")
        expect(form.locator(":scope > label").first).to_contain_text("Company")
        form.get_by_label("Company").fill("Garden Co")
        form.get_by_label("E-mail").fill("ada@example.com")
        form.get_by_label("Quantity").fill("3")
        form.get_by_label("Size").select_option(label="Large")
        form.get_by_role("button", name="Send").click()
        expect(page.get_by_text("Thanks! We will be in touch.")).to_be_visible()

        def submissions():
            return stack.api("GET", f"/form-submissions?agentId={agent['id']}", key)["submissions"]

        subs = wait_for(submissions)
        assert subs[0]["formData"] == {
            "company": "Garden Co",
            "email": "ada@example.com",
            "quantity": 3,
            "size": "Large",
        }
        hook = wait_for(lambda: [r for r in stack.received if r["path"] == "/after-form"])
        assert hook[0]["headers"]["X-Shop"] == "garden"
    finally:
        tab.close()


def _member_id(stack, key: str) -> str:
    members = stack.api("GET", "/team/members", key)
    members = members["data"] if isinstance(members, dict) else members
    return members[0]["id"]


def test_a_tool_made_by_the_api_is_saved_unchanged_and_bad_json_is_refused(browser, stack):
    ensure_owner(stack)
    key = owner_key(stack)
    agent = stack.api("POST", "/agents", key, {"name": "API made"})["data"]
    made = {
        "agentId": agent["id"],
        "name": "call_back",
        "description": "Offer a call back",
        "executionType": "form",
        "inputSchema": {
            "type": "object",
            "properties": {
                "when": {"type": "string", "format": "date", "x-note": "kept", "description": "D"},
                "either": {"type": ["integer", "null"], "minimum": 0},
            },
            "required": ["when"],
            "additionalProperties": False,
            "x-origin": "api",
        },
        "formSchema": {
            "title": "Call back",
            "description": "We call you back",
            "fields": [
                {
                    "name": "phone",
                    "label": "Phone",
                    "type": "tel",
                    "description": "With the country code",
                    "placeholder": "+44",
                    "validation": {
                        "required": {"value": True, "message": "We need a number"},
                        "pattern": {"value": "[+0-9 ]+", "message": "Digits only"},
                    },
                },
                {
                    "name": "topics",
                    "label": "Topics",
                    "type": "multiselect",
                    "options": [{"label": "One", "value": 1}, {"label": "Two", "value": "two"}],
                },
            ],
            "submitLabel": "Call me",
        },
        "formExecutionMode": "both",
        "formWebhookUrl": stack.receiver_url + "/cb",
        "formClientHandler": "callback",
        "formPostActions": [
            {"type": "team_chat", "webhookUrl": stack.receiver_url + "/chat", "message": "{{x}}"},
            {"type": "email", "recipientIds": [_member_id(stack, key)], "subject": "Call back"},
            {"type": "webhook", "webhookUrl": stack.receiver_url + "/w", "payload": {"p": [1, {}]}},
        ],
        "displayConfig": {
            "type": "product_card",
            "fieldMappings": {"title": "name", "sku": "id"},
            "options": {"showPrice": False, "compact": True},
        },
    }
    tool = stack.api("POST", "/tools", key, made)
    tool = tool.get("data", tool)
    tab = Tab(browser, stack)
    try:
        page = tab.page
        sign_in(page, stack)
        _tools_of(page, agent["id"])
        page.get_by_role("link", name="call_back").click()
        editor = page.get_by_role("form", name="Edit tool")
        builder = editor.get_by_role("group", name="Form fields", exact=True)
        expect(_field(builder.locator("fieldset.sortable").nth(0), "Help text")).to_have_value(
            "With the country code"
        )
        params = editor.get_by_role("group", name="Tool input: the parameters the model fills")
        expect(params.get_by_label("Parameter name").nth(1)).to_have_value("either")
        recipients = editor.get_by_role("group", name="Recipients")
        expect(recipients.get_by_role("checkbox").first).to_be_checked()

        # Builder -> JSON -> builder keeps the data, keys the builder does not show included.
        builder.get_by_role("button", name="JSON", exact=True).click()
        area = builder.get_by_label("Form schema (JSON)")
        assert json.loads(area.input_value()) == made["formSchema"]
        # The JSON view refuses what does not parse, in words, as it is typed.
        area.fill('{"fields": [')
        expect(editor.locator("#form-schema-status")).to_contain_text("formSchema: not valid JSON")
        builder.get_by_role("button", name="Builder", exact=True).click()
        status = editor.locator("#form-schema-status")
        expect(status).to_contain_text("The builder needs valid JSON")
        editor.get_by_role("button", name="Save tool").click()
        expect(editor.get_by_role("alert")).to_contain_text("formSchema: not valid JSON")
        area.fill(json.dumps({"fields": [{"name": "x", "label": "X", "type": "colour"}]}))
        expect(editor.locator("#form-schema-status")).to_contain_text(
            "formSchema.fields.0.type: must be one of text, email"
        )
        area.fill(json.dumps(made["formSchema"]))
        expect(editor.locator("#form-schema-status")).to_have_text("Looks valid.")
        builder.get_by_role("button", name="Builder", exact=True).click()
        expect(area).to_be_hidden()
        params.get_by_role("button", name="JSON", exact=True).click()
        params_json = json.loads(params.get_by_label("Input schema (JSON Schema)").input_value())
        assert params_json == made["inputSchema"]
        params.get_by_role("button", name="Builder", exact=True).click()

        editor.get_by_role("button", name="Save tool").click()
        expect(page.locator(".toast").filter(has_text="Tool saved")).to_be_visible()
        saved = stack.api("GET", f"/tools/{tool['id']}", key)
        saved = saved.get("data", saved)
        for name in made:
            if name != "agentId":
                assert saved[name] == made[name], name
    finally:
        tab.close()


def test_tool_input_and_result_display_are_built_and_reopen(browser, stack):
    ensure_owner(stack)
    key = owner_key(stack)
    agent = stack.api("POST", "/agents", key, {"name": "Size helper"})["data"]
    tab = Tab(browser, stack)
    try:
        page = tab.page
        sign_in(page, stack)
        _tools_of(page, agent["id"])
        editor = start_new_tool(page, "size_lookup", "Find a size")
        params = editor.get_by_role("group", name="Tool input: the parameters the model fills")
        rows = params.locator("fieldset.sortable")
        params.get_by_role("button", name="Add parameter").click()
        _field(rows.nth(0), "Parameter name").fill("size")
        _field(rows.nth(0), "What it is for").fill("The size")
        _field(rows.nth(0), "Required").check()
        _field(rows.nth(0), "Allowed values").fill("small, medium, large")
        _field(rows.nth(0), "Default value").fill("medium")
        params.get_by_role("button", name="Add parameter").click()
        _field(rows.nth(1), "Parameter name").fill("count")
        _field(rows.nth(1), "Kind of value").select_option("integer")
        _field(rows.nth(1), "Allowed values").fill("1, 2, 3")
        _field(rows.nth(1), "Default value").fill("2")
        # A name used twice is refused before saving.
        _field(rows.nth(1), "Parameter name").fill("size")
        expect(editor.locator("#input-schema-status")).to_contain_text('"size" is used twice')
        _field(rows.nth(1), "Parameter name").fill("count")
        expect(editor.locator("#input-schema-status")).to_have_text("Looks valid.")
        display = editor.get_by_role("group", name="Result display", exact=True)
        display.get_by_label("Shown as").select_option("product_card")
        display.get_by_label("Title: result field").fill("name")
        display.get_by_label("Show the price").uncheck()
        editor.get_by_label("Response").fill('{"name": "M"}')
        editor.get_by_role("button", name="Create tool").click()
        expect(page.get_by_role("heading", name="size_lookup")).to_be_visible()

        schema = {
            "type": "object",
            "properties": {
                "size": {
                    "type": "string",
                    "description": "The size",
                    "enum": ["small", "medium", "large"],
                    "default": "medium",
                },
                "count": {"type": "integer", "enum": [1, 2, 3], "default": 2},
            },
            "required": ["size"],
        }
        stored = stack.api("GET", f"/tools?agentId={agent['id']}", key)[0]
        assert stored["inputSchema"] == schema
        assert stored["displayConfig"] == {
            "type": "product_card",
            "fieldMappings": {"title": "name"},
            "options": {"showPrice": False},
        }
        # Reopened: the builder shows it, its JSON view is what was stored.
        editor = page.get_by_role("form", name="Edit tool")
        params = editor.get_by_role("group", name="Tool input: the parameters the model fills")
        expect(params.get_by_label("Allowed values").first).to_have_value("small, medium, large")
        params.get_by_role("button", name="JSON", exact=True).click()
        assert json.loads(params.get_by_label("Input schema (JSON Schema)").input_value()) == schema
    finally:
        tab.close()


FIELD = {"name": "a", "label": "A", "type": "text"}
FORMS = [
    {"fields": [FIELD], "submitLabel": "Go", "title": "T", "description": "D"},
    {"fields": [FIELD], "colour": "red"},
    {"fields": [{**FIELD, "hint": "x"}]},
    {"fields": [{**FIELD, "name": "2a"}]},
    {"fields": [{**FIELD, "label": " "}]},
    {"fields": [{**FIELD, "options": [{"label": "A", "value": "a"}]}]},
    {"fields": [{**FIELD, "type": "select", "options": [{"label": "A", "value": "a"}] * 2}]},
    {"fields": [{**FIELD, "type": "select", "options": [{"label": "A", "value": True}]}]},
    {"fields": [{**FIELD, "type": "select", "options": [{"label": "A", "value": 1, "x": 1}]}]},
    {"fields": [{**FIELD, "validation": {"minLength": 2, "pattern": {"value": "[a-z]+"}}}]},
    {"fields": [{**FIELD, "validation": {"minLength": {"value": "2"}}}]},
    {"fields": [{**FIELD, "validation": {"min": {"value": 1.5, "message": "More"}}}]},
    {"fields": [{**FIELD, "validation": {"required": {"value": 1}}}]},
    {"fields": [{**FIELD, "validation": {"size": {"value": 1}}}]},
    {"fields": [{**FIELD, "validation": {"pattern": {"value": "(?=a)b"}}}]},
    {"fields": [{**FIELD, "validation": {"pattern": {"value": "(a)\\1"}}}]},
    {"fields": [{**FIELD, "validation": {"pattern": {"value": "[a-"}}}]},
    {"fields": [{**FIELD, "validation": {"pattern": {"value": "(?i)(?P<w>[a-z]+)\\-\\d"}}}]},
    {"fields": [{**FIELD, "validation": {"required": {"value": True, "text": "x"}}}]},
]
ACTIONS = [
    [{"type": "webhook", "url": "https://example.com/h", "headers": {"X": "1"}, "payload": {}}],
    [{"type": "webhook", "url": "ftp://example.com/h"}],
    [{"type": "webhook", "url": "https://example.com/h", "payload": []}],
    [{"type": "team_chat", "webhookUrl": "https://example.com/c", "message": "Hi {{a}}"}],
    [{"type": "team_chat", "webhookUrl": "https://example.com/c", "messageTemplate": " "}],
    [{"type": "email", "recipientIds": []}],
    [{"type": "email", "recipientIds": ["user_x"], "subject": "S", "cc": "x"}],
    [{"type": "sms"}],
]
DISPLAYS = [
    {"type": "product_card", "fieldMappings": {"title": "name"}, "options": {"showPrice": False}},
    {"type": "poster"},
    {"fieldMappings": {"title": 1}},
    {"options": {"showPrice": "no"}},
    {"type": "text", "style": "bold"},
]


def test_the_builders_checks_agree_with_the_api(tab, stack):
    """What the builders accept before saving, the API accepts; what they refuse, it refuses."""
    ensure_owner(stack)
    key = owner_key(stack)
    agent = stack.api("POST", "/agents", key, {"name": "Builder checks"})["data"]
    page = tab.page
    page.goto(stack.url + "/")
    verdicts = page.evaluate(
        """async ([forms, actions, displays]) => {
            const m = await import("/dashboard/schema-check.js");
            return [forms.map(m.checkFormSchema), actions.map(m.checkPostActions),
                    displays.map(m.checkDisplayConfig)];
        }""",
        [FORMS, ACTIONS, DISPLAYS],
    )
    base = {
        "agentId": agent["id"],
        "description": "d",
        "executionType": "form",
        "inputSchema": {"type": "object", "properties": {}},
        "formSchema": {"fields": [FIELD]},
        "formExecutionMode": "client",
    }
    cases = [("formSchema", FORMS), ("formPostActions", ACTIONS), ("displayConfig", DISPLAYS)]
    n = 0
    for (name, values), found in zip(cases, verdicts, strict=True):
        for value, problems in zip(values, found, strict=True):
            n += 1
            body = {**base, "name": f"c{n}", name: value}
            accepted = api_status(stack, "POST", "/tools", key, body) == 201
            assert accepted == (problems == []), (value, problems)
    stack.api("DELETE", f"/agents/{agent['id']}", key)
