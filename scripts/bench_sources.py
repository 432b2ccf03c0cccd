"""Sources benchmark: crawl and index a site of 1,000 pages, then sync it again unchanged.

A site process on 127.0.0.1 (aiohttp, pinned to the second core when there is one) serves
a sitemap of `--pages` HTML pages, each with an ETag, answering 304 to a conditional
request, and counts the requests. `agentsvc serve` (pinned to the first core, as every
benchmark runs it) syncs a `sitemap` source of them through its API: the first sync
fetches, extracts (trafilatura), chunks and indexes every page; the second one must make
one conditional request per page and index nothing.

    python scripts/bench_sources.py [--pages 1000]

Targets (2 cores): the first sync under 60 s; the second under 10 s, with exactly one
conditional request per page and no page indexed again.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from scripts import benchlib  # noqa: E402

FIRST_TARGET_SECONDS = 60.0
RESYNC_TARGET_SECONDS = 10.0

SITE = r"""
import hashlib, random, sys
from aiohttp import web

PAGES = int(sys.argv[2])
WORDS = "refund parcel shipping order return warranty size colour price delivery store".split()
stats = {"requests": 0, "conditional": 0, "full": 0}

def body_of(n):
    rng = random.Random(n)
    paras = "".join(
        "<h2>Section %d</h2><p>%s.</p>" % (s, " ".join(rng.choice(WORDS) for _ in range(60)))
        for s in range(3)
    )
    links = " ".join('<a href="/p/%d">page %d</a>' % (m, m) for m in (n + 1, n + 7))
    return ("<html><head><title>Page %d</title></head><body><nav>%s</nav><main><h1>Page %d"
            "</h1>%s</main><footer>Shop</footer></body></html>" % (n, links, n, paras)).encode()

BODIES = [body_of(n) for n in range(PAGES)]
ETAGS = ['"%s"' % hashlib.sha256(b).hexdigest()[:16] for b in BODIES]

async def page(request):
    n = int(request.match_info["n"])
    stats["requests"] += 1
    if "If-None-Match" in request.headers:
        stats["conditional"] += 1
        if request.headers["If-None-Match"] == ETAGS[n]:
            return web.Response(status=304, headers={"ETag": ETAGS[n]})
    stats["full"] += 1
    return web.Response(body=BODIES[n], headers={"ETag": ETAGS[n], "Content-Type": "text/html"})

async def sitemap(request):
    base = f"http://{request.host}"
    items = "".join(f"<url><loc>{base}/p/{n}</loc></url>" for n in range(PAGES))
    xml = f'<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{items}</urlset>'
    return web.Response(text=xml, content_type="application/xml")

async def robots(request):
    return web.Response(text="User-agent: *\nAllow: /\n")

async def get_stats(request):
    return web.json_response(stats)

async def reset(request):
    stats.update(requests=0, conditional=0, full=0)
    return web.json_response(stats)

app = web.Application()
app.router.add_get("/p/{n}", page)
app.router.add_get("/sitemap.xml", sitemap)
app.router.add_get("/robots.txt", robots)
app.router.add_get("/__stats", get_stats)
app.router.add_post("/__reset", reset)
web.run_app(app, host="127.0.0.1", port=int(sys.argv[1]), print=None, access_log=None)
"""


def _call(method: str, url: str, key: str = "", body: dict | None = None) -> dict:
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url, data=data, method=method)
    req.add_header("Content-Type", "application/json")
    if key:
        req.add_header("Authorization", f"Bearer {key}")
    with urllib.request.urlopen(req, timeout=30) as resp:
        return json.loads(resp.read())


def _synced(base: str, key: str, source_id: str, timeout: float = 300) -> tuple[dict, float]:
    started = time.monotonic()
    while True:
        found = _call("GET", f"{base}/api/v1/sources/{source_id}", key)["data"]
        if found["status"] in ("ready", "failed"):
            return found, time.monotonic() - started
        if time.monotonic() - started > timeout:
            raise RuntimeError(f"the sync did not end: {found}")
        time.sleep(0.05)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pages", type=int, default=1000)
    args = parser.parse_args()
    port = benchlib.free_port()
    pinned = ["taskset", "-c", "1"] if (os.cpu_count() or 1) > 1 else []
    site = subprocess.Popen([*pinned, sys.executable, "-c", SITE, str(port), str(args.pages)])
    site_url = f"http://127.0.0.1:{port}"
    extra = (
        "[outbound]\nallow_private = true\n"  # the site is on loopback
        "[sources]\nhost_delay_seconds = 0\nhost_concurrency = 8\n"
    )
    try:
        benchlib.wait_http(f"{site_url}/robots.txt")
        with benchlib.service(extra) as (base, _tmp, config):
            key = benchlib.api_key(config)
            agent = _call("POST", f"{base}/api/v1/agents", key, {"name": "Bench shop"})
            agent_id = agent["data"]["id"] if "data" in agent else agent["id"]
            body = {"type": "sitemap", "url": f"{site_url}/sitemap.xml", "schedule": "off"}
            created = _call("POST", f"{base}/api/v1/agents/{agent_id}/sources", key, body)
            source_id = created["data"]["id"]
            first, first_s = _synced(base, key, source_id)
            _call("POST", f"{site_url}/__reset")
            _call("POST", f"{base}/api/v1/sources/{source_id}/sync", key, {})
            second, second_s = _synced(base, key, source_id)
            stats = _call("GET", f"{site_url}/__stats")
    finally:
        site.terminate()
        site.wait(10)
    figures = {
        "pages": args.pages,
        "first sync": f"{first_s:.1f} s ({args.pages / first_s:.0f} pages/s), {first['pages']}",
        "re-sync": f"{second_s:.2f} s, {second['pages']}",
        "re-sync requests": f"{stats['requests']} ({stats['conditional']} conditional,"
        f" {stats['full']} answered in full)",
    }
    benchlib.record("sources", "first sync of 1,000 pages", round(first_s, 1), "s", "< 60 s")
    benchlib.record("sources", "re-sync unchanged", round(second_s, 2), "s", "< 10 s")
    violations = []
    if first["status"] != "ready" or first["pages"]["changed"] != args.pages:
        violations.append(f"the first sync did not index every page: {first}")
    if first_s > FIRST_TARGET_SECONDS:
        violations.append(f"the first sync took {first_s:.1f} s (target {FIRST_TARGET_SECONDS} s)")
    if second_s > RESYNC_TARGET_SECONDS:
        violations.append(f"the re-sync took {second_s:.1f} s (target {RESYNC_TARGET_SECONDS} s)")
    if second["pages"]["changed"] != 0:
        violations.append(f"the re-sync indexed pages again: {second['pages']}")
    if stats["conditional"] != args.pages or stats["requests"] != args.pages:
        violations.append(f"the re-sync did not make one conditional request a page: {stats}")
    return benchlib.print_report(figures, violations, "sources within their targets")


if __name__ == "__main__":
    sys.exit(main())
