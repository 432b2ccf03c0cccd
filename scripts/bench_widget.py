"""Benchmark the widget: its gzipped size and how soon a visitor can open it.

Usage: python scripts/bench_widget.py [--baseline OLD_WIDGET_JS] [--runs 10]
Targets (issue 22): under 25 KB gzipped with appearance, languages, starters and inline mode.
Time to launcher: from the host page's navigation start until the launcher is on the page,
median of fresh browser contexts (cold: nothing cached) and of reloads (warm: the script,
config and locale revalidated from the HTTP cache); time to open: a click until the panel is
shown. With --baseline, an older widget.js (`git show main:agentsvc/static/widget.js`) is
measured in the same run, served from the host page's own server (it reads no config).
Needs Debian's Chromium (/usr/bin/chromium, or its headless shell) and Playwright for Python.
"""

from __future__ import annotations

import argparse
import asyncio
import gzip
import json
import statistics
import sys
import threading
import urllib.request
from pathlib import Path

from aiohttp import web

sys.path.insert(0, str(Path(__file__).resolve().parent))
import benchlib  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
WIDGET = ROOT / "agentsvc" / "static" / "widget.js"
# Debian's full browser, else its headless shell (what the browser tests use).
CHROMIUM = next(
    (
        p
        for p in ("/usr/bin/chromium", "/usr/lib/chromium/chromium-headless-shell")
        if Path(p).exists()
    ),
    "/usr/bin/chromium",
)
# Records when the widget's host element lands in the page (before any script of the page).
WATCH = """
new MutationObserver((changes, observer) => {
  if (document.getElementById('agentsvc-widget')) {
    window.launcherAt = performance.now();
    observer.disconnect();
  }
}).observe(document, {childList: true, subtree: true});
"""


def gzipped(path: Path) -> int:
    return len(gzip.compress(path.read_bytes(), compresslevel=9, mtime=0))


def host_site(service: str, agent_id: str, baseline: Path | None) -> str:
    """A host page on another origin: /new embeds this instance's widget, /old the baseline."""
    loop = asyncio.new_event_loop()
    threading.Thread(target=loop.run_forever, daemon=True).start()

    def page(src: str) -> str:
        config = json.dumps({"agentId": agent_id, "serviceUrl": service})
        return (
            "<!doctype html><html lang='en'><head><meta charset='utf-8'><title>Shop</title>"
            f"<script>window.agentsvcConfig = {config};</script>"
            f"<script src='{src}' async></script></head><body><h1>A shop</h1></body></html>"
        )

    async def new(request):
        return web.Response(text=page(service + "/widget.js"), content_type="text/html")

    async def old(request):
        return web.Response(text=page("/old/widget.js"), content_type="text/html")

    async def old_script(request):
        assert baseline is not None
        return web.Response(body=baseline.read_bytes(), content_type="text/javascript")

    app = web.Application()
    app.router.add_get("/new", new)
    app.router.add_get("/old", old)
    app.router.add_get("/old/widget.js", old_script)

    async def serve() -> int:
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        return runner.addresses[0][1]

    port = asyncio.run_coroutine_threadsafe(serve(), loop).result(10)
    return f"http://127.0.0.1:{port}"


def measure(browser, url: str, runs: int) -> dict[str, float]:
    cold, warm, opened = [], [], []
    for _ in range(runs):
        context = browser.new_context(viewport={"width": 1200, "height": 800})
        context.add_init_script(WATCH)
        page = context.new_page()
        for attempt in (cold, warm):
            page.goto(url)
            page.wait_for_function("() => window.launcherAt !== undefined", timeout=15_000)
            attempt.append(page.evaluate("window.launcherAt"))
        page.wait_for_function("() => window.agentsvc && window.agentsvc.ready === true")
        opened.append(
            page.evaluate(
                """() => new Promise((resolve) => {
                    const root = document.getElementById('agentsvc-widget').shadowRoot;
                    const started = performance.now();
                    root.querySelector('.launcher').click();
                    requestAnimationFrame(() => requestAnimationFrame(() => {
                        const panel = root.querySelector('[role=dialog]');
                        resolve(panel && !panel.hidden ? performance.now() - started : -1);
                    }));
                })"""
            )
        )
        context.close()
    return {
        "launcher cold ms": statistics.median(cold),
        "launcher warm ms": statistics.median(warm),
        "click to panel ms": statistics.median(opened),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--baseline", type=Path, help="an older widget.js to compare with")
    parser.add_argument("--runs", type=int, default=10)
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    figures: dict[str, object] = {"gzipped bytes": gzipped(WIDGET)}
    if args.baseline:
        figures["baseline gzipped bytes"] = gzipped(args.baseline)
    with benchlib.service() as (base, _data, config):
        key = benchlib.api_key(config)
        request = urllib.request.Request(
            base + "/api/v1/agents",
            data=json.dumps({"name": "Shop"}).encode(),
            headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=10) as resp:  # noqa: S310 (loopback)
            agent_id = json.loads(resp.read())["data"]["id"]
        host = host_site(base, agent_id, args.baseline)
        with sync_playwright() as pw:
            browser = pw.chromium.launch(
                executable_path=CHROMIUM, args=["--headless", "--no-sandbox", "--disable-gpu"]
            )
            # A freshly started server answers its first requests slowly (imports, caches,
            # start-up work): warm it up, then measure both pages in alternation.
            measure(browser, host + "/new", 3)
            pages = [("", host + "/new")]
            if args.baseline:
                pages.append(("baseline ", host + "/old"))
            results: dict[str, list[dict[str, float]]] = {prefix: [] for prefix, _ in pages}
            for _ in range(args.runs):
                for prefix, url in pages:
                    results[prefix].append(measure(browser, url, 1))
            for prefix, runs in results.items():
                for name in runs[0]:
                    figures[prefix + name] = round(statistics.median(r[name] for r in runs), 1)
            browser.close()
    size = int(figures["gzipped bytes"])  # type: ignore[call-overload]
    benchlib.record("widget", "gzipped size", size, "bytes", "< 25600")
    benchlib.record("widget", "time to launcher, cold", figures["launcher cold ms"], "ms")  # type: ignore[arg-type]
    violations = [f"widget.js is {size} bytes gzipped (limit 25,600)"] if size >= 25600 else []
    return benchlib.print_report(figures, violations, "widget.js is under 25 KB gzipped")


if __name__ == "__main__":
    sys.exit(main())
