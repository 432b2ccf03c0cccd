"""Knowledge documents, their passages, the FTS5 index over them (kept in sync by triggers)
and the passages' embeddings."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from agentsvc.db import Tx
from agentsvc.store import pg_passage_search


@dataclass(frozen=True, slots=True)
class Document:
    id: str
    agent_id: str
    team_id: str
    title: str
    source_type: str
    format: str
    filename: str | None
    source_url: str | None
    size_bytes: int
    status: str
    error: str | None
    passage_count: int
    created_at: str
    updated_at: str
    source_id: str | None = None  # the source whose page made it (not a column: source_pages)


@dataclass(frozen=True, slots=True)
class PassageRow:
    """A passage as stored: position within its document, heading path and text."""

    position: int
    heading: str
    text: str


@dataclass(frozen=True, slots=True)
class Hit:
    """A retrieved passage: its document, texts and BM25 score (higher is better)."""

    passage_id: int
    document_id: str
    title: str
    heading: str
    text: str
    score: float
    url: str | None = None  # the document's source_url (fetched from a URL), else None


_COLUMNS = (
    "id, agent_id, team_id, title, source_type, format, filename, source_url, size_bytes,"
    " status, error, passage_count, created_at, updated_at"
)


async def agent_in_team(tx: Tx, agent_id: str, team_id: str) -> bool:
    sql = "SELECT 1 FROM agents WHERE id = ? AND team_id = ?"
    return (await tx.fetchone(sql, (agent_id, team_id))) is not None


async def insert(tx: Tx, doc: Document, content: str) -> None:
    await tx.execute(
        f"INSERT INTO documents ({_COLUMNS}, content)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            doc.id,
            doc.agent_id,
            doc.team_id,
            doc.title,
            doc.source_type,
            doc.format,
            doc.filename,
            doc.source_url,
            doc.size_bytes,
            doc.status,
            doc.error,
            doc.passage_count,
            doc.created_at,
            doc.updated_at,
            content,
        ),
    )


async def get(tx: Tx, team_id: str, document_id: str) -> Document | None:
    """Return the team's document, or None when absent or another team's."""
    rows = await tx.fetchall(
        f"SELECT {_COLUMNS} FROM documents WHERE id = ? AND team_id = ?", (document_id, team_id)
    )
    return Document(*rows[0]) if rows else None


async def get_with_content(tx: Tx, team_id: str, document_id: str) -> tuple[Document, str] | None:
    """Return the team's document and its extracted text."""
    rows = await tx.fetchall(
        f"SELECT {_COLUMNS}, content FROM documents WHERE id = ? AND team_id = ?",
        (document_id, team_id),
    )
    return (Document(*rows[0][:-1]), rows[0][-1]) if rows else None


async def list_for_agent(tx: Tx, agent_id: str) -> list[Document]:
    rows = await tx.fetchall(
        f"SELECT {_COLUMNS} FROM documents WHERE agent_id = ? ORDER BY created_at DESC, rowid DESC",
        (agent_id,),
    )
    return [Document(*r) for r in rows]


async def delete(tx: Tx, team_id: str, document_id: str) -> bool:
    """Delete a document; its passages (and their index entries) go with it."""
    changed = await tx.execute(
        "DELETE FROM documents WHERE id = ? AND team_id = ?", (document_id, team_id)
    )
    return changed > 0


async def ids_indexing(tx: Tx) -> list[str]:
    """Documents left `indexing` (by a stop mid-way), oldest first."""
    rows = await tx.fetchall(
        "SELECT id FROM documents WHERE status = 'indexing' ORDER BY created_at"
    )
    return [r[0] for r in rows]


async def content_of(tx: Tx, document_id: str) -> tuple[str, str, str] | None:
    """(agent_id, title, content) of a document still `indexing`, or None."""
    row = await tx.fetchone(
        "SELECT agent_id, title, content FROM documents WHERE id = ? AND status = 'indexing'",
        (document_id,),
    )
    return (row[0], row[1], row[2]) if row else None


