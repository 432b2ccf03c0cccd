"""Every page of the dashboard (app.js's sections and detail pages, and the sign-in page) on a
shop with realistic data: axe-core finds no serious or critical violation at 1280 and at 390
px wide, and each page is pictured at 1280x800 for the owners' docs (issue 31 item 8).

`AGENTSVC_WRITE_ARTEFACTS=1 python3 -m pytest tests/browser_dashboard/test_16_every_page.py`
rewrites the pictures under tests/browser/artefacts/ (dashboard-PAGE.png).
"""

from __future__ import annotations

import os
from pathlib import Path

from playwright.sync_api import Page, expect

from tests.support.axe import serious_violations
from tests.support.dashboard_shop import Shop, open_shop
from tests.support.dashboard_stack import ensure_owner, in_owners_team, sign_in

ARTEFACTS = Path(__file__).resolve().parents[1] / "browser" / "artefacts"
# Sections of app.js's NAV, in its order; the inbox and the channels are checked here but
# pictured by their own tests (test_17, test_20), in use.
SECTIONS = [
    "agents",
    "inbox",
    "knowledge",
    "tools",
    "triggers",
    "preview",
    "conversations",
    "review",
    "submissions",
    "analytics",
    "usage",
    "widget",
    "channels",
    "team",
    "api-keys",
    "secrets",
    "webhooks",
    "audit-log",
    "profile",
]
UNPICTURED = {"inbox", "channels"}
# Long pages pictured at their point (the builder, the header rows) rather than their top.
FOCUS = {"form-builder": "fieldset[data-for=form]", "tool": "fieldset[data-for=http]"}


def _details(shop: Shop) -> dict[str, str]:
    """The detail pages of app.js's DETAIL routes (and the new-item forms): name -> hash."""
    return {
        "agent": f"agents/{shop.agent}",
        "new-agent": "agents/new",
        "document": f"knowledge/{shop.document}",
        "sources": "knowledge/sources",
        "tool": f"tools/{shop.tool}",
        "form-builder": f"tools/{shop.form}",
        "new-tool": "tools/new",
        "trigger": f"triggers/{shop.trigger}",
        "new-trigger": "triggers/new",
        "conversation": f"conversations/{shop.conversation}",
        "submission": f"submissions/{shop.submission}",
        "webhook": f"webhooks/{shop.webhook}",
    }


def _show(page: Page, route: str) -> None:
    """Open a page by its address and wait until it has rendered (a new page element)."""
    page.evaluate(
        """(route) => {
            if (location.hash === '#/' + route) return;
            document.querySelector('main .page')?.setAttribute('data-old', '');
            location.hash = '#/' + route;
        }""",
        route,
    )
    expect(page.locator("main .page:not([data-old])")).to_be_visible()
    expect(page.locator("main")).not_to_have_attribute("aria-busy", "true")
    expect(page.locator("main h1").first).to_be_visible()
    assert page.locator("main .form-error").count() == 0, (route, page.locator("main").inner_text())


def _picture(page: Page, name: str, shots: Path) -> None:
    """Screenshot the viewport: into the committed artefacts when asked to rewrite them."""
    keep = os.environ.get("AGENTSVC_WRITE_ARTEFACTS") == "1"
    page.evaluate(
        """(focus) => focus ? document.querySelector(focus).scrollIntoView()
                           : window.scrollTo(0, 0)""",
        FOCUS.get(name),
    )
    page.screenshot(path=str((ARTEFACTS if keep else shots) / f"dashboard-{name}.png"))


def test_every_page_passes_axe_and_is_pictured(tab, stack, shots):
    ensure_owner(stack)
    shop = open_shop(stack)
    page = tab.page
    routes = {name: name for name in SECTIONS} | _details(shop)
    found: list[str] = []
    for width, height in ((1280, 800), (390, 844)):
        page.set_viewport_size({"width": width, "height": height})
        sign_in(page, stack)
        in_owners_team(page)
        if width == 1280:  # the choice is kept (localStorage) for the narrow round
            page.get_by_label("Agent", exact=True).select_option(shop.agent)
        for name, route in routes.items():
            _show(page, route)
            found += [f"{name} at {width} px: {v}" for v in serious_violations(page)]
            if width == 1280 and name not in UNPICTURED:
                _picture(page, name, shots)
        page.get_by_role("button", name="Sign out").click()
        expect(page.get_by_role("heading", name="Sign in")).to_be_visible()
        found += [f"sign-in at {width} px: {v}" for v in serious_violations(page)]
        if width == 1280:
            _picture(page, "signin", shots)
    assert found == [], "\n".join(found)
