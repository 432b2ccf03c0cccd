"""Fixtures of the dashboard's browser tests: one instance and one Chromium for the package.

Files 1 to 9 run in the order of their numbers, like a user's first day: the first
creates the owner, the owner's flows create the agent, tools, trigger and conversations
that the files after them read. Files 10 on each stand alone (`ensure_owner`, their own
data): scripts/test.sh runs them in two more processes, each on a stack of its own,
beside the first day. A missing Chromium fails these tests; they never skip.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, sync_playwright

from tests.support.chromium import launch
from tests.support.dashboard_stack import Stack, Tab

HERE = Path(__file__).resolve().parent


def _number(item: pytest.Item) -> int:
    match = re.match(r"test_(\d+)_", item.path.name)
    return int(match.group(1)) if match else 0


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Run this package's files by their numbers (test_11 after test_7, not after test_1),
    each file's tests in their own order, in the places the package's tests had."""
    slots = [i for i, item in enumerate(items) if item.path.parent == HERE]
    ordered = sorted((items[i] for i in slots), key=_number)  # stable: a file stays in order
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
    with sync_playwright() as playwright:
        launched = launch(playwright)
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