# PostgreSQL: the GIN index keeps new entries in a pending list, which every search reads
# through whole until it is merged into the index (by VACUUM, or by the insert that takes
# it past gin_pending_list_limit, 4 MB by default): ~3.6 µs a page for each index scan, up
# to 1.9 ms at 4 MB, and retrieval scans the index twice. A transaction writing passages
# merges it past 1 MB instead: ~0.5 ms at most, and merging in smaller batches costs
# indexing on the server ~45 % more time than at 4 MB (twice as much at 256 kB).
_PENDING_LIMIT = "SET LOCAL gin_pending_list_limit = 1024"


async def insert_passages(
    tx: Tx, document_id: str, agent_id: str, passages: Iterable[PassageRow]
) -> None:
    """Insert passages (the insert trigger indexes each one)."""
    if tx.dialect == "postgresql":
        await tx.execute(_PENDING_LIMIT)
    await tx.executemany(
        "INSERT INTO passages (document_id, agent_id, position, heading, text)"
        " VALUES (?, ?, ?, ?, ?)",
        ((document_id, agent_id, p.position, p.heading, p.text) for p in passages),
    )


async def passage_ids(tx: Tx, document_id: str, first: int, last: int) -> list[int]:
    """The ids of a document's passages at positions first..last, in position order."""
    rows = await tx.fetchall(
        "SELECT id FROM passages WHERE document_id = ? AND position BETWEEN ? AND ?"
        " ORDER BY position",
        (document_id, first, last),
    )
    return [r[0] for r in rows]


async def insert_embeddings(
    tx: Tx,
    agent_id: str,
    model: str,
    dims: int,
    vectors: Iterable[tuple[int, bytes]],
) -> None:
    """Store passages' embeddings: (passage_id, float32 little-endian bytes) pairs."""
    await tx.executemany(
        "INSERT INTO passage_embeddings (passage_id, agent_id, model, dims, vector)"
        " VALUES (?, ?, ?, ?, ?) ON CONFLICT (passage_id) DO UPDATE SET"
        " agent_id = excluded.agent_id, model = excluded.model, dims = excluded.dims,"
        " vector = excluded.vector",
        ((passage_id, agent_id, model, dims, blob) for passage_id, blob in vectors),
    )


async def ready_vectors(tx: Tx, agent_id: str, model: str) -> list[tuple[int, int, bytes]]:
    """(passage_id, dims, vector) by `model` of the agent's passages in `ready` documents."""
    rows = await tx.fetchall(
        "SELECT e.passage_id, e.dims, e.vector FROM passage_embeddings AS e"
        " JOIN passages AS p ON p.id = e.passage_id"
        " JOIN documents AS d ON d.id = p.document_id"
        " WHERE e.agent_id = ? AND e.model = ? AND d.status = 'ready'",
        (agent_id, model),
    )
    return [(r[0], r[1], r[2]) for r in rows]


# The sqlite-vec path: the same ranking computed by the extension inside SQLite.
_VEC_SEARCH = """
SELECT e.passage_id
FROM passage_embeddings AS e
JOIN passages AS p ON p.id = e.passage_id
JOIN documents AS d ON d.id = p.document_id
WHERE e.agent_id = ? AND e.model = ? AND e.dims = ? AND d.status = 'ready'
ORDER BY vec_distance_cosine(e.vector, ?)
LIMIT ?
"""


async def vec_search(
    tx: Tx, agent_id: str, model: str, query: bytes, dims: int, n: int
) -> list[int]:
    """Passage ids nearest to a float32 query vector, by sqlite-vec's cosine distance."""
    rows = await tx.fetchall(_VEC_SEARCH, (agent_id, model, dims, query, n))
    return [r[0] for r in rows]


async def hits_by_id(tx: Tx, agent_id: str, ids: list[int]) -> list[Hit]:
    """The agent's passages with these ids that belong to `ready` documents (any order)."""
    if not ids:
        return []
    marks = ",".join("?" * len(ids))
    rows = await tx.fetchall(
        "SELECT p.id, p.document_id, d.title, p.heading, p.text, 0.0, d.source_url"
        " FROM passages AS p JOIN documents AS d ON d.id = p.document_id"
        f" WHERE p.id IN ({marks}) AND p.agent_id = ? AND d.status = 'ready'",
        (*ids, agent_id),
    )
    return [Hit(*r) for r in rows]


