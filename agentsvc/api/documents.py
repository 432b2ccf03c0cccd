"""Knowledge document endpoints: list and add an agent's documents, get and delete one."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Annotated, Literal

from aiohttp import BodyPartReader, web
from aiohttp.http_exceptions import HttpProcessingError
from pydantic import ConfigDict, Field
from pydantic.json_schema import SkipJsonSchema

from agentsvc.api import app_keys
from agentsvc.api.downloads import SAFE_HEADERS, disposition, send_stored
from agentsvc.api.models import NON_BLANK, RequestModel, ResponseModel
from agentsvc.api.routing import Call, RouteTable, envelope_response
from agentsvc.config import Settings
from agentsvc.errors import FileTooLarge, ValidationFailed
from agentsvc.services.knowledge.service import KnowledgeService
from agentsvc.services.knowledge.uploads import StagedUpload
from agentsvc.store.documents import Document

routes = RouteTable("documents")


def knowledge_of(call: Call) -> KnowledgeService:
    return call.app[app_keys.knowledge_key]


# The types a document's file is downloaded as: never HTML (it would run on our origin if
# a browser showed it; it comes as text).
DOWNLOAD_TYPES = {
    "text": "text/plain",
    "markdown": "text/markdown",
    "html": "text/plain",
    "pdf": "application/pdf",
}
MULTIPART_SLACK_MB = 1  # request bodies may exceed the document cap by this much (framing)
READ_CHUNK = 64 * 1024
MAX_TITLE_BYTES = 4096

Title = Annotated[str, Field(min_length=1, max_length=300, pattern=NON_BLANK)]


def knowledge_body_mb(settings: Settings) -> float:
    """The request body limit of document uploads: the document cap plus framing."""
    return settings.knowledge.max_document_mb + MULTIPART_SLACK_MB


class DocumentCreate(RequestModel):
    """Either `title` with `content` (text; `#` lines are headings) or `url` to fetch once."""

    # The same either/or in the document, so schema-valid bodies are the accepted ones.
    model_config = ConfigDict(
        json_schema_extra={"oneOf": [{"required": ["title", "content"]}, {"required": ["url"]}]}
    )

    title: Title | SkipJsonSchema[None] = None
    content: Annotated[str, Field(min_length=1)] | SkipJsonSchema[None] = None
    url: Annotated[str, Field(min_length=1, max_length=2000)] | SkipJsonSchema[None] = None


class DocumentUpload(RequestModel):
    """A multipart upload: `file` (.txt, .md, .html or .pdf) and an optional `title`."""

    file: bytes
    title: Title | SkipJsonSchema[None] = None


class DocumentOut(ResponseModel):
    id: str
    agent_id: str
    title: str
    source_type: Literal["text", "file", "url"]
    format: Literal["text", "markdown", "html", "pdf"]
    filename: str | None
    source_url: str | None
    source_id: str | None = Field(description="the source whose page made it (sourceUrl: the page)")
    size_bytes: int
    status: Literal["indexing", "ready", "failed"]
    error: str | None
    passage_count: int
    created_at: str
    updated_at: str


class DocumentWithContent(DocumentOut):
    content: str


class DocumentDeleted(ResponseModel):
    id: str
    deleted: bool


def document_json(doc: Document) -> dict:
    return {
        "id": doc.id,
        "agentId": doc.agent_id,
        "title": doc.title,
        "sourceType": doc.source_type,
        "format": doc.format,
        "filename": doc.filename,
        "sourceUrl": doc.source_url,
        "sourceId": doc.source_id,
        "sizeBytes": doc.size_bytes,
        "status": doc.status,
        "error": doc.error,
        "passageCount": doc.passage_count,
        "createdAt": doc.created_at,
        "updatedAt": doc.updated_at,
    }


@routes.get("/agents/{id}/documents", response=list[DocumentOut], envelope=True, errors=(404,))
async def list_documents(call: Call):
    """List an agent's knowledge documents, newest first."""
    docs = await knowledge_of(call).list_documents(call.team_id, call.params["id"])
    return envelope_response([document_json(d) for d in docs])


async def _read_part(part: BodyPartReader, max_bytes: int, field: str) -> bytes:
    chunks: list[bytes] = []
    async for chunk in _capped(part, max_bytes, field):
        chunks.append(chunk)
    return b"".join(chunks)


async def _capped(part: BodyPartReader, max_bytes: int, field: str) -> AsyncIterator[bytes]:
    """A part's bytes as they arrive, refused once past `max_bytes`."""
    size = 0
    while chunk := await part.read_chunk(READ_CHUNK):
        size += len(chunk)
        if size > max_bytes:
            if field == "file":
                limit = round(max_bytes / 2**20, 3)
                raise FileTooLarge(f"file: the document is over {limit:g} MB")
            raise ValidationFailed(f"{field}: too long")
        yield chunk


