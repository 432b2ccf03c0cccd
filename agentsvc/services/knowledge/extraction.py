"""Text out of uploaded and fetched documents: plain text, Markdown, HTML and PDF.

Every format comes out as text whose headings are Markdown `#` lines and whose paragraphs
are separated by blank lines, so one chunker serves them all.
"""

from __future__ import annotations

import io
import logging
import re
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import PurePosixPath
from typing import IO

log = logging.getLogger(__name__)

FORMATS = ("text", "markdown", "html", "pdf")
SUPPORTED = ".txt, .md, .html or .pdf"

_EXTENSIONS = {
    ".txt": "text",
    ".text": "text",
    ".md": "markdown",
    ".markdown": "markdown",
    ".html": "html",
    ".htm": "html",
    ".pdf": "pdf",
}
_MEDIA_TYPES = {
    "text/plain": "text",
    "text/markdown": "markdown",
    "text/x-markdown": "markdown",
    "text/html": "html",
    "application/xhtml+xml": "html",
    "application/pdf": "pdf",
}


class ExtractionError(Exception):
    """A document whose text cannot be read; the message says why, for users."""


@dataclass(frozen=True, slots=True)
class Extracted:
    text: str
    title: str  # the document's own title when it has one (HTML <title>), else ""


def format_of(filename: str | None, media_type: str | None) -> str | None:
    """The format named by a file's extension, else by its media type; None if unsupported."""
    if filename:
        suffix = PurePosixPath(filename).suffix.lower()
        if suffix in _EXTENSIONS:
            return _EXTENSIONS[suffix]
    if media_type:
        return _MEDIA_TYPES.get(media_type.split(";", 1)[0].strip().lower())
    return None


def decode(raw: bytes, charset: str | None = None) -> str:
    """Decode text: a BOM or the declared charset, else UTF-8, else Windows-1252."""
    if raw.startswith(b"\xef\xbb\xbf"):
        return raw[3:].decode("utf-8", errors="replace")
    if raw.startswith((b"\xff\xfe", b"\xfe\xff")):
        return raw.decode("utf-16", errors="replace")
    if charset:
        try:
            return raw.decode(charset, errors="replace")
        except LookupError:
            pass
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return raw.decode("cp1252", errors="replace")


def extract(raw: bytes, fmt: str, charset: str | None = None) -> Extracted:
    """Return the text of a document in a supported format."""
    if fmt == "pdf":
        return Extracted(pdf_text(raw), "")
    text = decode(raw, charset)
    if fmt == "html":
        return html_text(text)
    text = normalise(text)
    return Extracted(text, _leading_heading(text) if fmt == "markdown" else "")


def _leading_heading(text: str) -> str:
    """The text of a top-level `# ` heading on the first line, the Markdown file's title."""
    first = text.split("\n", 1)[0]
    return first[2:].strip() if first.startswith("# ") else ""


def normalise(text: str) -> str:
    """Unify line endings, drop control characters, trim trailing spaces and blank runs."""
    text = text.replace("\r\n", "\n").replace("\r", "\n").replace("\x00", "")
    text = re.sub(r"[^\S\n]+\n", "\n", text)
    text = re.sub(r"\n{3,}", "\n\n", text)
    return text.strip()


# ── HTML ─────────────────────────────────────────────────────────────────────────────────

_DROPPED = frozenset({"script", "style", "noscript", "template", "svg", "head", "iframe", "object"})
_BLOCKS = frozenset(
    """address article aside blockquote dd details dialog div dl dt fieldset figcaption figure
    footer form header hr li main nav ol p pre section summary table tbody thead tfoot tr ul
    caption""".split()
)
_HEADINGS = {f"h{n}": n for n in range(1, 7)}
_VOID = frozenset({"br", "hr", "img", "input", "meta", "link", "area", "base", "col", "wbr"})


class _TextParser(HTMLParser):
    """Collects visible text in blocks; headings become `#` lines, list items `- ` lines."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.blocks: list[str] = []
        self._current: list[str] = []
        self._dropping: list[str] = []
        self._in_title = False
        self._title: list[str] = []
        self._heading = 0
        self._pre = 0

    def _flush(self) -> None:
        raw = "".join(self._current)
        self._current = []
        text = raw.strip("\n") if self._pre else " ".join(raw.split())
        if not text.strip():
            return
        if self._heading:
            text = "#" * self._heading + " " + " ".join(text.split())
        self.blocks.append(text)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "title":
            self._in_title = True
            return
        if self._dropping:
            if tag not in _VOID:
                self._dropping.append(tag)
            return
        if tag in _DROPPED:
            self._dropping.append(tag)
        elif tag in _HEADINGS:
            self._flush()
            self._heading = _HEADINGS[tag]
        elif tag == "br":
            self._current.append("\n" if self._pre else " ")
        elif tag in _BLOCKS:
            self._flush()
            if tag == "pre":
                self._pre += 1
            elif tag == "li":
                self._current.append("- ")
        elif tag in ("td", "th"):
            self._current.append(" ")

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in _VOID or tag == "br":
            self.handle_starttag(tag, attrs)

    def handle_endtag(self, tag: str) -> None:
        if tag == "title":
            self._in_title = False
            return
        if self._dropping:
            # Unbalanced markup: close back to the matching tag if it is open.
            if tag in self._dropping:
                while self._dropping and self._dropping.pop() != tag:
                    pass
            return
        if tag in _HEADINGS:
            self._flush()
            self._heading = 0
        elif tag in _BLOCKS:
            self._flush()
            if tag == "pre" and self._pre:
                self._pre -= 1

    def handle_data(self, data: str) -> None:
        if self._in_title:
            self._title.append(data)
        elif not self._dropping:
            self._current.append(data)

    def result(self) -> Extracted:
        self._flush()
        title = " ".join("".join(self._title).split())
        return Extracted(normalise("\n\n".join(self.blocks)), title)


def html_text(html: str) -> Extracted:
    """Reduce HTML to its visible text (scripts, styles and the head dropped) and title."""
    parser = _TextParser()
    parser.feed(html)
    parser.close()
    return parser.result()


# ── PDF ──────────────────────────────────────────────────────────────────────────────────


def pdf_text(raw: bytes | IO[bytes]) -> str:
    """The text of every page of a PDF (its bytes, or a file pypdf reads what it needs
    from), pages separated by blank lines."""
    from pypdf import PdfReader
    from pypdf.errors import PyPdfError

    try:
        reader = PdfReader(io.BytesIO(raw) if isinstance(raw, bytes | bytearray) else raw)
        if reader.is_encrypted and not reader.decrypt(""):
            raise ExtractionError("the PDF is encrypted with a password")
        pages = [page.extract_text() or "" for page in reader.pages]
    except ExtractionError:
        raise
    except (PyPdfError, ValueError, KeyError, TypeError, AttributeError, OSError) as exc:
        # pypdf reports damaged files with several exception types.
        raise ExtractionError(f"the PDF could not be read ({exc})") from exc
    except RecursionError as exc:
        raise ExtractionError("the PDF could not be read (nested too deeply)") from exc
    return normalise("\n\n".join(pages))
