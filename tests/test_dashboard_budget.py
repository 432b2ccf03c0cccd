"""The dashboard's download budget (issue 31): every script and style sheet the page loads, as
the server sends it (the bundle, gzipped), at most 80 KB in all; the committed bundle was built
from the sources as they are; and the build script makes a bundle that V8 compiles, which the
server sends only while its sources are unchanged."""

from __future__ import annotations

import gzip
import json
import logging
import re
import shutil
import subprocess
from pathlib import Path

from agentsvc.api.dashboard import (
    BUNDLE_DIR,
    STALE_BUNDLE,
    STATIC_DIR,
    built_bundle,
    load_assets,
    source_digest,
)

BUDGET = 80_000  # bytes: issue 31's "80 KB gzipped"
# A module or sheet named in the page or in a module: "./x.js" in imports, "/dashboard/x.css".
REFERENCE = re.compile(
    r"""["'](?:\./|/dashboard/(?:[0-9a-f]{16}/)?)([a-z0-9][a-z0-9-]*\.(?:js|css))["']"""
)
BUILD = Path(__file__).resolve().parent.parent / "scripts" / "build_dashboard.sh"
STALE = STALE_BUNDLE + ", and commit agentsvc/static/dashboard/bundle/"


async def _sent_gzipped(client) -> dict[str, int]:
    """Every file the page loads, followed through the imports: its size as sent, gzipped."""
    page = await (await client.get("/", headers={"Accept-Encoding": "gzip"})).text()
    pending, sizes = REFERENCE.findall(page), {}
    while pending:
        name = pending.pop()
        if name in sizes:
            continue
        resp = await client.get(
            f"/dashboard/{name}", headers={"Accept-Encoding": "gzip"}, auto_decompress=False
        )
        assert resp.status == 200, name
        assert resp.headers["Content-Encoding"] == "gzip", name
        raw = await resp.read()
        sizes[name] = len(raw)
        pending += REFERENCE.findall(gzip.decompress(raw).decode("utf-8"))
    return sizes


async def test_the_dashboard_downloads_at_most_80_kb_gzipped(client):
    # The committed bundle was built from the sources as they are (else the page loads those).
    assert built_bundle() is not None, STALE
    sizes = await _sent_gzipped(client)
    assert set(sizes) == {"app.js", "app.css"}, sizes  # one script, one style sheet
    total = sum(sizes.values())
    print(f"dashboard: {total:,} bytes gzipped as sent ({sizes})")
    assert total <= BUDGET, f"{total:,} bytes over the {BUDGET:,} budget: {sizes}"


def _build(output: Path) -> None:
    built = subprocess.run(  # noqa: S603 (the project's own script)
        ["bash", str(BUILD), str(output)], capture_output=True, text=True, check=False
    )
    assert built.returncode == 0, built.stdout + built.stderr


def test_the_build_makes_a_bundle_that_compiles_and_names_its_sources(tmp_path):
    """Built into a temporary copy of the dashboard, never compared byte for byte with the
    committed bundle (another esbuild release may write other bytes)."""
    node = shutil.which("node")
    assert node, "node is required (apt-get install nodejs)"
    copy = tmp_path / "dashboard"
    shutil.copytree(STATIC_DIR, copy, ignore=shutil.ignore_patterns(BUNDLE_DIR))
    _build(copy / BUNDLE_DIR)
    manifest = json.loads((copy / BUNDLE_DIR / "manifest.json").read_text())
    assert manifest["sources"] == source_digest(copy) == source_digest()
    script = (copy / BUNDLE_DIR / "app.js").read_bytes()
    # V8 parses it as a module, and as a classic script too: no import, export or
    # import.meta is left (a bundle's module URL is not its sources').
    for kind in ("mjs", "cjs"):
        (tmp_path / f"app.{kind}").write_bytes(script)
        checked = subprocess.run(  # noqa: S603 (node on a file this test built)
            [node, "--check", str(tmp_path / f"app.{kind}")],
            capture_output=True,
            text=True,
            check=False,
        )
        assert checked.returncode == 0, kind + ": " + checked.stderr
    assert len((copy / BUNDLE_DIR / "app.css").read_bytes()) < len((copy / "app.css").read_bytes())

    assets = load_assets(copy)
    assert assets["app.js"].body == script
    page = assets["index.html"].body.decode()
    assert "modulepreload" not in page  # one script: nothing else to fetch
    assert assets["dom.js"].body == (copy / "dom.js").read_bytes()  # a source, by its name


def test_a_bundle_older_than_its_sources_is_not_sent(tmp_path, caplog):
    """A contributor edited a page and has not rebuilt: the page loads the source modules as
    they are (naming every one, for the browser to fetch at once), and a warning says what to
    run. Every module is imported by the dashboard: none is dead."""
    copy = tmp_path / "dashboard"
    shutil.copytree(STATIC_DIR, copy, ignore=shutil.ignore_patterns(BUNDLE_DIR))
    _build(copy / BUNDLE_DIR)
    assert built_bundle(copy) is not None
    with (copy / "dom.js").open("a") as source:
        source.write("// edited\n")
    assert built_bundle(copy) is None
    with caplog.at_level(logging.WARNING, logger="agentsvc.api.dashboard"):
        assets = load_assets(copy)
    assert [r.getMessage() for r in caplog.records] == [STALE_BUNDLE]
    assert "run scripts/build_dashboard.sh" in STALE_BUNDLE
    assert assets["app.js"].body == (copy / "app.js").read_bytes()
    assert assets["app.css"].body == (copy / "app.css").read_bytes()
    page = assets["index.html"].body.decode()
    release = assets["app.js"].release
    preloaded = set(re.findall(rf'rel="modulepreload" href="/dashboard/{release}/([^"]+)"', page))
    assert preloaded == {p.name for p in copy.glob("*.js")} - {"app.js"}
    # No bundle at all, or a half-written one, is stale too.
    (copy / BUNDLE_DIR / "manifest.json").write_text("{")
    assert built_bundle(copy) is None
    shutil.rmtree(copy / BUNDLE_DIR)
    assert built_bundle(copy) is None
    assert load_assets(copy)["app.js"].body == (copy / "app.js").read_bytes()
