"""Passages into the index, embedded when embeddings are on; the background `Indexer`."""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass

import numpy as np

from agentsvc.db import Database, Tx
from agentsvc.ids import now_iso
from agentsvc.llm.base import ProviderError
from agentsvc.services import changes
from agentsvc.services.knowledge.chunking import Chunk, chunk
from agentsvc.services.knowledge.vectors import Semantic, to_blob
from agentsvc.store import documents as store
from agentsvc.store.documents import PassageRow

log = logging.getLogger(__name__)

INDEX_BATCH = 200  # passages per write transaction while indexing in the background (~0.1 s)
# `[knowledge] background_index_kb`: documents with more text are indexed in the background.
DEFAULT_BACKGROUND_BYTES = 256 * 1024


def passage_rows(chunks: list[Chunk]) -> list[PassageRow]:
    """The chunks of a document as passage rows, numbered in order."""
    return [PassageRow(i, c.heading, c.text) for i, c in enumerate(chunks)]


def _embedding_text(row: PassageRow) -> str:
    # The heading path says what the section is about; it is part of the meaning.
    return f"{row.heading}\n{row.text}" if row.heading else row.text


async def embed_rows(semantic: Semantic, rows: list[PassageRow]) -> np.ndarray:
    """The embeddings of passages (heading and text), one row each."""
    return await semantic.embedder.embed([_embedding_text(r) for r in rows])


@dataclass(frozen=True, slots=True)
class Embedded:
    """Passages' embeddings (one row of `vectors` each) and the model that made them."""

    vectors: np.ndarray
    model: str


async def write_passages(
    tx: Tx, document_id: str, agent_id: str, rows: list[PassageRow], embedded: Embedded | None
) -> None:
    """Insert passages and, when given, their embeddings."""
    await store.insert_passages(tx, document_id, agent_id, rows)
    if embedded is None or not rows:
        return
    vectors = embedded.vectors
    ids = await store.passage_ids(tx, document_id, rows[0].position, rows[-1].position)
    blobs = zip(ids, (to_blob(v) for v in vectors), strict=True)
    await store.insert_embeddings(tx, agent_id, embedded.model, int(vectors.shape[1]), blobs)


class Indexer:
    """Indexes `indexing` documents in tasks owned by the app; resumes them at start.

    Documents over `[knowledge] background_index_kb` of text are indexed here in batches,
    so the single writer is never held for long; the database is the source of truth, so
    documents a stop interrupted are indexed again at start. `semantic` is set when
    embeddings are on: passages are then embedded batch by batch.
    """

    def __init__(
        self,
        db: Database,
        semantic: Semantic | None = None,
        *,
        background_bytes: int = DEFAULT_BACKGROUND_BYTES,
    ):
        self._db = db
        self.semantic = semantic
        self._background_bytes = background_bytes
        self._tasks: set[asyncio.Task[None]] = set()

    def in_background(self, text: str) -> bool:
        """Whether a document of this text is indexed in the background (over the limit)."""
        return len(text.encode()) > self._background_bytes

    def schedule(self, document_id: str) -> None:
        """Index a stored `indexing` document in a background task."""
        task = asyncio.create_task(self.index(document_id), name=f"index-{document_id}")
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def resume(self) -> int:
        """Schedule every document a stop left `indexing`; return how many."""
        ids = await store.ids_indexing(self._db.reader)
        for document_id in ids:
            self.schedule(document_id)
        return len(ids)

    async def idle(self) -> None:
        """Wait until no indexing task is running (tests, benchmarks)."""
        while self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)

    async def close(self) -> None:
        """Stop the running tasks; their documents stay `indexing` and resume next start."""
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*list(self._tasks), return_exceptions=True)

    async def index(self, document_id: str) -> None:
        """Chunk a document and write its passages in batches, then mark it ready or failed."""
        db = self._db
        semantic = self.semantic
        model = semantic.embedder.model_id if semantic else ""
        loaded = await store.content_of(db.reader, document_id)
        if loaded is None:
            return
        agent_id, title, content = loaded  # type: ignore[misc]
        try:
            rows = passage_rows(await asyncio.to_thread(chunk, content, title))
            if not rows:
                raise ValueError("the document has no text to index besides headings")
            async with db.write() as tx:
                await store.clear_passages(tx, document_id)
            for start in range(0, len(rows), INDEX_BATCH):
                batch = rows[start : start + INDEX_BATCH]
                # Embedded before the write, so the writer never waits on the provider.
                embedded = Embedded(await embed_rows(semantic, batch), model) if semantic else None

                async with db.write() as tx:
                    if not await store.exists(tx, document_id):
                        return  # deleted meanwhile: stop quietly
                    await write_passages(tx, document_id, agent_id, batch, embedded)
                await asyncio.sleep(0)  # let requests use the writer between batches
            async with db.write() as tx:
                await store.finish(tx, document_id, "ready", len(rows), None, now_iso())
            if semantic is not None:
                await db.announce(changes.vectors(agent_id))
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            if isinstance(exc, ProviderError):
                log.warning("indexing document %s failed: %s", document_id, exc.message)
            else:
                log.exception("indexing document %s failed", document_id)
            reason = str(exc)[:500] or type(exc).__name__

            async with db.write() as tx:
                await store.clear_passages(tx, document_id)
                await store.finish(tx, document_id, "failed", 0, reason, now_iso())
