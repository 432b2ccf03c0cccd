"""The knowledge feature as the API uses it: an agent's documents, from text, a file or a
URL, indexed now or in the background, and its sources (sites followed)."""

from __future__ import annotations

from agentsvc.config import KnowledgeSettings
from agentsvc.db import Database
from agentsvc.outbound import OutboundClient
from agentsvc.services.knowledge import documents, ingestion
from agentsvc.services.knowledge.indexing import Indexer
from agentsvc.services.knowledge.ingestion import Source
from agentsvc.services.knowledge.sources.service import SourcesService
from agentsvc.store.documents import Document


class KnowledgeService:
    """List, add, read and delete an agent's knowledge documents."""

    def __init__(
        self,
        db: Database,
        indexer: Indexer,
        outbound: OutboundClient,
        settings: KnowledgeSettings,
        sources: SourcesService,
    ):
        self._db = db
        self.sources = sources  # sites the agents' knowledge follows
        self._indexer = indexer
        self._outbound = outbound
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
        """Delete a document with its passages (and their embeddings)."""
        await documents.delete_document(self._db, team_id, document_id, self._indexer)
