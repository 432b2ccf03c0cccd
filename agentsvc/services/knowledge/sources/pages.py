"""A source's pages into the agent's documents, through the knowledge pipeline (chunking,
passages, embeddings, background indexing of large texts), and out again. Only a page
whose text changed is chunked and indexed again; its document keeps its id."""

from __future__ import annotations

from dataclasses import dataclass, replace

from agentsvc import cpu
from agentsvc.db import Database, Tx
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
from agentsvc.services.knowledge.ingestion import TITLE_LENGTH
from agentsvc.services.knowledge.sources.extract import PageText
from agentsvc.store import documents as documents_store
from agentsvc.store import sources as store
from agentsvc.store.documents import Document, PassageRow
from agentsvc.store.sources import PageResult, Source


@dataclass(frozen=True, slots=True)
class Changed:
    """A page whose text changed: where it is, what it says, what it answered with."""

    url: str
    text: PageText
    size: int
    result: PageResult


def _title(text: PageText, url: str) -> str:
    first = text.text.split("\n", 1)[0]
    heading = first.lstrip("#").strip() if first.startswith("#") else ""
    title = " ".join((text.title or heading or url).split())
    return title[:TITLE_LENGTH]


class PageWriter:
    """Writes what a sync found to the database: each page's row and its document."""

    def __init__(self, db: Database, indexer: Indexer):
        self._db = db
        self._indexer = indexer

    async def record(self, source: Source, url: str, result: PageResult) -> None:
        """A page fetched without a change to its text (or failed): its row only."""
        async with self._db.write() as tx:
            await store.record(tx, source.id, url, source.generation, result, now_iso())

    async def drop_document(self, source: Source, url: str, result: PageResult) -> None:
        """A page that no longer makes a document (a duplicate, skipped): its document goes."""
        async with self._db.write() as tx:
            found = await store.page(tx, source.id, url)
            if found is not None and found.document_id is not None:
                await documents_store.delete(tx, source.team_id, found.document_id)
            await store.record(tx, source.id, url, source.generation, result, now_iso())

    async def remove(self, source: Source, url: str) -> None:
        """A page gone from the site: its row and its document."""
        async with self._db.write() as tx:
            await store.remove_page(tx, source.id, url)
        if self._indexer.semantic is not None:
            await self._db.announce(changes.vectors(source.agent_id))

    async def _passages(self, title: str, text: str) -> tuple[list[PassageRow], Embedded | None]:
        rows = passage_rows(await cpu.run(chunk, text, title))
        semantic = self._indexer.semantic
        if not rows or semantic is None:
            return rows, None
        # Embedded before the write, so the writer never waits on the provider.
        return rows, Embedded(await embed_rows(semantic, rows), semantic.embedder.model_id)

    async def write(self, source: Source, page: Changed) -> None:
        """A page whose text changed: its document made or given the new text, indexed now
        (or in the background when large), and its row."""
        title = _title(page.text, page.url)
        background = self._indexer.in_background(page.text.text)
        rows: list[PassageRow] = []
        embedded, error = None, None
        if not background:
            try:
                rows, embedded = await self._passages(title, page.text.text)
            except ProviderError as exc:
                rows, error = [], exc.message
        status = "indexing" if background else "failed" if error else "ready"
        now = now_iso()
        doc = Document(
            new_id("document"),
            source.agent_id,
            source.team_id,
            title,
            "url",
            page.text.format,
            None,
            page.url,
            page.size,
            status,
            error,
            len(rows),
            now,
            now,
        )
        async with self._db.write() as tx:
            if await store.get(tx, source.id) is None:
                return  # deleted meanwhile
            doc = await _put_document(tx, source, page.url, doc, page.text.text)
            await write_passages(tx, doc.id, source.agent_id, rows, embedded)
            await store.record(tx, source.id, page.url, source.generation, page.result, now)
        if background:
            self._indexer.schedule(doc.id)
        elif embedded is not None:
            await self._db.announce(changes.vectors(source.agent_id))


async def _put_document(tx: Tx, source: Source, url: str, doc: Document, text: str) -> Document:
    """The page's document given the new text (same id), or a new one for the page."""
    found = await store.page(tx, source.id, url)
    if found is not None and found.document_id is not None:
        kept = replace(doc, id=found.document_id)
        await documents_store.clear_passages(tx, kept.id)
        if await documents_store.replace_content(tx, kept, text):
            return kept
    await documents_store.insert(tx, doc, text)
    await store.set_document(tx, source.id, url, doc.id)
    return doc
