"""Choices, words and layout (issue 31 items 4 to 6): the agent's model, temperature and
language are chosen, not typed; times follow the browser's language and time zone; every
main page shows labels, never the API's codes or backticks; the sections stay in view, a
wide table keeps its key column, colours take hex codes, and the dashboard holds at 390 px."""

from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone

from playwright.sync_api import expect

from tests.support.axe import overflow
from tests.support.dashboard_stack import (
    OWNER_EMAIL,
    PASSWORD,
    check_requests,
    delivered_submission,
    ensure_owner,
    in_owners_team,
    nav,
    owner_key,
    sign_in,
    slug,
)

# Every page of the menu (the owner sees them all).
MAIN_PAGES = [
    "Agents",
    "Inbox",
    "Knowledge",
    "Tools",
    "Triggers",
    "Chat preview",
    "Conversations",
    "Review",
    "Form submissions",
    "Analytics",
    "Widget",
    "Channels",
    "Team",
    "API keys",
    "Secrets",
    "Webhooks",
    "Audit log",
    "Profile",
]
# A code as the API writes it: lower-case words joined by "_" or "." (webhook_success).
CODE = re.compile(r"\b[a-z][a-z0-9]*(?:[._][a-z0-9]+)+\b")


def _raw_codes(page) -> list[str]:
    """Codes with a label (labels.js) that the page still shows as they are."""
    codes = set(page.evaluate("async () => (await import('/dashboard/labels.js')).ALL_CODES"))
    assert {"webhook_success", "open_chat", "agent.retention_changed"} <= codes
    text = page.locator("body").inner_text()
    assert "`" not in text
    return sorted({token for token in CODE.findall(text) if token in codes})


def test_the_agent_is_set_up_with_choices(tab, stack):
    ensure_owner(stack)
    key = owner_key(stack)
    page = tab.page
    sign_in(page, stack)
    in_owners_team(page)
    page.get_by_role("link", name="New agent").click()
    form = page.get_by_role("form", name="New agent")

    # The model: a list (no provider is configured here: the builtin model alone).
    model = form.get_by_label("Model", exact=True)
    expect(model).to_have_value("builtin")
    expect(model.locator("option")).to_have_text(
        ["Builtin (offline: answers from the prompt and the knowledge)"]
    )
    expect(form.get_by_label("Model name")).to_be_hidden()

    # The temperature: a slider that shows its number, from the API's default.
    default = stack.api("POST", "/agents", key, {"name": "Defaults probe"})["data"]
    stack.api("DELETE", f"/agents/{default['id']}", key)
    slider = form.get_by_label("Temperature (0-100)")
    expect(slider).to_have_attribute("type", "range")
    expect(slider).to_have_value(str(round(default["temperature"])))
    expect(form.locator(".range-value")).to_have_text(str(round(default["temperature"])))
    slider.fill("35")
    expect(form.locator(".range-value")).to_have_text("35")

    # The language: names, the API's values behind them, the API's default chosen.
    language = form.get_by_label("Language")
    expect(language).to_have_value(default["language"])
    expect(language.locator("option:checked")).to_have_text("English")
    options = language.locator("option").evaluate_all(
        "os => os.map((o) => [o.value, o.textContent])"
    )
    assert len(options) > 10
    assert all(text == value.capitalize() for value, text in options), options

    form.get_by_label("Name", exact=True).fill("Words bot")
    language.select_option(label="German")
    form.get_by_role("button", name="Create agent").click()
    expect(page.get_by_role("heading", name="Words bot")).to_be_visible()
    agent_id = page.locator("#agent-picker").input_value()
    saved = stack.api("GET", f"/agents/{agent_id}", key)["data"]
    assert (saved["model"], saved["temperature"], saved["language"]) == ("builtin", 35, "german")
    expect(page.get_by_label("Temperature (0-100)")).to_have_value("35")
    expect(page.locator(".range-value")).to_have_text("35")
    stack.api("DELETE", f"/agents/{agent_id}", key)

    # With providers configured: their models in use, the current one, another at each.
    choices = page.evaluate(
        """async () => (await import("/dashboard/page-agents.js")).modelChoices(
            ["ollama", "openai"],
            ["openai/gpt-4o", "builtin", "gone/x", "ollama/llama3", "openai/gpt-4o", "openai/"],
            "gone/x")"""
    )
    assert [value for value, _ in choices] == [
        "builtin",
        "ollama/llama3",
        "openai/gpt-4o",
        "gone/x",
        "ollama/",
        "openai/",
    ]
    assert choices[2][1] == "gpt-4o at openai"
    assert choices[3][1] == "gone/x (current)"
    assert choices[5][1] == "Another model at openai…"


