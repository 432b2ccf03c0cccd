"""The dashboard's download budget (issue 31): every script and style sheet the page loads, as
the server sends it (minified, gzipped), at most 80 KB in all; and each minified module is the
same program as its source (`node --check`, and acorn's syntax trees compared)."""

from __future__ import annotations

import gzip
import os
import re
import shutil
import subprocess
from pathlib import Path

from agentsvc.api.dashboard import STATIC_DIR, load_assets

BUDGET = 80_000  # bytes: issue 31's "80 KB gzipped"
# A module or sheet named in the page or in a module: "./x.js" in imports, "/dashboard/x.css".
REFERENCE = re.compile(
    r"""["'](?:\./|/dashboard/(?:[0-9a-f]{16}/)?)([a-z0-9][a-z0-9-]*\.(?:js|css))["']"""
)
NODE_MODULES = Path(__file__).resolve().parent / "browser" / "node_modules"
SAME_PROGRAM = Path(__file__).resolve().parent / "support" / "same_program.mjs"


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
    sizes = await _sent_gzipped(client)
    on_disk = {p.name for p in STATIC_DIR.iterdir() if p.suffix in (".js", ".css")}
    assert set(sizes) == on_disk, on_disk ^ set(sizes)  # every file is loaded; none is dead
    total = sum(sizes.values())
    source = sum(len(gzip.compress((STATIC_DIR / n).read_bytes(), 9)) for n in sizes)
    print(f"dashboard: {total:,} bytes gzipped as sent ({source:,} for the sources gzipped)")
    assert total <= BUDGET, f"{total:,} bytes over the {BUDGET:,} budget: " + ", ".join(
        f"{n} {b:,}" for n, b in sorted(sizes.items(), key=lambda kv: -kv[1])[:8]
    )


def test_every_minified_module_is_the_same_program_as_its_source(tmp_path):
    node = shutil.which("node")
    assert node, "node is required (apt-get install nodejs)"
    acorn = NODE_MODULES / "acorn" / "dist" / "acorn.js"
    assert acorn.exists(), f"{acorn} is missing: run `npm install --prefix tests/browser`"
    pairs: list[str] = []
    for name, asset in load_assets().items():
        if not name.endswith(".js"):
            continue
        minified = tmp_path / (name[:-3] + ".mjs")
        minified.write_bytes(asset.body)
        pairs += [str(STATIC_DIR / name), str(minified)]
    assert len(pairs) > 40
    # One node process compiles each minified module with V8 and compares it with its source.
    compared = subprocess.run(  # noqa: S603 (node on files this test wrote)
        [node, "--experimental-vm-modules", str(SAME_PROGRAM), *pairs],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "ACORN": str(acorn)},
    )
    assert compared.returncode == 0, compared.stdout + compared.stderr
