"""Browser fixtures: the stack of tests/support/widget_stack.py and one Chromium.

One Chromium (Debian's, driven by Playwright) serves every browser test; each test gets a
fresh context, so storage never leaks between tests. Both fixtures are scoped to this
package, not the session: Playwright's sync API keeps an event loop marked running in the
main thread while it is open, which the other tests' asyncio runner refuses.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.chromium import launch
from tests.support.widget_stack import Stack


@pytest.fixture(scope="package")
def stack(tmp_path_factory) -> Iterator[Stack]:
    s = Stack(tmp_path_factory.mktemp("browser"))
    s.start()
    yield s
    s.stop()


@pytest.fixture(scope="package")
def browser() -> Iterator[Any]:
    """Debian's Chromium headless shell through Playwright (tests/support/chromium.py)."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        chromium = launch(pw)
        yield chromium
        chromium.close()


AXE = Path(__file__).resolve().parent / "node_modules" / "axe-core" / "axe.min.js"


@pytest.fixture(scope="package")
def axe_source() -> str:
    """axe-core's script, installed from the npm registry by scripts/test.sh
    (`npm install --prefix tests/browser`, tests/browser/package.json); never committed."""
    if not AXE.exists():
        pytest.fail(f"{AXE} is missing: run `npm install --prefix tests/browser`", pytrace=False)
    return AXE.read_text("utf-8")


@pytest.fixture
def page(browser, stack) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 1200, "height": 800})
    context.set_default_timeout(10_000)
    pg = context.new_page()
    pg.errors = []
    pg.on("pageerror", lambda exc: pg.errors.append(str(exc)))
    stack.host.body_html = ""
    stack.host.head_html = ""
    stack.host.lang = ""
    yield pg
    context.close()
    assert pg.errors == [], pg.errors