def test_times_follow_the_browser_language_and_time_zone(browser, stack):
    ensure_owner(stack)
    key = owner_key(stack)
    first = stack.api("POST", "/agents", key, {"name": "Tokyo shop"})["data"]
    context = browser.new_context(locale="de-DE", timezone_id="Asia/Tokyo")
    requests: list[tuple[str, str]] = []
    errors: list[str] = []
    context.on("request", lambda r: requests.append((r.method, r.url)))
    try:
        page = context.new_page()
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        page.goto(stack.url + "/")
        form = page.get_by_role("form", name="Sign in with password")
        form.get_by_label("E-mail").fill(OWNER_EMAIL)
        form.get_by_label("Password", exact=True).fill(PASSWORD)
        form.get_by_role("button", name="Sign in").click()
        expect(page.get_by_role("heading", name="Agents", exact=True)).to_be_visible()
        in_owners_team(page)
        created = datetime.fromisoformat(first["createdAt"].replace("Z", "+00:00"))
        tokyo = created.astimezone(timezone(timedelta(hours=9)))
        link = page.get_by_role("link", name=first["name"], exact=True)
        row = page.get_by_role("row").filter(has=link)
        # German order and a 24-hour clock, in Tokyo's time: 26.11.2026, 14:05.
        expect(row.first.get_by_role("cell").last).to_have_text(tokyo.strftime("%d.%m.%Y, %H:%M"))
    finally:
        context.close()
        stack.api("DELETE", f"/agents/{first['id']}", key)
    assert errors == []
    check_requests(stack, requests)


def test_main_pages_show_words_not_codes(tab, stack):
    ensure_owner(stack)
    delivered_submission(stack, owner_key(stack), "Words shop")
    page = tab.page
    sign_in(page, stack)
    in_owners_team(page)
    shown: dict[str, list[str]] = {}
    for name in MAIN_PAGES:
        nav(page, name)
        shown[name] = _raw_codes(page)
    # Detail pages with statuses: a submission (delivered), an agent, a conversation.
    nav(page, "Form submissions")
    page.get_by_role("table").get_by_role("link").first.click()
    expect(page.get_by_role("heading", name=re.compile("^Submission of"))).to_be_visible()
    shown["a submission"] = _raw_codes(page)
    nav(page, "Triggers")
    templates = page.locator(".template")
    expect(templates.first).to_be_visible()
    assert "`" not in " ".join(templates.all_inner_texts())
    assert {tag for tag in page.locator(".template .tag").all_inner_texts()} >= {
        "Open the chat",
        "Custom event",
    }
    assert {page: codes for page, codes in shown.items() if codes} == {}


EMPTY = {"type": "object", "properties": {}}


def _tool_codes_shown(page, codes: set[str]) -> list[str]:
    """Tags, choices and the subtitle of the page that start with a tool's code (http, form)."""
    texts = page.locator("main .tag, main option, main .page-head p").all_inner_texts()
    return [t for t in texts if (m := re.match(r"[a-z_]+\b", t.strip())) and m.group() in codes]


