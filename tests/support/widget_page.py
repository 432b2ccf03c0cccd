"""Helpers of the browser tests: loading the host page, polling the API, reading PNGs."""

from __future__ import annotations

import io
import time
from collections.abc import Callable
from typing import Any

from PIL import Image


def load(page, stack, path: str = "/") -> None:
    """Open a host page and wait until the widget has loaded its triggers."""
    page.goto(stack.host_url + path)
    page.wait_for_function("() => window.agentsvc && window.agentsvc.ready === true")


def launcher(page):
    return page.get_by_role("button", name="Open chat")


def eventually(check: Callable[[], Any], timeout: float = 5.0) -> Any:
    """Poll `check` until it returns a truthy value (server-side effects land async)."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value or time.monotonic() > deadline:
            return value
        time.sleep(0.05)


def trigger(stack, agent_id: str, **fields: Any) -> dict:
    return stack.api("POST", f"/triggers?agentId={agent_id}", fields)


def stats(stack, agent_id: str) -> dict:
    return stack.api("GET", f"/triggers/stats?agentId={agent_id}")


def read_png(data: bytes) -> tuple[int, int, list[bytes]]:
    """Decode a PNG (what Chromium writes) into rows of RGBA bytes, with Pillow (in C: the
    pure-Python decoder this replaced took 0.7 s of CPU for a 1200x800 screenshot)."""
    with Image.open(io.BytesIO(data)) as image:
        assert image.format == "PNG", image.format
        rgba = image.convert("RGBA")
    width, height = rgba.size
    raw, stride = rgba.tobytes(), width * 4
    return width, height, [raw[y * stride : (y + 1) * stride] for y in range(height)]


def pixel(rows: list[bytes], x: int, y: int) -> tuple[int, int, int]:
    r, g, b, _ = rows[y][x * 4 : x * 4 + 4]
    return r, g, b