async def clear_passages(tx: Tx, document_id: str) -> None:
    """Remove a document's passages (to index it again from the start)."""
    await tx.execute("DELETE FROM passages WHERE document_id = ?", (document_id,))


async def finish(
    tx: Tx,
    document_id: str,
    status: str,
    passage_count: int,
    error: str | None,
    now: str,
) -> bool:
    """Set a document's final status; False when it is gone or no longer `indexing`."""
    changed = await tx.execute(
        "UPDATE documents SET status = ?, passage_count = ?, error = ?, updated_at = ?"
        " WHERE id = ? AND status = 'indexing'",
        (status, passage_count, error, now, document_id),
    )
    return changed > 0


async def exists(tx: Tx, document_id: str) -> bool:
    row = await tx.fetchone("SELECT 1 FROM documents WHERE id = ?", (document_id,))
    return row is not None


async def has_ready(tx: Tx, agent_id: str) -> bool:
    """Whether the agent has a document ready to answer from."""
    row = await tx.fetchone(
        "SELECT 1 FROM documents WHERE agent_id = ? AND status = 'ready' LIMIT 1", (agent_id,)
    )
    return row is not None


# SQLite: ranks the agent's passages inside FTS5 (the scope token restricts the match to
# them), then joins for the texts. Passages of documents still indexing can take places in the inner
# LIMIT, hence the margin there; the outer query keeps `ready` ones only. Heading matches
# weigh double; the scope column weighs nothing.
_SEARCH = """
SELECT p.id, p.document_id, d.title, p.heading, p.text, -m.score, d.source_url
FROM (
    SELECT rowid, bm25(passages_fts, 0.0, 2.0, 1.0) AS score
    FROM passages_fts WHERE passages_fts MATCH ? ORDER BY score LIMIT ?
) AS m
JOIN passages AS p ON p.id = m.rowid
JOIN documents AS d ON d.id = p.document_id
WHERE p.agent_id = ? AND d.status = 'ready'
ORDER BY m.score
LIMIT ?
"""


def match_expression(agent_id: str, words: list[str], prefixes: list[str]) -> str:
    """The FTS5 query: this agent's scope token AND any word or prefix in heading or text.

    Words and prefixes are letters and digits only (see `retrieval.query_terms`), so
    quoting them is enough for nothing to be read as FTS5 syntax.
    """
    scope = agent_id.encode().hex()
    alternatives = " OR ".join([*(f'"{w}"' for w in words), *(f'"{p}"*' for p in prefixes)])
    return f'scope : "{scope}" AND {{heading text}} : ({alternatives})'


async def search(
    tx: Tx, agent_id: str, words: list[str], prefixes: list[str], k: int, margin: int
) -> list[Hit]:
    """The agent's best k passages holding any of the words (any form of an English word)
    or a word starting with one of the prefixes, best first."""
    if tx.dialect == "sqlite":
        match = match_expression(agent_id, words, prefixes)
        rows = await tx.fetchall(_SEARCH, (match, k + margin, agent_id, k))
        return [Hit(*r) for r in rows]
    # PostgreSQL: a bounded set of candidates, ranked by ts_rank (pg_passage_search.py).
    rows = await pg_passage_search.search(tx, agent_id, words, prefixes, k, margin)
    return [Hit(*r) for r in rows]


async def replace_content(tx: Tx, doc: Document, content: str) -> bool:
    """Give a document new text (a source's page that changed); its passages are cleared
    by the caller. False when it is gone."""
    changed = await tx.execute(
        "UPDATE documents SET title = ?, format = ?, size_bytes = ?, status = ?, error = ?,"
        " passage_count = ?, updated_at = ?, content = ? WHERE id = ?",
        (
            doc.title,
            doc.format,
            doc.size_bytes,
            doc.status,
            doc.error,
            doc.passage_count,
            doc.updated_at,
            content,
            doc.id,
        ),
    )
    return changed > 0


async def existing_ids(tx: Tx, ids: list[str]) -> set[str]:
    """Which of these document ids exist."""
    if not ids:
        return set()
    marks = ", ".join("?" for _ in ids)
    rows = await tx.fetchall(f"SELECT id FROM documents WHERE id IN ({marks})", ids)
    return {r[0] for r in rows}