def test_tools_and_analytics_show_words_not_codes(tab, stack):
    ensure_owner(stack)
    key = owner_key(stack)
    agent = stack.api("POST", "/agents", key, {"name": "Words in tools"})["data"]
    made = [
        stack.api("POST", "/tools", key, {"agentId": agent["id"], "inputSchema": EMPTY, **body})[
            "id"
        ]
        for body in (
            {
                "name": "stock",
                "description": "Stock",
                "executionType": "http",
                "httpUrl": stack.receiver_url + "/stock",
                "httpHeaders": {"X-Key": "{{SHOP_KEY}}"},
                "displayConfig": {"type": "product_card"},
            },
            {
                "name": "contact",
                "description": "Contact",
                "executionType": "form",
                "formSchema": {"fields": [{"name": "email", "label": "E-mail", "type": "email"}]},
                "formExecutionMode": "both",
                "formClientHandler": "crm",
                "formWebhookUrl": stack.receiver_url + "/hook",
            },
            {
                "name": "hours",
                "description": "Hours",
                "executionType": "mock",
                "mockResponse": "9-5",
            },
        )
    ]
    page = tab.page
    sign_in(page, stack)
    in_owners_team(page)
    page.get_by_label("Agent", exact=True).select_option(agent["id"])
    codes = set(
        page.evaluate(
            """async () => { const l = await import('/dashboard/labels.js');
            return [l.TOOL_TYPE, l.EXECUTION_MODE, l.DISPLAY_TYPE].flatMap(Object.keys); }"""
        )
    )
    nav(page, "Tools")
    assert set(page.locator("main td .tag").all_inner_texts()) == {
        "HTTP call",
        "Form",
        "Fixed response",
    }
    shown = {"tools": _tool_codes_shown(page, codes) + _raw_codes(page)}
    for tool_id in made:
        page.goto(f"{stack.url}/#/tools/{tool_id}")
        expect(page.get_by_role("form", name="Edit tool")).to_be_visible()
        shown[tool_id] = _tool_codes_shown(page, codes) + _raw_codes(page)
    # The HTTP tool's headers are rows (a secret reference kept as written).
    page.goto(f"{stack.url}/#/tools/{made[0]}")
    headers = page.get_by_role("group", name="Headers", exact=True)
    expect(headers.get_by_label("Header name")).to_have_value("X-Key")
    expect(headers.get_by_label("Header value")).to_have_value("{{SHOP_KEY}}")

    # Analytics: days in the browser's language (Nov 26, 2026), never 2026-11-26.
    nav(page, "Analytics")
    iso = re.compile(r"\b\d{4}-\d{2}-\d{2}\b")
    page.locator("main details.figures-table summary").first.click()
    text = page.locator("main").inner_text()
    titles = page.locator("main svg").evaluate_all(
        "svgs => svgs.map((s) => s.getAttribute('aria-label'))"
    )
    assert not iso.search(text + " ".join(titles)), iso.findall(text + " ".join(titles))
    shown["analytics"] = _raw_codes(page)
    assert {where: codes for where, codes in shown.items() if codes} == {}
    stack.api("DELETE", f"/agents/{agent['id']}", key)


