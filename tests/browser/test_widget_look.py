"""The widget's look in Chromium, on a third-party page: appearance from the agent and the
embed, ::part() styling, languages and right to left, starters, inline mode, full screen on
narrow screens, SVG icons, dark mode, and axe-core in every state.

`AGENTSVC_WRITE_ARTEFACTS=1 python3 -m pytest tests/browser/test_widget_look.py -k
screenshots` rewrites the pictures of the README and the docs under tests/browser/artefacts/.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from playwright.sync_api import expect

from tests.support.widget_page import launcher, load, pixel, read_png

ARTEFACTS = Path(__file__).resolve().parent / "artefacts"
# A 24×24 PNG avatar: a teal disc with a yellow centre (any small image does).
AVATAR = (
    "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAABgAAAAYCAYAAADgdz34AAAAZklEQVR42mNgGA"
    "yAr2TCf2yYJoZSxTJSDSfJEnINJ8oSSg3Hawm1DMdpCSEN/6+loWCqWYBuMLEWEe16ci1AsYRcw4n2xagFZF"
    "tAtUimeTId0Iw2KMujgSuu6VLh0KXKpEulTy0AADyDdn5ai8PBAAAAAElFTkSuQmCC"
)
CUSTOM = {
    "appearance": {
        "accentColor": "#0b7a4b",
        "textColor": "#102030",
        "backgroundColor": "#fffdf7",
        "radius": 4,
        "fontFamily": "Georgia, Times New Roman, serif",
        "position": "left",
        "offsetX": 32,
        "offsetY": 24,
        "title": "Ask the garden shop",
        "avatar": AVATAR,
        "welcomeMessage": "Hello! Ask about plants, pots and deliveries.",
        "poweredBy": False,
    },
    "starters": ["Do you deliver on Saturdays?", "Which plants like shade?"],
}


def _shadow(page, selector: str, prop: str) -> str:
    return page.evaluate(
        "([s, p]) => getComputedStyle(document.getElementById('agentsvc-widget').shadowRoot"
        ".querySelector(s))[p]",
        [selector, prop],
    )


def _widget(page):
    return page.locator("#agentsvc-widget")


def _write_artefact(page, name: str, tmp_path: Path) -> bytes:
    """Screenshot the page; into the committed artefacts when asked to rewrite them."""
    keep = os.environ.get("AGENTSVC_WRITE_ARTEFACTS") == "1"
    path = (ARTEFACTS if keep else tmp_path) / name
    path.parent.mkdir(exist_ok=True)
    page.screenshot(path=str(path))
    return path.read_bytes()


def test_screenshots_of_the_default_and_a_customised_look(page, stack, tmp_path):
    stack.host.body_html = (
        "<main style='font:16px serif;padding:2rem'><h1>A shop</h1><p>Some page text.</p></main>"
    )
    plain = stack.new_agent("We deliver every weekday.")
    stack.api("PATCH", f"/agents/{plain}", {"widget": {"starters": ["When do you deliver?"]}})
    stack.embed({"agentId": plain})
    load(page, stack)
    launcher(page).click()
    expect(page.get_by_role("dialog", name="Chat")).to_be_visible()
    png = _write_artefact(page, "widget-default.png", tmp_path)
    width, height, rows = read_png(png)
    head = _widget(page).locator(".head").bounding_box()
    assert pixel(rows, int(head["x"] + 8), int(head["y"] + head["height"] / 2)) == (36, 87, 214)

    custom = stack.new_agent("We deliver on Saturdays too. Ferns like shade.")
    stack.api("PATCH", f"/agents/{custom}", {"widget": CUSTOM})
    stack.embed({"agentId": custom})
    load(page, stack)
    button = launcher(page)
    box = button.bounding_box()
    assert box["x"] == 32 and page.viewport_size["height"] - (box["y"] + box["height"]) == 24
    button.click()
    dialog = page.get_by_role("dialog", name="Ask the garden shop")
    expect(dialog).to_be_visible()
    expect(dialog.get_by_role("heading", name="Ask the garden shop")).to_be_visible()
    expect(_widget(page).locator(".welcome")).to_have_text(CUSTOM["appearance"]["welcomeMessage"])
    starters = dialog.get_by_role("group", name="Suggested questions").get_by_role("button")
    expect(starters).to_have_text(CUSTOM["starters"])
    expect(_widget(page).locator(".pb")).to_be_hidden()
    expect(_widget(page).locator("img.av")).to_be_visible()
    assert _shadow(page, ".head", "backgroundColor") == "rgb(11, 122, 75)"
    assert _shadow(page, ".panel", "backgroundColor") == "rgb(255, 253, 247)"
    assert _shadow(page, ".panel", "borderTopLeftRadius") == "4px"
    assert _shadow(page, ".log", "color") == "rgb(16, 32, 48)"
    assert _shadow(page, ".log", "fontFamily").startswith("Georgia")
    panel = _widget(page).locator(".panel").bounding_box()
    assert panel["x"] == 32  # on the left, like the launcher
    starters.first.click()
    expect(dialog.locator(".assistant[aria-busy=false]")).to_contain_text("Saturdays")
    expect(dialog.get_by_role("group", name="Suggested questions")).to_be_hidden()
    _write_artefact(page, "widget-custom.png", tmp_path)


def test_the_embed_overrides_the_agent_and_bad_values_are_ignored(page, stack):
    agent_id = stack.new_agent()
    stack.api(
        "PATCH",
        f"/agents/{agent_id}",
        {"widget": {"appearance": {"accentColor": "#aa0000", "title": "Agent title"}}},
    )
    warnings: list[str] = []
    page.on("console", lambda m: warnings.append(m.text) if m.type == "warning" else None)
    stack.embed(
        {
            "agentId": agent_id,
            "title": "Page title",
            "appearance": {
                "accentColor": "#123456",
                "fontFamily": "x; } :host { display: none",
                "backgroundColor": "red",
                "radius": 99,
            },
            "strings": {"send": "Go"},
            "starters": ["From the page?"],
        }
    )
    load(page, stack)
    launcher(page).click()
    dialog = page.get_by_role("dialog", name="Page title")
    expect(dialog).to_be_visible()
    expect(dialog.get_by_role("button", name="Go")).to_be_visible()
    expect(dialog.get_by_role("button", name="From the page?")).to_be_visible()
    assert _shadow(page, ".head", "backgroundColor") == "rgb(18, 52, 86)"
    assert _shadow(page, ".panel", "backgroundColor") == "rgb(255, 255, 255)"
    assert _shadow(page, ".panel", "borderTopLeftRadius") == "12px"
    assert "Georgia" not in _shadow(page, ".log", "fontFamily")
    assert any("appearance.fontFamily ignored" in w for w in warnings), warnings
    # configure() changes the look live (the dashboard's preview uses it).
    page.evaluate(
        "agentsvc.configure({appearance: {accentColor: '#ffd33d', radius: 0}, title: 'Live'})"
    )
    expect(page.get_by_role("dialog", name="Live")).to_be_visible()
    assert _shadow(page, ".head", "backgroundColor") == "rgb(255, 211, 61)"
    # A light accent gets dark text on it.
    assert _shadow(page, ".head", "color") == "rgb(17, 17, 17)"
    assert _shadow(page, ".panel", "borderTopLeftRadius") == "0px"


SHEET = (
    "[...document.getElementById('agentsvc-widget').shadowRoot.adoptedStyleSheets]"
    ".map(s => [...s.cssRules].map(r => r.cssText).join('\\n')).join('\\n')"
)


def test_a_hostile_config_cannot_inject_css(page, stack):
    """Even a config that skipped the service's checks (a proxy, an old version) puts only
    values matching the patterns into CSS: each bad one is dropped, nothing else breaks."""
    agent_id = stack.new_agent()
    hostile = {
        "agentId": agent_id,
        "appearance": {
            "accentColor": "#000000;}:host{display:none}.x{",
            "textColor": "red",
            "backgroundColor": "#ffffff}*{color:red",
            "fontFamily": "a;}*{background:url(https://evil.example/x)}",
            "radius": "4px;}*{display:none",
            "offsetX": "0;}*{display:none",
            "position": "left;}",
            "darkMode": "on;}",
            "avatar": "javascript:alert(1)",
            "launcherIcon": "https://evil.example/a.png');}",
        },
        "language": "auto",
        "strings": {"en": {"send": "<b>Send</b>", "bogus": "x"}},
        "starters": [],
    }

    def serve(route):
        route.fulfill(
            status=200,
            content_type="application/json",
            headers={"Access-Control-Allow-Origin": "*"},
            body=json.dumps(hostile),
        )

    stack.embed({"agentId": agent_id})
    load(page, stack)
    launcher(page).click()
    default_sheet = page.evaluate(SHEET)
    page.route("**/widget/config/**", serve)
    requested: list[str] = []
    page.on("request", lambda r: requested.append(r.url))
    page.reload()
    page.wait_for_function("() => window.agentsvc && window.agentsvc.ready === true")
    launcher(page).click()
    expect(page.get_by_role("dialog")).to_be_visible()
    # Exactly the default style sheet: not one hostile byte reached it.
    assert page.evaluate(SHEET) == default_sheet
    assert _shadow(page, ".head", "backgroundColor") == "rgb(36, 87, 214)"
    assert page.evaluate(
        "getComputedStyle(document.getElementById('agentsvc-widget')).display"
    ) in ("inline", "block")
    # Texts are text: the override shows as typed, never as markup.
    expect(page.get_by_role("button", name="<b>Send</b>")).to_be_visible()
    assert not [u for u in requested if "evil" in u]


def test_the_site_styles_named_parts_and_nothing_else(page, stack):
    agent_id = stack.new_agent()
    stack.embed(
        {"agentId": agent_id},
        before=(
            "<style>#agentsvc-widget::part(launcher){background:rgb(1, 2, 3)}"
            "#agentsvc-widget::part(title){letter-spacing:3px}"
            "#agentsvc-widget::part(send-button){border-radius:0}"
            ".head, .launcher, .panel {background: red !important}</style>"
        ),
    )
    load(page, stack)
    assert _shadow(page, ".launcher", "backgroundColor") == "rgb(1, 2, 3)"
    launcher(page).click()
    assert _shadow(page, ".head h2", "letterSpacing") == "3px"
    assert _shadow(page, ".primary", "borderTopLeftRadius") == "0px"
    # The site's own selectors do not reach inside.
    assert _shadow(page, ".head", "backgroundColor") == "rgb(36, 87, 214)"
    assert _shadow(page, ".panel", "backgroundColor") == "rgb(255, 255, 255)"


def test_the_language_follows_the_page_then_the_browser_and_arabic_is_rtl(browser, page, stack):
    agent_id = stack.new_agent()
    stack.embed({"agentId": agent_id})
    stack.host.lang = "de-DE"
    load(page, stack)
    page.get_by_role("button", name="Chat öffnen").click()
    dialog = page.get_by_role("dialog", name="Chat")
    expect(dialog.get_by_role("textbox", name="Nachricht")).to_be_visible()
    expect(dialog.get_by_role("button", name="Senden")).to_be_visible()
    expect(page.get_by_role("button", name="Chat schließen")).to_be_visible()
    assert _shadow(page, ".root", "direction") == "ltr"

    stack.host.lang = "ar"
    load(page, stack)
    page.get_by_role("button", name="فتح الدردشة").click()
    expect(page.get_by_role("dialog", name="الدردشة")).to_be_visible()
    assert _shadow(page, ".root", "direction") == "rtl"
    # In right to left the visitor's messages sit on the left.
    page.evaluate("agentsvc.send('مرحبا')")
    user = _widget(page).locator(".user")
    expect(user).to_be_visible()
    log = _widget(page).locator(".log").bounding_box()
    assert user.bounding_box()["x"] - log["x"] < 20

    # No page language: the browser's (French here); unknown languages fall through.
    context = browser.new_context(locale="fr-FR", viewport={"width": 1200, "height": 800})
    try:
        french = context.new_page()
        stack.host.lang = "xx"
        load(french, stack)
        expect(french.get_by_role("button", name="Ouvrir la discussion")).to_be_visible()
        # The agent's language beats the page and the browser; the embed's beats both.
        spanish = stack.new_agent()
        stack.api(
            "PATCH",
            f"/agents/{spanish}",
            {"widget": {"language": "es", "strings": {"es": {"send": "¡Vamos!"}}}},
        )
        stack.embed({"agentId": spanish})
        load(french, stack)
        french.get_by_role("button", name="Abrir chat").click()
        expect(french.get_by_role("button", name="¡Vamos!")).to_be_visible()
        stack.embed({"agentId": spanish, "language": "ja"})
        load(french, stack)
        expect(french.get_by_role("button", name="チャットを開く")).to_be_visible()
    finally:
        context.close()


def test_starters_send_and_come_back_after_reset(page, stack):
    agent_id = stack.new_agent("Parcels leave every evening. Returns are free.")
    stack.api(
        "PATCH",
        f"/agents/{agent_id}",
        {"widget": {"starters": ["When do parcels leave?", "Are returns free?"]}},
    )
    stack.embed({"agentId": agent_id})
    load(page, stack)
    launcher(page).click()
    group = page.get_by_role("group", name="Suggested questions")
    expect(group.get_by_role("button")).to_have_count(2)
    group.get_by_role("button", name="Are returns free?").click()
    log = page.get_by_role("log")
    expect(log.locator(".user")).to_have_text("Are returns free?")
    expect(log.locator(".assistant[aria-busy=false]")).to_contain_text("Returns are free")
    expect(group).to_be_hidden()
    page.reload()
    page.wait_for_function("() => window.agentsvc && window.agentsvc.ready === true")
    launcher(page).click()
    expect(page.get_by_role("group", name="Suggested questions")).to_be_hidden()
    page.evaluate("agentsvc.reset()")
    expect(page.get_by_role("group", name="Suggested questions")).to_be_visible()
    expect(log.locator(".msg")).to_have_count(0)


def test_inline_mode_by_attribute_and_by_mount(page, stack):
    agent_id = stack.new_agent("We repair bicycles.")
    stack.api("PATCH", f"/agents/{agent_id}", {"widget": {"appearance": {"title": "Help"}}})
    stack.embed({"agentId": agent_id})
    stack.host.body_html = (
        "<h1>Support</h1><div id='chat' data-agentsvc-inline style='height:480px;width:420px'>"
        "</div><div id='other' style='height:400px'></div>"
    )
    load(page, stack)
    region = page.get_by_role("region", name="Help")
    expect(region).to_be_visible()
    expect(page.get_by_role("button", name="Open chat")).to_have_count(0)
    expect(region.get_by_role("button", name="Close")).to_be_hidden()
    box = region.bounding_box()
    chat = page.locator("#chat").bounding_box()
    assert (box["x"], box["y"], box["width"], box["height"]) == (
        chat["x"],
        chat["y"],
        chat["width"],
        chat["height"],
    )
    region.get_by_role("textbox", name="Message").fill("Do you repair bicycles?")
    page.keyboard.press("Enter")
    expect(region.locator(".assistant[aria-busy=false]")).to_contain_text("repair bicycles")
    page.keyboard.press("Escape")
    page.evaluate("agentsvc.close()")
    expect(region).to_be_visible()
    # mount() moves it elsewhere (a selector or an element).
    page.evaluate("agentsvc.mount(document.getElementById('other'))")
    assert page.evaluate("document.getElementById('agentsvc-widget').parentElement.id") == "other"
    expect(region.locator(".user")).to_have_text("Do you repair bicycles?")

    # mount() queued by the snippet's stub before the script loaded.
    stack.host.body_html = "<section id='here' style='height:400px'></section>"
    stack.embed({"agentId": agent_id}, after="<script>agentsvc.mount('#here');</script>")
    load(page, stack)
    expect(page.locator("#here").get_by_role("region", name="Help")).to_be_visible()


def test_full_screen_on_a_narrow_screen(page, stack):
    agent_id = stack.new_agent()
    stack.embed({"agentId": agent_id})
    page.set_viewport_size({"width": 375, "height": 700})
    load(page, stack)
    launcher(page).click()
    dialog = page.get_by_role("dialog")
    expect(dialog).to_be_visible()
    assert dialog.bounding_box() == {"x": 0, "y": 0, "width": 375, "height": 700}
    expect(page.get_by_role("button", name="Close chat")).to_be_hidden()
    dialog.get_by_role("button", name="Close", exact=True).click()
    expect(dialog).to_be_hidden()
    expect(launcher(page)).to_be_visible()
    expect(launcher(page)).to_be_focused()


def test_icons_are_inline_svg_that_render_without_emoji_fonts(page, stack, tmp_path):
    agent_id = stack.new_agent("Hello there.")
    stack.embed({"agentId": agent_id})
    load(page, stack)
    page.evaluate("agentsvc.showBubble('Psst', 0)")
    button = launcher(page)
    # Every icon button: a name, an <svg> inside, no text (no emoji to miss a font).
    icons = page.evaluate(
        """() => [...document.getElementById('agentsvc-widget').shadowRoot
              .querySelectorAll('.launcher, .x, .bubble-x')]
              .map(b => [b.getAttribute('aria-label'), !!b.querySelector('svg'), b.textContent])"""
    )
    assert icons == [["Close", True, ""], ["Dismiss", True, ""], ["Open chat", True, ""]]
    # The launcher's icon is drawn: white strokes on the accent.
    png = button.screenshot(path=str(tmp_path / "launcher.png"))
    width, height, rows = read_png(png)
    colours = [pixel(rows, x, y) for y in range(height) for x in range(width)]
    assert sum(1 for c in colours if min(c) > 230) > 20
    assert sum(1 for c in colours if c == (36, 87, 214)) > 200
    button.click()
    page.evaluate("agentsvc.send('Hello?')")
    feedback = page.get_by_role("log").get_by_role("button", name="Good answer")
    expect(feedback).to_be_visible()
    assert feedback.locator("svg").count() == 1 and feedback.inner_text() == ""
    bad = page.get_by_role("log").get_by_role("button", name="Bad answer")
    assert bad.locator("svg").count() == 1 and bad.inner_text() == ""


def test_dark_mode_auto_follows_the_system(page, stack):
    agent_id = stack.new_agent()
    stack.api("PATCH", f"/agents/{agent_id}", {"widget": {"appearance": {"darkMode": "auto"}}})
    stack.embed({"agentId": agent_id})
    page.emulate_media(color_scheme="dark")
    load(page, stack)
    launcher(page).click()
    assert _shadow(page, ".panel", "backgroundColor") == "rgb(28, 31, 36)"
    assert _shadow(page, ".log", "color") == "rgb(230, 237, 243)"
    page.emulate_media(color_scheme="light")
    assert _shadow(page, ".panel", "backgroundColor") == "rgb(255, 255, 255)"


# ── accessibility: axe-core in every state, left to right and right to left ─────────

FORM = {
    "title": "Call me back",
    "fields": [
        {"name": "email", "label": "E-mail", "type": "email", "validation": {"required": True}},
        {
            "name": "topic",
            "label": "Topic",
            "type": "select",
            "options": [{"label": "Sales", "value": "s"}],
        },
        {"name": "notes", "label": "Notes", "type": "textarea"},
    ],
}


def _axe(page, axe_source: str) -> list[dict]:
    """Serious and critical violations of axe-core inside the widget (its shadow root)."""
    if page.evaluate("typeof window.axe") == "undefined":
        page.add_script_tag(content=axe_source)
    result = page.evaluate(
        """async () => {
            const r = await axe.run({include: [['#agentsvc-widget']]},
                                    {resultTypes: ['violations', 'passes']});
            const named = r.passes.filter(p => p.id === 'button-name')
                .reduce((n, p) => n + p.nodes.length, 0);
            return {named, violations: r.violations.map(v => ({id: v.id, impact: v.impact,
                nodes: v.nodes.map(n => n.target.join(' ') + ': ' + n.failureSummary)}))};
        }"""
    )
    # axe looked inside the shadow root: it checked the widget's buttons for names.
    assert result["named"] >= 1, result
    return [v for v in result["violations"] if v["impact"] in ("serious", "critical")]


@pytest.mark.parametrize("lang", ["en", "ar"])
def test_axe_finds_no_serious_violations_in_any_state(page, stack, axe_source, lang):
    agent_id = stack.new_agent("We open at nine.")
    stack.api(
        "PATCH",
        f"/agents/{agent_id}",
        {
            "widget": {
                "appearance": {"welcomeMessage": "Hello!", "avatar": AVATAR},
                "starters": ["When do you open?"],
            }
        },
    )
    stack.api(
        "POST",
        "/tools",
        {
            "agentId": agent_id,
            "name": "callback",
            "description": "Call back",
            "executionType": "form",
            "inputSchema": {"type": "object", "properties": {}},
            "formSchema": FORM,
            "formExecutionMode": "webhook",
            "formWebhookUrl": stack.receiver_url + "/hooks/cb",
        },
    )
    stack.api("PATCH", f"/agents/{agent_id}", {"handoff": {"enabled": True}})
    stack.host.lang = lang
    stack.embed({"agentId": agent_id})
    load(page, stack)
    page.evaluate("agentsvc.showBubble('Questions? Ask us.', 0)")
    assert _axe(page, axe_source) == [], "launcher"
    page.evaluate("agentsvc.open()")
    expect(page.get_by_role("dialog")).to_be_visible()
    assert _axe(page, axe_source) == [], "open"
    page.evaluate("agentsvc.send('When do you open?')")
    expect(page.get_by_role("log").locator(".assistant[aria-busy=false]")).to_have_count(1)
    assert _axe(page, axe_source) == [], "answered"
    page.evaluate("agentsvc.showForm('callback')")
    expect(page.get_by_role("form", name="Call me back")).to_be_visible()
    form = page.get_by_role("form", name="Call me back")
    form.get_by_role("button").click()  # shows the field errors
    expect(form.locator(".ferr").first).not_to_be_empty()
    assert _axe(page, axe_source) == [], "form"

    stack.host.body_html = "<main><h1>Help</h1><div id='chat' style='height:500px'></div></main>"
    stack.embed({"agentId": agent_id}, after="<script>agentsvc.mount('#chat')</script>")
    load(page, stack)
    expect(page.get_by_role("region")).to_be_visible()
    assert _axe(page, axe_source) == [], "inline"
