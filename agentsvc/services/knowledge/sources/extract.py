"""A fetched page's text by its type: HTML's main content (trafilatura, headings kept as
Markdown), DOCX (python-docx), PDF, Markdown and text as documents uploaded are; and, of
HTML, its canonical address and its links. Runs in a worker thread (`cpu.run`)."""

from __future__ import annotations

import io
import zipfile
from dataclasses import dataclass, field

from agentsvc.services.knowledge import extraction

DOCX = "docx"
DOCX_TYPE = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
MAX_LINKS = 1000  # links read from one page
MAX_DOCX_UNZIPPED = 50 * 2**20  # a DOCX's parts, unzipped (a zip bomb is refused)
MAX_DOCX_PARTS = 2000
# The libraries each format needs, imported before its first extraction by
# `cpu.load_modules` at the process's own priority (0.1 s of processor here, more on slower
# machines: imported in `cpu.run`'s thread at nice 19, on a busy machine the import held the
# GIL while the kernel ran others, and the event loop waited on it).
MODULES = {"html": ("lxml.html", "trafilatura", "trafilatura.settings"), "docx": ("docx",)}
MAX_TREE_SIZE = 200_000  # HTML elements trafilatura looks at; beyond, the plain text is kept


@dataclass(frozen=True, slots=True)
class PageText:
    text: str
    title: str
    format: str  # the document's format: text, markdown, html, pdf
    canonical: str | None = None
    base: str | None = None  # <base href>: what the links are relative to
    links: list[str] = field(default_factory=list)


def format_of(content_type: str, path: str) -> str | None:
    """The page's format by its media type, else by its path's extension; None: unsupported."""
    media = content_type.split(";", 1)[0].strip().lower()
    if media == DOCX_TYPE or (not media and path.lower().endswith(".docx")):
        return DOCX
    return extraction.format_of(None, media) or extraction.format_of(path, None)


def extract(raw: bytes, fmt: str, charset: str | None) -> PageText:
    """The page's text; extraction.ExtractionError when it cannot be read."""
    if fmt == "html":
        return _html(extraction.decode(raw, charset))
    if fmt == DOCX:
        return PageText(_docx(raw), "", "markdown")  # headings become `#` lines
    got = extraction.extract(raw, fmt, charset)
    return PageText(got.text, got.title, fmt)


_config = None


def _trafilatura_config():  # noqa: ANN202 (a ConfigParser, built on first use)
    """Main content kept however short the page, and no signal-based timeout (this runs
    in a worker thread; the work is bounded by the page's size and tree cap instead)."""
    global _config
    if _config is None:
        from trafilatura.settings import use_config

        config = use_config()
        config.set("DEFAULT", "MIN_EXTRACTED_SIZE", "1")
        config.set("DEFAULT", "EXTRACTION_TIMEOUT", "0")
        config.set("DEFAULT", "MAX_TREE_SIZE", str(MAX_TREE_SIZE))
        _config = config
    return _config


def _html(html: str) -> PageText:
    import lxml.html
    import trafilatura
    from lxml import etree

    try:
        tree = lxml.html.document_fromstring(html)
    except (etree.ParserError, ValueError) as exc:
        raise extraction.ExtractionError("the page is not HTML that can be read") from exc
    canonical = next(iter(tree.xpath("//link[@rel='canonical']/@href")), None)
    base = next(iter(tree.xpath("//base/@href")), None)
    links = [str(h) for h in tree.xpath("//a/@href")[:MAX_LINKS]]
    title = " ".join(" ".join(tree.xpath("//title//text()")).split())
    text = trafilatura.extract(
        tree,
        output_format="markdown",
        include_comments=False,
        include_images=False,
        include_links=False,
        include_tables=True,
        favor_recall=True,
        with_metadata=False,
        config=_trafilatura_config(),
    )
    if not text or not text.strip():
        # Too little for trafilatura to call content: the visible text as uploads have it.
        text = extraction.html_text(html).text
    return PageText(
        extraction.normalise(text),
        title,
        "html",
        str(canonical) if canonical else None,
        str(base) if base else None,
        links,
    )


def _docx(raw: bytes) -> str:
    try:
        with zipfile.ZipFile(io.BytesIO(raw)) as archive:
            parts = archive.infolist()
            if len(parts) > MAX_DOCX_PARTS or sum(p.file_size for p in parts) > MAX_DOCX_UNZIPPED:
                raise extraction.ExtractionError("the DOCX is too large once unzipped")
    except zipfile.BadZipFile as exc:
        raise extraction.ExtractionError("the DOCX could not be read (not a zip file)") from exc
    import docx

    try:
        document = docx.Document(io.BytesIO(raw))
    except Exception as exc:  # noqa: BLE001 (python-docx reports damage with many types)
        # The library's own words name its internals (a part name, a class): not for people.
        raise extraction.ExtractionError("the DOCX could not be read (it is damaged)") from exc
    blocks = []
    for para in document.paragraphs:
        text = " ".join(para.text.split())
        if not text:
            continue
        style = (para.style.name if para.style is not None else "") or ""
        level = _heading_level(style)
        blocks.append(f"{'#' * level} {text}" if level else text)
    return extraction.normalise("\n\n".join(blocks))


def _heading_level(style: str) -> int:
    if style == "Title":
        return 1
    if style.startswith("Heading "):
        number = style.removeprefix("Heading ").strip()
        if number.isdigit():
            return min(int(number), 6)
    return 0


def charset_of(content_type: str) -> str | None:
    """The charset a Content-Type header names, if any."""
    for param in content_type.split(";")[1:]:
        name, _, value = param.partition("=")
        if name.strip().lower() == "charset":
            return value.strip().strip('"') or None
    return None
