"""Helpers of the browser tests: loading the host page, polling the API, reading PNGs."""

from __future__ import annotations

import struct
import time
import zlib
from collections.abc import Callable
from typing import Any


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
    """Decode an 8-bit RGB/RGBA PNG (what Chromium writes) into rows of RGBA bytes."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat, width = 8, b"", 0
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos : pos + 4])
        kind = data[pos + 4 : pos + 8]
        chunk = data[pos + 8 : pos + 8 + length]
        if kind == b"IHDR":
            width, height, depth, color = struct.unpack(">IIBB", chunk[:10])
            assert depth == 8 and color in (2, 6), (depth, color)
            bpp = 4 if color == 6 else 3
        elif kind == b"IDAT":
            idat += chunk
        pos += 12 + length
    raw = zlib.decompress(idat)
    stride = width * bpp
    rows, prev = [], bytearray(stride)
    for y in range(height):
        filt = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1 : (y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b = prev[i]
            c = prev[i - bpp] if i >= bpp else 0
            if filt == 1:
                line[i] = (line[i] + a) & 255
            elif filt == 2:
                line[i] = (line[i] + b) & 255
            elif filt == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif filt == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                pred = a if pa <= pb and pa <= pc else b if pb <= pc else c
                line[i] = (line[i] + pred) & 255
        rows.append(bytes(line) if bpp == 4 else _rgba(bytes(line)))
        prev = line
    return width, height, rows


def _rgba(rgb: bytes) -> bytes:
    return b"".join(rgb[i : i + 3] + b"\xff" for i in range(0, len(rgb), 3))


def pixel(rows: list[bytes], x: int, y: int) -> tuple[int, int, int]:
    r, g, b, _ = rows[y][x * 4 : x * 4 + 4]
    return r, g, b
