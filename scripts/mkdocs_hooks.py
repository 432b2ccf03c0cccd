"""mkdocs hooks: the README as the site's start page, and the repository files pages link to.

Pages link as GitHub shows them (`../../config.example.toml`, `../README.md`); these hooks
make the same links work in the built site. See docs/contributors/docs.md.
"""

from __future__ import annotations

import posixpath
import re
from pathlib import Path

from mkdocs.structure.files import File, Files, InclusionLevel

REPO = Path(__file__).resolve().parent.parent
START = "start.md"  # the README, as the site's start page
SHOWN_AT = "_repo"  # where the site keeps repository files that pages link to
LINK = re.compile(r"(\]\()([^)\s]+)(\))")
FENCE = re.compile(r"^\s*```")


def _links(text: str):
    """The relative link targets of Markdown text, outside fenced code."""
    fenced = False
    for line in text.splitlines():
        if FENCE.match(line):
            fenced = not fenced
        elif not fenced:
            for match in LINK.finditer(line):
                target = match.group(2).split("#", 1)[0]
                if target and not re.match(r"^[a-z]+:", target):
                    yield target


def _repo_path(src_uri: str, target: str) -> str:
    """The repository path a link of a page under docs/ (or of the README) points at."""
    base = "" if src_uri == START else posixpath.join("docs", posixpath.dirname(src_uri))
    return posixpath.normpath(posixpath.join(base, target))


def _readme_markdown() -> str:
    """The README with its links written from docs/, where the start page sits."""

    def move(match: re.Match) -> str:
        target = match.group(2)
        if re.match(r"^([a-z]+:|#)", target):
            return match.group(0)
        path = posixpath.normpath(target)
        moved = path[len("docs/") :] if path.startswith("docs/") else "../" + path
        return match.group(1) + moved + match.group(3)

    return LINK.sub(move, (REPO / "README.md").read_text(encoding="utf-8"))


def on_files(files: Files, config) -> Files:
    """Add the start page and every repository file outside docs/ that a page links to."""
    files.append(File.generated(config, START, content=_readme_markdown()))
    wanted: set[str] = set()
    for file in list(files):
        if file.src_uri.endswith(".md"):
            text = file.content_string
            wanted.update(_repo_path(file.src_uri, target) for target in _links(text))
    for path in sorted(wanted):
        if path.startswith("docs/") or path == "README.md" or not (REPO / path).is_file():
            continue
        shown = File(
            "../" + path,
            config.docs_dir,
            config.site_dir,
            config.use_directory_urls,
            dest_uri=f"{SHOWN_AT}/{path}",
            inclusion=InclusionLevel.INCLUDED,  # "../" would read as a hidden file
        )
        files.append(shown)
    return files


def on_page_markdown(markdown: str, page, config, files) -> str:
    """Point the pages' links to the README at the start page."""

    def to_start(match: re.Match) -> str:
        target, _, anchor = match.group(2).partition("#")
        if not target or _repo_path(page.file.src_uri, target) != "README.md":
            return match.group(0)
        link = posixpath.relpath(START, posixpath.dirname(page.file.src_uri) or ".")
        return match.group(1) + link + ("#" + anchor if anchor else "") + match.group(3)

    return LINK.sub(to_start, markdown)