@dataclass
class _Upload:
    """What a multipart upload brought: its file (stored as it arrived) and title."""

    staged: StagedUpload | None = None
    filename: str | None = None
    media_type: str | None = None
    title: str | None = None


async def _read_upload(request: web.Request, knowledge: KnowledgeService, found: _Upload) -> None:
    """Read a multipart upload part by part: the file goes into the file storage as it
    streams in, capped (`found.staged`, which the caller discards on failure)."""
    try:
        reader = await request.multipart()
        while (part := await reader.next()) is not None:
            if not isinstance(part, BodyPartReader):
                raise ValidationFailed("body: nested multipart parts are not accepted")
            name = part.name or ""
            if name == "file" and found.staged is None:
                found.filename = part.filename
                found.media_type = part.headers.get("Content-Type")
                knowledge.check_upload(found.filename, found.media_type)
                chunks = _capped(part, knowledge.max_document_bytes, "file")
                found.staged = await knowledge.stage_upload(chunks)
            elif name == "title" and found.title is None:
                found.title = (await _read_part(part, MAX_TITLE_BYTES, "title")).decode(
                    "utf-8", errors="replace"
                )
            elif name in ("file", "title"):
                raise ValidationFailed(f"{name}: given more than once")
            else:
                raise ValidationFailed(f"{name or 'a part without a name'}: is not a known field")
    except (ValueError, AssertionError, KeyError, HttpProcessingError) as exc:
        # aiohttp's multipart reader reports malformed framing with these (a bad part
        # header line is an HttpProcessingError, as in a request's own headers).
        raise ValidationFailed(f"body: malformed multipart/form-data ({exc})") from exc
    if found.staged is None:
        raise ValidationFailed("file: is required")
    if found.title is not None and not found.title.strip():
        raise ValidationFailed("title: must not be empty")


async def _add_upload(call: Call, knowledge: KnowledgeService, agent_id: str) -> Document:
    """Store an uploaded file and make its document; the file goes when none is made."""
    found = _Upload()
    try:
        await _read_upload(call.request, knowledge, found)
    except BaseException:
        if found.staged is not None:
            await knowledge.discard_upload(found.staged)
        raise
    assert found.staged is not None
    upload = (found.filename, found.media_type)
    return await knowledge.add_upload(call.team_id, agent_id, found.staged, upload, found.title)


@routes.post(
    "/agents/{id}/documents",
    body=DocumentCreate,
    form=DocumentUpload,
    max_body_mb=knowledge_body_mb,
    response=DocumentOut,
    envelope=True,
    status=201,
    errors=(404, 415, 503),
)
async def post_document(call: Call):
    """Add a document: JSON `{title, content}` or `{url}`, or a multipart file upload."""
    knowledge = knowledge_of(call)
    agent_id = call.params["id"]
    # Check the agent before reading a file or fetching a URL for it.
    await knowledge.check_agent(call.team_id, agent_id)
    body: DocumentCreate | None = call.body
    if body is None:
        doc = await _add_upload(call, knowledge, agent_id)
        return envelope_response(document_json(doc), status=201)
    if body.url is not None:
        if body.content is not None:
            raise ValidationFailed("body: give either content or url, not both")
        source = await knowledge.url_source(body.url, body.title)
    elif body.content is not None:
        if body.title is None:
            raise ValidationFailed("title: is required with content")
        source = knowledge.text_source(body.title, body.content)
    else:
        raise ValidationFailed("body: content (with title) or url is required")
    doc = await knowledge.add(call.team_id, agent_id, source)
    return envelope_response(document_json(doc), status=201)


@routes.get("/documents/{id}", response=DocumentWithContent, envelope=True, errors=(404,))
async def get_document(call: Call):
    """Get a document with its extracted text."""
    doc, content = await knowledge_of(call).get(call.team_id, call.params["id"])
    return envelope_response({**document_json(doc), "content": content})


@routes.delete("/documents/{id}", response=DocumentDeleted, envelope=True, errors=(404,))
async def delete_document(call: Call):
    """Delete a document and its passages."""
    await knowledge_of(call).delete(call.team_id, call.params["id"])
    return envelope_response({"id": call.params["id"], "deleted": True})


@routes.get(
    "/documents/{id}/file",
    media_type="application/octet-stream",
    response_headers=("Content-Disposition",),
    errors=(404, 503),
)
async def get_document_file(call: Call):
    """Download the file a document was uploaded as, as it came (404 for a document made
    of text or a URL)."""
    doc, found = await knowledge_of(call).uploaded_file(call.team_id, call.params["id"])
    headers = {
        "Content-Type": DOWNLOAD_TYPES.get(doc.format, "application/octet-stream"),
        "Content-Disposition": disposition(doc.filename or f"{doc.id}.{doc.format}"),
        **SAFE_HEADERS,
    }
    return await send_stored(call.request, found.size, found.chunks, headers)
