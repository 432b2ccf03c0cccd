"""Fixtures of the dashboard's browser tests: one instance and one Chromium for the package.

The test files run in the order of their numbers, like a user's first day: the first
creates the owner, the owner's flows create the agent, tools, trigger and conversations
that the later files read. A missing Chromium fails these tests; they never skip.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, sync_playwright

from tests.browser_dashboard.stack import CHROMIUM, CHROMIUM_ARGS, Stack, Tab


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Run this package's files by their number (test_10 after test_9, not after test_1),
    keeping every other test where it was."""
    here = Path(__file__).parent
    slots = [i for i, item in enumerate(items) if Path(item.fspath).parent == here]

    def number(item: pytest.Item) -> int:
        found = re.match(r"test_(\d+)_", Path(item.fspath).name)
        return int(found.group(1)) if found else 0

    ordered = sorted((items[i] for i in slots), key=number)  # stable: order within a file kept
    for slot, item in zip(slots, ordered, strict=True):
        items[slot] = item


@pytest.fixture(scope="package")
def stack(tmp_path_factory) -> Iterator[Stack]:
    running = Stack(tmp_path_factory.mktemp("dashboard"))
    running.start()
    yield running
    running.stop()


@pytest.fixture(scope="package")
def browser() -> Iterator[Browser]:
    assert Path(CHROMIUM).exists(), f"Chromium is required at {CHROMIUM} (apt-get install chromium)"
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield launched
        launched.close()


@pytest.fixture(scope="package")
def shots(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("dashboard-screenshots")


@pytest.fixture
def tab(browser, stack) -> Iterator[Tab]:
    opened = Tab(browser, stack)
    yield opened
    opened.close()
