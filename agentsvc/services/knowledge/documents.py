"""An agent's knowledge documents: list, get, add (indexed now or in the background), delete."""

from __future__ import annotations

from dataclasses import replace

from agentsvc.db import Database
from agentsvc.errors import NotFound
from agentsvc.ids import new_id, now_iso
from agentsvc.llm.base import ProviderError
from agentsvc.services import changes
from agentsvc.services.knowledge.chunking import chunk
from agentsvc.services.knowledge.indexing import (
    Embedded,
    Indexer,
    embed_rows,
    passage_rows,
    write_passages,
)
from agentsvc.services.knowledge.ingestion import Source
from agentsvc.store import agents as agents_store
from agentsvc.store import documents as store
from agentsvc.store import sources as sources_store
from agentsvc.store.documents import Document


async def check_agent(db: Database, team_id: str, agent_id: str) -> None:
    """Raise NotFound unless the agent exists and belongs to the team."""
    if await agents_store.get(db.reader, team_id, agent_id) is None:
        raise NotFound("Agent not found")


async def list_documents(db: Database, team_id: str, agent_id: str) -> list[Document]:
    """Return the documents of the team's agent, newest first."""
    await check_agent(db, team_id, agent_id)
    docs = await store.list_for_agent(db.reader, agent_id)
    made = await sources_store.source_of_documents(db.reader, [d.id for d in docs])
    return [replace(d, source_id=made[d.id]) if d.id in made else d for d in docs]


async def get_document(db: Database, team_id: str, document_id: str) -> tuple[Document, str]:
    """Return the team's document and its extracted text, or raise NotFound."""
    found = await store.get_with_content(db.reader, team_id, document_id)
    if found is None:
        raise NotFound("Document not found")
    doc, content = found
    made = await sources_store.source_of_documents(db.reader, [doc.id])
    return replace(doc, source_id=made.get(doc.id)), content


async def delete_document(
    db: Database, team_id: str, document_id: str, indexer: Indexer | None = None
) -> None:
    """Delete a document with its passages (and their embeddings)."""
    async with db.write() as tx:
        doc = await store.get(tx, team_id, document_id)
        if doc is None or not await store.delete(tx, team_id, document_id):
            raise NotFound("Document not found")
    if indexer is not None and indexer.semantic is not None:
        await db.announce(changes.vectors(doc.agent_id))


async def create_document(
    db: Database, indexer: Indexer, team_id: str, agent_id: str, source: Source
) -> Document:
    """Store a document; index it now when small, else in the background (`indexing`,
    `Indexer.in_background`).

    A small document is chunked and indexed in this request's own transaction and answers
    `ready`. With embeddings on, its passages are embedded before it is written (so it is
    `ready` only once every passage is both indexed and embedded); if the provider fails
    (after its retries) the document is stored `failed` with the reason.
    """
    await check_agent(db, team_id, agent_id)
    background = indexer.in_background(source.text)
    rows = [] if background else passage_rows(chunk(source.text, source.title))
    semantic = indexer.semantic
    embedded: Embedded | None = None
    error: str | None = None
    if rows and semantic is not None:
        try:
            embedded = Embedded(await embed_rows(semantic, rows), semantic.embedder.model_id)
        except ProviderError as exc:
            error, rows = exc.message, []
    now = now_iso()
    doc = Document(
        id=source.document_id or new_id("document"),
        agent_id=agent_id,
        team_id=team_id,
        title=source.title,
        source_type=source.source_type,
        format=source.format,
        filename=source.filename,
        source_url=source.source_url,
        size_bytes=source.size_bytes,
        status="indexing" if background else "failed" if error else "ready",
        error=error,
        passage_count=len(rows),
        created_at=now,
        updated_at=now,
    )

    async with db.write() as tx:
        if not await store.agent_in_team(tx, agent_id, team_id):
            raise NotFound("Agent not found")  # deleted since the check above
        await store.insert(tx, doc, source.text)
        await write_passages(tx, doc.id, agent_id, rows, embedded)
    if background:
        indexer.schedule(doc.id)
    elif semantic is not None and embedded is not None:
        await db.announce(changes.vectors(agent_id))
    return doc
