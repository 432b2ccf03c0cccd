"""A new document's text out of JSON text, an uploaded file or a URL fetched once."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import IO

from yarl import URL

from agentsvc.errors import FileTooLarge, UnsupportedMediaType, ValidationFailed
from agentsvc.outbound import OutboundClient, OutboundError
from agentsvc.services.knowledge import extraction

TITLE_LENGTH = 300


@dataclass(frozen=True, slots=True)
class Source:
    """What a new document is made of, before it is stored."""

    title: str
    source_type: str  # text, file, url
    format: str
    text: str
    size_bytes: int
    filename: str | None = None
    source_url: str | None = None
    document_id: str | None = None  # chosen before (an upload is stored under it)


def _check_size(size: int, max_bytes: int, field: str) -> None:
    if size > max_bytes:
        limit = round(max_bytes / 2**20, 3)
        raise FileTooLarge(f"{field}: the document is over {limit:g} MB")


def _extract(raw: bytes, fmt: str, charset: str | None, field: str) -> extraction.Extracted:
    try:
        extracted = extraction.extract(raw, fmt, charset)
    except extraction.ExtractionError as exc:
        raise ValidationFailed(f"{field}: {exc}") from exc
    if not extracted.text.strip():
        raise ValidationFailed(f"{field}: the document has no text to index")
    return extracted


def _title(given: str | None, *fallbacks: str | None) -> str:
    for candidate in (given, *fallbacks):
        if candidate and candidate.strip():
            return " ".join(candidate.split())[:TITLE_LENGTH]
    return "Untitled"


def text_source(title: str, content: str, max_bytes: int) -> Source:
    """A document given as JSON text (treated as Markdown: `#` lines are headings)."""
    size = len(content.encode())
    _check_size(size, max_bytes, "content")
    text = extraction.normalise(content)
    if not text:
        raise ValidationFailed("content: the document has no text to index")
    return Source(_title(title), "text", "markdown", text, size)


def upload_format(filename: str | None, media_type: str | None) -> str:
    """The format of an uploaded file, from its extension or media type, or
    UnsupportedMediaType (checked before the file is read)."""
    fmt = extraction.format_of(filename, media_type)
    if fmt is None:
        suffix = PurePosixPath(filename).suffix if filename else ""
        shown = suffix or (media_type or "").split(";")[0].strip()
        raise UnsupportedMediaType(
            f"file: unsupported type {shown or 'unknown'!s}; use {extraction.SUPPORTED}"
        )
    return fmt


def _extract_file(spool: IO[bytes], fmt: str) -> extraction.Extracted:
    """A PDF is read page by page from the file; other formats are their text, read whole."""
    if fmt == "pdf":
        try:
            extracted = extraction.Extracted(extraction.pdf_text(spool), "")
        except extraction.ExtractionError as exc:
            raise ValidationFailed(f"file: {exc}") from exc
        if not extracted.text.strip():
            raise ValidationFailed("file: the document has no text to index")
        return extracted
    return _extract(spool.read(), fmt, None, "file")


async def file_source(
    spool: IO[bytes],
    size: int,
    upload: tuple[str | None, str | None],
    title: str | None,
    document_id: str | None = None,
) -> Source:
    """A document uploaded as a file (`upload`: its file name and media type), read from
    its spooled copy."""
    filename, media_type = upload
    fmt = upload_format(filename, media_type)
    # Reading a PDF is CPU-bound, and the spool may be on disk: off the event loop.
    extracted = await asyncio.to_thread(_extract_file, spool, fmt)
    stem = PurePosixPath(filename).stem if filename else None
    return Source(
        _title(title, extracted.title, stem),
        "file",
        fmt,
        extracted.text,
        size,
        filename=filename,
        document_id=document_id,
    )


def _charset(content_type: str) -> str | None:
    for param in content_type.split(";")[1:]:
        name, _, value = param.partition("=")
        if name.strip().lower() == "charset":
            return value.strip().strip('"') or None
    return None


async def url_source(
    outbound: OutboundClient,
    url: str,
    title: str | None,
    max_bytes: int,
    timeout: float,  # noqa: ASYNC109 - passed on to the outbound client
) -> Source:
    """A document fetched once from a URL through the guarded outbound client."""
    try:
        resp = await outbound.request(
            "GET",
            url,
            headers={"Accept": "text/html, text/markdown, text/plain, application/pdf"},
            timeout=timeout,
            max_response_bytes=max_bytes,
        )
    except OutboundError as exc:
        raise ValidationFailed(f"url: could not fetch the document: {exc.message}") from exc
    if 300 <= resp.status < 400:
        raise ValidationFailed(
            f"url: the server answered {resp.status} (redirects are not followed; "
            "give the final address)"
        )
    if not resp.ok:
        raise ValidationFailed(f"url: the server answered {resp.status}")
    if resp.truncated:
        _check_size(max_bytes + 1, max_bytes, "url")
    content_type = resp.headers.get("Content-Type", "")
    path = URL(url).path
    fmt = extraction.format_of(None, content_type) or extraction.format_of(path, None)
    if fmt is None:
        raise UnsupportedMediaType(
            f"url: unsupported type {content_type.split(';')[0] or 'unknown'}; "
            f"use {extraction.SUPPORTED}"
        )
    extracted = await asyncio.to_thread(_extract, resp.body, fmt, _charset(content_type), "url")
    name = PurePosixPath(path).name or URL(url).host
    return Source(
        _title(title, extracted.title, name),
        "url",
        fmt,
        extracted.text,
        len(resp.body),
        source_url=url,
    )
