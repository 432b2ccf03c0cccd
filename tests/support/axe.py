"""axe-core in a dashboard page: its serious and critical findings (issue 31 item 8), and
whether the page scrolls sideways."""

from __future__ import annotations

from pathlib import Path

from playwright.sync_api import Page

AXE = Path(__file__).resolve().parents[1] / "browser" / "node_modules" / "axe-core" / "axe.min.js"


def serious_violations(page: Page, selector: str = "body") -> list[dict]:
    """axe-core's serious and critical findings inside one element: rule, impact, elements."""
    assert AXE.exists(), f"{AXE} is missing: run `npm install --prefix tests/browser`"
    if not page.evaluate("() => typeof axe !== 'undefined'"):
        page.evaluate(AXE.read_text("utf-8"))  # not a script tag: the CSP forbids those
    found = page.evaluate(
        """async (selector) => (await axe.run({include: [[selector]]},
            {resultTypes: ["violations"]})).violations.map(
            v => ({id: v.id, impact: v.impact, nodes: v.nodes.map(n => n.target.join(" "))}))""",
        selector,
    )
    return [v for v in found if v["impact"] in ("serious", "critical")]


def overflow(page: Page) -> int:
    """How far the document is wider than the viewport (0: no sideways scrolling)."""
    return page.evaluate(
        "() => Math.max(document.documentElement.scrollWidth, document.body.scrollWidth)"
        " - window.innerWidth"
    )


def findings_at_both_widths(page: Page) -> list[str]:
    """axe-core's serious findings in `main`, and sideways scrolling, at 1280 and 390 px."""
    found = []
    for width, height in ((1280, 860), (390, 844)):
        page.set_viewport_size({"width": width, "height": height})
        found += [f"{width} px: {v}" for v in serious_violations(page, "main")]
        if overflow(page) > 0:
            found.append(f"{width} px: {overflow(page)} px wider than the screen")
    page.set_viewport_size({"width": 1280, "height": 860})
    return found
