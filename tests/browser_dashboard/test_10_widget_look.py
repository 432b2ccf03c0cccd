"""The agent page's Appearance section: the live preview shows unsaved settings in the real
widget (a frame of /widget/demo), saving stores them for the public config, the texts of
any language can be overridden, and the API's refusal is shown next to the form."""

from __future__ import annotations

import json
import urllib.request

from playwright.sync_api import expect

from tests.support.dashboard_stack import Tab, ensure_owner, owner_key, sign_in, wait_for


def _public_config(stack, agent_id: str) -> dict:
    url = f"{stack.url}/api/v1/widget/config/{agent_id}"
    with urllib.request.urlopen(url, timeout=10) as resp:  # noqa: S310 (loopback)
        return json.loads(resp.read())


def _in_widget(frame, selector: str, prop: str) -> str:
    return frame.evaluate(
        "([s, p]) => getComputedStyle(document.getElementById('agentsvc-widget').shadowRoot"
        ".querySelector(s))[p]",
        [selector, prop],
    )


def test_appearance_is_previewed_live_then_saved(browser, stack, shots):
    ensure_owner(stack)
    key = owner_key(stack)
    agent = stack.api(
        "POST", "/agents", key, {"name": "Garden shop", "systemPrompt": "We deliver on Saturdays."}
    )["data"]
    tab = Tab(browser, stack)
    try:
        page = tab.page
        sign_in(page, stack)
        switcher = page.get_by_label("Team", exact=True)
        if switcher.count():  # earlier tests joined another team: act in the owner's
            switcher.select_option(label="Olivia Owner's team (owner)")
            expect(page.locator(".role-badge")).to_have_text("owner")
        page.goto(f"{stack.url}/#/agents/{agent['id']}")
        section = page.get_by_role("region", name="Appearance")
        form = section.get_by_role("form", name="Widget appearance")
        expect(form).to_be_visible()
        frame_el = section.locator("iframe[title='Widget preview']")
        frame_el.scroll_into_view_if_needed()
        expect(frame_el).to_have_attribute("data-previewed", "1", timeout=15_000)
        frame = frame_el.content_frame
        widget = frame.locator("#agentsvc-widget")
        expect(widget.get_by_role("dialog", name="Chat")).to_be_visible()

        # Unsaved changes show in the preview at once.
        form.get_by_label("Accent", exact=True).fill("#0b7a4b")
        form.get_by_label("Title", exact=True).fill("Ask the garden shop")
        form.get_by_label("Welcome message", exact=True).fill("Hello! Ask about plants.")
        form.get_by_label("Starter question 1", exact=True).fill("Do you deliver on Saturdays?")
        form.get_by_label("Corner radius (px, 0-24)", exact=True).fill("4")
        form.get_by_label('Show "Powered by agentsvc"', exact=True).uncheck()
        dialog = widget.get_by_role("dialog", name="Ask the garden shop")
        expect(dialog).to_be_visible()
        expect(dialog.locator(".welcome")).to_have_text("Hello! Ask about plants.")
        expect(dialog.get_by_role("button", name="Do you deliver on Saturdays?")).to_be_visible()
        expect(dialog.locator(".pb")).to_be_hidden()
        page.wait_for_function(
            "f => getComputedStyle(f.contentDocument.getElementById('agentsvc-widget')"
            ".shadowRoot.querySelector('.head')).backgroundColor === 'rgb(11, 122, 75)'",
            arg=frame_el.element_handle(),
        )
        preview = frame_el.element_handle().content_frame()
        assert _in_widget(preview, ".panel", "borderTopLeftRadius") == "4px"
        # Not saved yet.
        assert _public_config(stack, agent["id"])["appearance"]["title"] is None

        # The texts of a language, previewed in that language.
        form.get_by_label("Locale", exact=True).select_option("de")
        form.get_by_text("Texts: override any text the visitor sees").click()
        form.get_by_label("Texts of", exact=True).select_option("de")
        send_override = form.locator(".texts").get_by_label("Send", exact=True)
        expect(send_override).to_have_attribute("placeholder", "Senden")
        send_override.fill("Los")
        expect(dialog.get_by_role("button", name="Los")).to_be_visible()
        expect(dialog.get_by_role("textbox", name="Nachricht")).to_be_visible()
        page.screenshot(path=str(shots / "agent-appearance.png"), full_page=True)

        form.get_by_role("button", name="Save appearance").click()
        expect(page.get_by_text("Appearance saved")).to_be_visible()
        saved = stack.api("GET", f"/agents/{agent['id']}", key)["data"]["widget"]
        assert saved["appearance"]["accentColor"] == "#0b7a4b"
        assert saved["appearance"]["title"] == "Ask the garden shop"
        assert saved["appearance"]["radius"] == 4
        assert saved["appearance"]["poweredBy"] is False
        assert saved["language"] == "de"
        assert saved["strings"] == {"de": {"send": "Los"}}
        assert saved["starters"] == ["Do you deliver on Saturdays?"]
        public = _public_config(stack, agent["id"])
        assert public["appearance"] == saved["appearance"]
        assert "systemPrompt" not in public and "Saturdays." not in json.dumps(public)

        # A font family that could break out of CSS: the API's message, nothing stored.
        form.get_by_label("Font family", exact=True).fill("Arial; } :host { display: none")
        form.get_by_role("button", name="Save appearance").click()
        expect(form.get_by_role("alert")).to_contain_text("widget.appearance.fontFamily")
        stored = stack.api("GET", f"/agents/{agent['id']}", key)["data"]["widget"]
        assert stored["appearance"]["fontFamily"] is None
        form.get_by_label("Font family", exact=True).fill("Georgia, serif")
        form.get_by_role("button", name="Save appearance").click()
        assert wait_for(
            lambda: (
                _public_config(stack, agent["id"])["appearance"]["fontFamily"] == "Georgia, serif"
            )
        )
        expect(form.get_by_role("alert")).to_be_hidden()

        # A reload shows the saved settings in the form.
        page.reload()
        form = page.get_by_role("form", name="Widget appearance")
        expect(form.get_by_label("Title", exact=True)).to_have_value("Ask the garden shop")
        expect(form.get_by_label("Accent", exact=True)).to_have_value("#0b7a4b")
        expect(form.get_by_label("Locale", exact=True)).to_have_value("de")
        expect(form.get_by_label("Starter question 1", exact=True)).to_have_value(
            "Do you deliver on Saturdays?"
        )
    finally:
        tab.close()
