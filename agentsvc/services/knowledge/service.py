"""The knowledge feature as the API uses it: an agent's documents, from text, a file or a
URL, indexed now or in the background, and its sources (sites followed)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass

from agentsvc.config import KnowledgeSettings
from agentsvc.db import Database
from agentsvc.errors import NotFound
from agentsvc.ids import new_id
from agentsvc.outbound import OutboundClient
from agentsvc.services.knowledge import documents, ingestion, uploads
from agentsvc.services.knowledge.indexing import Indexer
from agentsvc.services.knowledge.ingestion import Source
from agentsvc.services.knowledge.sources.service import SourcesService
from agentsvc.services.knowledge.uploads import StagedUpload, UploadedFile
from agentsvc.storage import FileStore
from agentsvc.store.documents import Document


@dataclass(frozen=True, slots=True)
class KnowledgeDeps:
    """What the knowledge feature works on: the database, the indexer, the guarded client
    that fetches URLs, and the file storage that keeps uploaded files."""

    db: Database
    indexer: Indexer
    outbound: OutboundClient
    files: FileStore


class KnowledgeService:
    """List, add, read and delete an agent's knowledge documents."""

    def __init__(self, deps: KnowledgeDeps, settings: KnowledgeSettings, sources: SourcesService):
        self._db = deps.db
        self.sources = sources  # sites the agents' knowledge follows
        self._indexer = deps.indexer
        self._outbound = deps.outbound
        self._files = deps.files
        self._fetch_timeout = settings.fetch_timeout_seconds
        self.max_document_bytes = int(settings.max_document_mb * 2**20)

    async def list_documents(self, team_id: str, agent_id: str) -> list[Document]:
        """Return the documents of the team's agent, newest first."""
        return await documents.list_documents(self._db, team_id, agent_id)

    async def check_agent(self, team_id: str, agent_id: str) -> None:
        """Raise NotFound unless the agent belongs to the team (before reading a body)."""
        await documents.check_agent(self._db, team_id, agent_id)

    def text_source(self, title: str, content: str) -> Source:
        """A document given as text, within the size cap."""
        return ingestion.text_source(title, content, self.max_document_bytes)

    async def url_source(self, url: str, title: str | None) -> Source:
        """A document fetched once from a URL, within the size cap."""
        return await ingestion.url_source(
            self._outbound, url, title, self.max_document_bytes, self._fetch_timeout
        )

    async def add(self, team_id: str, agent_id: str, source: Source) -> Document:
        """Store a document and index it (now when small, else in the background)."""
        return await documents.create_document(self._db, self._indexer, team_id, agent_id, source)

    async def get(self, team_id: str, document_id: str) -> tuple[Document, str]:
        """Return the team's document and its extracted text, or raise NotFound."""
        return await documents.get_document(self._db, team_id, document_id)

    async def delete(self, team_id: str, document_id: str) -> None:
        """Delete a document with its passages (and their embeddings) and its file."""
        await documents.delete_document(self._db, team_id, document_id, self._indexer)
        await uploads.discard(self._files, document_id)

    def check_upload(self, filename: str | None, media_type: str | None) -> None:
        """UnsupportedMediaType unless the file is of a format documents are read from."""
        ingestion.upload_format(filename, media_type)

    async def stage_upload(self, chunks: AsyncIterator[bytes]) -> StagedUpload:
        """Keep an uploaded file as it arrives (the chunks enforce the size cap), under the
        id its document will have."""
        return await uploads.stage(self._files, new_id("document"), chunks)

    async def add_upload(
        self,
        team_id: str,
        agent_id: str,
        staged: StagedUpload,
        upload: tuple[str | None, str | None],
        title: str | None,
    ) -> Document:
        """Make a document of a staged upload (`upload`: its file name and media type); the
        file goes again when no document is made."""
        try:
            source = await ingestion.file_source(
                staged.spool, staged.size, upload, title, staged.document_id
            )
            return await self.add(team_id, agent_id, source)
        except BaseException:
            await self.discard_upload(staged)
            raise
        finally:
            staged.close()

    async def discard_upload(self, staged: StagedUpload) -> None:
        """Forget a staged upload that makes no document."""
        staged.close()
        await uploads.discard(self._files, staged.document_id)

    async def uploaded_file(self, team_id: str, document_id: str) -> tuple[Document, UploadedFile]:
        """A document's file as it was uploaded, or NotFound (a document of text or a URL,
        or uploaded before files were kept)."""
        doc, _ = await documents.get_document(self._db, team_id, document_id)
        found = (
            await uploads.open_file(self._files, document_id) if doc.source_type == "file" else None
        )
        if found is None:
            raise NotFound("This document has no uploaded file")
        return doc, found
