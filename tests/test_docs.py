"""The docs hold together: the README stays a front door, every relative link and anchor of
README.md and docs/ resolves (anchors as GitHub and the site both compute them), the site
builds with `mkdocs build --strict`, and the runnable blocks of docs/ run as written
(docs/contributors/docs.md)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import unicodedata
from pathlib import Path

from markdown.extensions.toc import slugify

from tests.support.doc_blocks import (
    DOCS,
    MARKER,
    README,
    ROOT,
    doc_pages,
    quickstart_blocks,
    run_blocks,
    runnable_blocks,
)

FRONT_DOOR_LINES = 400
FENCE = re.compile(r"^\s*(```|~~~)")
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
HEADING = re.compile(r"^(#{1,6}) (.+?)#*$")


def _pages() -> list[Path]:
    return [README, *doc_pages()]


def _outside_fences(text: str) -> str:
    """The text with the lines of fenced code blocks blanked."""
    kept, fenced = [], False
    for line in text.splitlines():
        if FENCE.match(line):
            fenced = not fenced
            line = ""
        kept.append("" if fenced else line)
    return "\n".join(kept)


def _prose(text: str) -> str:
    """The text outside fenced code, inline code and HTML comments."""
    prose = re.sub(r"<!--.*?-->", "", _outside_fences(text), flags=re.S)
    return re.sub(r"(`+)(?:(?!\1).)+?\1", "", prose, flags=re.S)


def _headings(text: str) -> list[str]:
    """The text of every heading of a page, as it reads (inline code without backticks)."""
    found = []
    for line in _outside_fences(text).splitlines():
        if match := HEADING.match(line):
            found.append(match.group(2).replace("`", "").strip())
    return found


def github_anchor(heading: str) -> str:
    """The anchor GitHub gives a heading: lower case, only word characters, `-` and spaces,
    each space a `-`."""
    return re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-")


def site_anchor(heading: str) -> str:
    """The anchor the site gives a heading (Python-Markdown's toc, as mkdocs uses it)."""
    return slugify(heading, "-")


def _anchors(page: Path) -> set[str]:
    return {github_anchor(h) for h in _headings(page.read_text("utf-8"))}


def test_readme_is_the_front_door():
    text = README.read_text("utf-8")
    assert len(text.splitlines()) <= FRONT_DOOR_LINES
    # The two commands open it: install and run, install test dependencies and run the tests.
    first = re.search(r"^```sh\n(.*?)^```$", text, re.S | re.M).group(1)
    assert first.startswith("pip install -e . && agentsvc serve "), first
    assert "\nbash scripts/test.sh " in "\n" + first
    assert "(docs/index.md)" in text
    assert "tests/browser/artefacts/widget-default.png" in text
    assert quickstart_blocks()


def test_every_relative_link_and_anchor_resolves():
    broken = []
    for page in _pages():
        for target in LINK.findall(_prose(page.read_text("utf-8"))):
            if re.match(r"^[a-z][a-z0-9+.-]*:", target):
                continue  # https:, mailto:
            path, _, anchor = target.partition("#")
            dest = (page.parent / path).resolve() if path else page
            where = f"{page.relative_to(ROOT)}: {target}"
            if not dest.exists():
                broken.append(f"{where} (no such file)")
            elif anchor and (dest.suffix != ".md" or anchor not in _anchors(dest)):
                broken.append(f"{where} (no such heading)")
    assert broken == []


def test_links_find_the_pages_and_files_they_mean():
    """The link check itself finds links in prose, and not in code."""
    text = "See [a](x.md#b) and\n[`c`\nd](../e.md).\n```sh\n[f](g.md)\n```\n"
    text += "`[h](i.md)` <!-- [j](k.md) -->"
    assert LINK.findall(_prose(text)) == ["x.md#b", "../e.md"]


def test_headings_have_one_anchor_on_github_and_on_the_site():
    """Each heading's anchor is the same by GitHub's rule and by the site's, and unique in
    its page, so one `#anchor` works in both (docs/contributors/docs.md)."""
    differ, repeated = [], []
    for page in _pages():
        seen: set[str] = set()
        for heading in _headings(page.read_text("utf-8")):
            ascii_only = unicodedata.normalize("NFKD", heading).isascii()
            if not ascii_only or github_anchor(heading) != site_anchor(heading):
                differ.append(f"{page.relative_to(ROOT)}: {heading!r}")
            if github_anchor(heading) in seen:
                repeated.append(f"{page.relative_to(ROOT)}: {heading!r}")
            seen.add(github_anchor(heading))
    assert differ == []
    assert repeated == []
    assert github_anchor("Outgrowing one box: PostgreSQL, Redis, several processes") == (
        "outgrowing-one-box-postgresql-redis-several-processes"
    )
    assert github_anchor("End users' data: export, erasure, retention") == site_anchor(
        "End users' data: export, erasure, retention"
    )


def test_every_page_is_in_the_nav_and_the_index():
    nav = (ROOT / "mkdocs.yml").read_text("utf-8")
    index = (DOCS / "index.md").read_text("utf-8")
    for page in doc_pages():
        name = page.relative_to(DOCS).as_posix()
        if name == "index.md":
            continue
        assert re.search(rf"^\s+- (\w+: )?{re.escape(name)}$", nav, re.M), name
        assert f"]({name})" in index, name


def test_site_builds_strictly(tmp_path):
    site = tmp_path / "site"
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "WARNING" not in done.stderr, done.stderr
    # The README is the start page, and the pictures the pages show are in the site.
    start = (site / "start" / "index.html").read_text("utf-8")
    assert "Five-minute start" in start
    assert (site / "_repo/tests/browser/artefacts/widget-default.png").is_file()
    assert 'href="../owners/agents/#models-and-providers"' in start


def test_runnable_blocks_are_marked_sh_blocks():
    blocks = runnable_blocks()
    assert len(blocks) >= 3, blocks
    at_line_start = re.compile(rf"^{re.escape(MARKER)}$", re.M)
    marked = sum(len(at_line_start.findall(page.read_text("utf-8"))) for page in doc_pages())
    assert marked == len(blocks), "a runnable marker must stand just before a ```sh fence"


def test_runnable_blocks_of_the_docs_run_as_written(tmp_path):
    blocks = [("README.md", block) for block in quickstart_blocks()] + runnable_blocks()
    with run_blocks(blocks, tmp_path) as run:
        assert run.code == 0, run.report()
        squeezed = run.stdout.replace(" ", "")
        # docs/owners/triggers.md made a trigger; docs/owners/review.md a curated answer.
        assert '"name":"Pricinghelp"' in squeezed, run.stdout
        assert '"answer":"Wesellcapsandbeanies,nothats."' in squeezed, run.stdout
        # docs/integrators/conversations.md saved an export under the server's name.
        export = run.work / "conversations-support.csv"
        assert export.read_text("utf-8").startswith("conversationId,"), run.report()


def test_the_nginx_configuration_shown_is_the_one_the_cluster_test_runs():
    text = (DOCS / "operators/growing.md").read_text("utf-8")
    shown = re.search(r"^```nginx\n(.*?)^```$", text, re.S | re.M).group(1)
    assert shown == (ROOT / "scripts/nginx_cluster.conf").read_text("utf-8")
