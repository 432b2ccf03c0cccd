"""Knowledge documents, their passages and the FTS5 index over them (kept in sync by triggers)."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from dataclasses import dataclass

import aiosqlite


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


@dataclass(frozen=True, slots=True)
class PassageRow:
    """A passage as stored: position within its document, heading path and text."""

    position: int
    heading: str
    text: str


@dataclass(frozen=True, slots=True)
class Hit:
    """A retrieved passage: its document, texts and BM25 score (higher is better)."""

    document_id: str
    title: str
    heading: str
    text: str
    score: float


_COLUMNS = (
    "id, agent_id, team_id, title, source_type, format, filename, source_url, size_bytes,"
    " status, error, passage_count, created_at, updated_at"
)


def agent_in_team(raw: sqlite3.Connection, agent_id: str, team_id: str) -> bool:
    sql = "SELECT 1 FROM agents WHERE id = ? AND team_id = ?"
    return raw.execute(sql, (agent_id, team_id)).fetchone() is not None


def insert(raw: sqlite3.Connection, doc: Document, content: str) -> None:
    raw.execute(
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


async def get(conn: aiosqlite.Connection, team_id: str, document_id: str) -> Document | None:
    """Return the team's document, or None when absent or another team's."""
    rows = await conn.execute_fetchall(
        f"SELECT {_COLUMNS} FROM documents WHERE id = ? AND team_id = ?", (document_id, team_id)
    )
    return Document(*rows[0]) if rows else None


async def get_with_content(
    conn: aiosqlite.Connection, team_id: str, document_id: str
) -> tuple[Document, str] | None:
    """Return the team's document and its extracted text."""
    rows = await conn.execute_fetchall(
        f"SELECT {_COLUMNS}, content FROM documents WHERE id = ? AND team_id = ?",
        (document_id, team_id),
    )
    return (Document(*rows[0][:-1]), rows[0][-1]) if rows else None


async def list_for_agent(conn: aiosqlite.Connection, agent_id: str) -> list[Document]:
    rows = await conn.execute_fetchall(
        f"SELECT {_COLUMNS} FROM documents WHERE agent_id = ? ORDER BY created_at DESC, rowid DESC",
        (agent_id,),
    )
    return [Document(*r) for r in rows]


async def delete(conn: aiosqlite.Connection, team_id: str, document_id: str) -> bool:
    """Delete a document; its passages (and their index entries) go with it."""
    cur = await conn.execute(
        "DELETE FROM documents WHERE id = ? AND team_id = ?", (document_id, team_id)
    )
    return cur.rowcount > 0


def ids_indexing(raw: sqlite3.Connection) -> list[str]:
    """Documents left `indexing` (by a stop mid-way), oldest first."""
    rows = raw.execute(
        "SELECT id FROM documents WHERE status = 'indexing' ORDER BY created_at"
    ).fetchall()
    return [r[0] for r in rows]


def content_of(raw: sqlite3.Connection, document_id: str) -> tuple[str, str, str] | None:
    """(agent_id, title, content) of a document still `indexing`, or None."""
    row = raw.execute(
        "SELECT agent_id, title, content FROM documents WHERE id = ? AND status = 'indexing'",
        (document_id,),
    ).fetchone()
    return (row[0], row[1], row[2]) if row else None


def insert_passages(
    raw: sqlite3.Connection, document_id: str, agent_id: str, passages: Iterable[PassageRow]
) -> None:
    """Insert passages (the insert trigger indexes each one)."""
    raw.executemany(
        "INSERT INTO passages (document_id, agent_id, position, heading, text)"
        " VALUES (?, ?, ?, ?, ?)",
        ((document_id, agent_id, p.position, p.heading, p.text) for p in passages),
    )


def clear_passages(raw: sqlite3.Connection, document_id: str) -> None:
    """Remove a document's passages (to index it again from the start)."""
    raw.execute("DELETE FROM passages WHERE document_id = ?", (document_id,))


def finish(
    raw: sqlite3.Connection,
    document_id: str,
    status: str,
    passage_count: int,
    error: str | None,
    now: str,
) -> bool:
    """Set a document's final status; False when it is gone or no longer `indexing`."""
    cur = raw.execute(
        "UPDATE documents SET status = ?, passage_count = ?, error = ?, updated_at = ?"
        " WHERE id = ? AND status = 'indexing'",
        (status, passage_count, error, now, document_id),
    )
    return cur.rowcount > 0


def exists(raw: sqlite3.Connection, document_id: str) -> bool:
    row = raw.execute("SELECT 1 FROM documents WHERE id = ?", (document_id,)).fetchone()
    return row is not None


# Ranks the agent's passages inside FTS5 (the scope token restricts the match to them), then
# joins for the texts. Passages of documents still indexing can take places in the inner
# LIMIT, hence the margin there; the outer query keeps `ready` ones only. Heading matches
# weigh double; the scope column weighs nothing.
_SEARCH = """
SELECT p.document_id, d.title, p.heading, p.text, -m.score
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


async def search(
    conn: aiosqlite.Connection, agent_id: str, match: str, k: int, margin: int
) -> list[Hit]:
    """Run an FTS5 match expression for one agent and return its best k passages."""
    rows = await conn.execute_fetchall(_SEARCH, (match, k + margin, agent_id, k))
    return [Hit(*r) for r in rows]
