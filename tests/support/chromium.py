"""The browser the browser tests drive: Debian's Chromium headless shell, through Playwright.

The headless shell (package chromium-headless-shell) draws the same pages with the same
Blink and V8 as the full browser, without its windowing and compositor; on these 2 cores it
runs the browser tests on half the processor time (214 s against 453 s). It has no
notification permission (it answers "denied" whatever a context grants), so the desk's test
of desktop notifications stands in for a browser where the member allowed them.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from playwright.sync_api import expect

CHROMIUM = "/usr/lib/chromium/chromium-headless-shell"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    # One renderer process for a page and its frames of other origins (the widget's, a
    # provider's): the same origins' rules, fewer processes. 291 s of processor time for the
    # browser tests instead of 302 (the GPU process in the browser's, --in-process-gpu,
    # saved nothing).
    "--disable-features=site-per-process,IsolateOrigins,PaintHolding",
]


def launch(playwright):
    """Chromium through `playwright`; missing, every browser test fails (never skips)."""
    # An assertion waits up to 10 s (Playwright's default is 5): beside the workers' tests
    # on 2 cores a page is now and then drawn after 5 s. One that holds returns at once.
    expect.set_options(timeout=10_000)
    if not Path(CHROMIUM).exists():
        hint = "apt-get install -y chromium-headless-shell (bash scripts/test.sh does)"
        where = "in CI" if os.environ.get("CI") == "true" else "locally"
        pytest.fail(f"{CHROMIUM} is missing {where}: {hint}", pytrace=False)
    return playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
