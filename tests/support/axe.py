"""axe-core in a dashboard page: its serious and critical findings (issue 31 item 8)."""

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