def test_sections_stay_in_view_and_colours_take_hex(tab, stack):
    ensure_owner(stack)
    key = owner_key(stack)
    agent = stack.api("POST", "/agents", key, {"name": "Colour shop"})["data"]
    page = tab.page
    sign_in(page, stack)
    in_owners_team(page)
    page.goto(f"{stack.url}/#/agents/{agent['id']}")
    form = page.get_by_role("form", name="Widget appearance")
    expect(form).to_be_visible()

    # The agent's page is long: scrolled to its end, the sections are still in view.
    page.evaluate("() => window.scrollTo(0, document.documentElement.scrollHeight)")
    assert page.evaluate("() => window.scrollY") > 500
    sections = page.get_by_role("navigation", name="Sections")
    for name in ("Agents", "Profile"):
        expect(sections.get_by_role("link", name=name, exact=True)).to_be_in_viewport()

    # The colour picker and its hex code move together, both ways.
    picker = form.get_by_label("Accent", exact=True)
    hex_code = form.get_by_label("Accent (hex)")
    expect(hex_code).to_have_value(picker.input_value())
    picker.fill("#0b7a4b")
    expect(hex_code).to_have_value("#0b7a4b")
    hex_code.fill("#12AB9F")
    expect(picker).to_have_value("#12ab9f")
    hex_code.fill("#abc")
    expect(picker).to_have_value("#aabbcc")
    hex_code.fill("#12345g")  # no colour: the form is not sent
    assert not form.evaluate("f => f.checkValidity()")
    hex_code.fill("#123456")
    form.get_by_role("button", name="Save appearance").click()
    expect(page.locator(".toast").filter(has_text="Appearance saved")).to_be_visible()
    saved = stack.api("GET", f"/agents/{agent['id']}", key)["data"]["widget"]["appearance"]
    assert saved["accentColor"] == "#123456"
    page.reload()
    form = page.get_by_role("form", name="Widget appearance")
    expect(form.get_by_label("Accent (hex)")).to_have_value("#123456")
    expect(form.get_by_label("Accent", exact=True)).to_have_value("#123456")

    # Pager controls are as wide as their text, not as wide as the page.
    nav(page, "Conversations")
    pager = page.locator(".pager")
    for control in (pager.get_by_label("Page size"), pager.get_by_role("button", name="Next")):
        box = control.bounding_box()
        assert box and box["width"] < 200, box
    stack.api("DELETE", f"/agents/{agent['id']}", key)


def test_the_dashboard_works_390_px_wide(tab, stack, shots):
    ensure_owner(stack)
    key = owner_key(stack)
    agent = stack.api("POST", "/agents", key, {"name": "Narrow shop"})["data"]
    page = tab.page
    page.set_viewport_size({"width": 390, "height": 844})
    sign_in(page, stack)
    in_owners_team(page)
    sections = page.get_by_role("navigation", name="Sections")
    menu = page.get_by_role("button", name="Menu")
    expect(sections).to_be_hidden()  # folded behind the menu button
    for name in MAIN_PAGES:
        menu.click()
        expect(menu).to_have_attribute("aria-expanded", "true")
        sections.get_by_role("link", name=name, exact=True).click()
        expect(sections).to_be_hidden()
        expect(page.locator(f'main .page[data-page="{slug(name)}"]')).to_be_visible()
        expect(page.locator("main")).not_to_have_attribute("aria-busy", "true")
        assert overflow(page) <= 0, (name, overflow(page))
        if name in ("Agents", "Conversations", "Audit log"):
            page.screenshot(path=str(shots / f"narrow-{slug(name)}.png"), full_page=True)

    # The audit log scrolls sideways inside its frame, its key column (what, when) in view.
    menu.click()
    sections.get_by_role("link", name="Audit log", exact=True).click()
    wrap = page.locator(".table-wrap.audit")
    expect(wrap).to_be_visible()
    wrap.evaluate("el => { el.scrollLeft = el.scrollWidth; }")
    assert wrap.evaluate("el => el.scrollLeft") > 0, "the table fits: nothing to scroll"
    key_cell = wrap.locator("tbody tr").first.locator("td").first
    frame, cell = wrap.bounding_box(), key_cell.bounding_box()
    assert frame and cell
    assert cell["x"] >= frame["x"] - 1 and cell["x"] + cell["width"] <= frame["x"] + frame["width"]
    expect(key_cell.locator("strong")).not_to_have_text(CODE)

    # An agent's page, with the widget preview, holds too; Escape folds the menu.
    menu.click()
    page.keyboard.press("Escape")
    expect(sections).to_be_hidden()
    expect(menu).to_be_focused()
    page.goto(f"{stack.url}/#/agents/{agent['id']}")
    expect(page.get_by_role("form", name="Widget appearance")).to_be_visible()
    assert overflow(page) <= 0, overflow(page)
    stack.api("DELETE", f"/agents/{agent['id']}", key)
