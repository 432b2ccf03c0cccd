"""Stored files sent as they are read from the file storage, a chunk at a time (a form's
file, a knowledge document's upload, an e-mail's attachment, a member's picture): never
whole in memory, whatever the store."""

from __future__ import annotations

from collections.abc import AsyncGenerator, Mapping
from urllib.parse import quote

from aiohttp import web

from agentsvc.errors import NotFound
from agentsvc.storage import FileMissing

# A download never runs on our origin: sent as an attachment, its type not sniffed, and
# sandboxed should a browser render it anyway.
SAFE_HEADERS = {
    "X-Content-Type-Options": "nosniff",
    "Content-Security-Policy": "default-src 'none'; sandbox",
    "Cache-Control": "private, no-store",
}

# The types a download keeps (with Content-Disposition: attachment and nosniff); any
# other is served as application/octet-stream (HTML, SVG, scripts never run on our origin).
SAFE_TYPES = frozenset(
    {
        "application/pdf",
        "application/zip",
        "application/msword",
        "application/vnd.ms-excel",
        "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
        "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
        "application/vnd.openxmlformats-officedocument.presentationml.presentation",
        "application/vnd.oasis.opendocument.text",
        "application/vnd.oasis.opendocument.spreadsheet",
        "image/png",
        "image/jpeg",
        "image/gif",
        "image/webp",
        "text/plain",
        "text/csv",
        "audio/mpeg",
        "video/mp4",
    }
)


def served_type(content_type: str) -> str:
    """The type a download is sent with: the stored one when it is safe, else bytes."""
    return content_type if content_type in SAFE_TYPES else "application/octet-stream"


def disposition(name: str) -> str:
    """`attachment` with the name: an ASCII fallback, and the name itself (RFC 6266)."""
    fallback = "".join(
        c if c.isascii() and c.isprintable() and c not in '"\\' else "_" for c in name
    )
    return f"attachment; filename=\"{fallback}\"; filename*=UTF-8''{quote(name, safe='')}"


async def send_stored(
    request: web.Request,
    size: int,
    chunks: AsyncGenerator[bytes, None],
    headers: Mapping[str, str],
) -> web.StreamResponse:
    """Send a stored file of `size` bytes as its chunks come. A failure before the first
    byte is still an error answer; after it, the connection is cut (the length then says
    the file is incomplete)."""
    try:
        try:
            first = await anext(chunks, b"")
        except FileMissing:
            raise NotFound("The file is no longer stored") from None
        response = web.StreamResponse(headers=headers)
        response.content_length = size
        await response.prepare(request)
        if first:
            await response.write(first)
        async for piece in chunks:
            await response.write(piece)
        await response.write_eof()
        return response
    finally:
        await chunks.aclose()
