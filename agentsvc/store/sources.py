"""Knowledge sources (sites an agent's knowledge follows), their syncs' leases and pages."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from agentsvc.db import Tx
from agentsvc.store.rows import dump_json, load_json


@dataclass(frozen=True, slots=True)
class Source:
    id: str
    agent_id: str
    team_id: str
    type: str  # sitemap, crawl, url
    url: str
    include: list[str]
    exclude: list[str]
    max_pages: int
    schedule: str  # off, hourly, daily, weekly
    status: str  # queued, syncing, ready, failed
    error: str | None
    generation: int
    removed: int
    lease_until: str | None
    last_sync_at: str | None
    next_sync_at: str | None
    created_at: str
    updated_at: str


@dataclass(frozen=True, slots=True)
class PageCounts:
    """A source's pages in its last sync: found, fetched (200 or 304), changed, failed."""

    found: int = 0
    fetched: int = 0
    changed: int = 0
    failed: int = 0


@dataclass(frozen=True, slots=True)
class SourcePage:
    source_id: str
    url: str
    status: str  # pending, ok, failed, duplicate, skipped
    found_in: int
    done_in: int
    changed_in: int
    etag: str | None
    last_modified: str | None
    body_hash: str | None
    text_hash: str | None
    document_id: str | None
    links: list[str] | None
    error: str | None
    changed_at: str | None
    fetched_at: str | None


@dataclass(frozen=True, slots=True)
class PageResult:
    """What a fetch of a page leaves on its row (the row's document is set apart)."""

    status: str
    etag: str | None = None
    last_modified: str | None = None
    body_hash: str | None = None
    text_hash: str | None = None
    error: str | None = None
    changed: bool = False
    links: list[str] | None = None  # None: those known stay


_SOURCE = (
    "id, agent_id, team_id, type, url, include, exclude, max_pages, schedule, status, error,"
    " generation, removed, lease_until, last_sync_at, next_sync_at, created_at, updated_at"
)
_PAGE = (
    "source_id, url, status, found_in, done_in, changed_in, etag, last_modified, body_hash,"
    " text_hash, document_id, links, error, changed_at, fetched_at"
)
_COUNTS = (
    "SELECT COUNT(*),"
    " COALESCE(SUM(CASE WHEN p.done_in = s.generation AND p.status IN ('ok', 'duplicate')"
    " THEN 1 ELSE 0 END), 0),"
    " COALESCE(SUM(CASE WHEN p.changed_in = s.generation THEN 1 ELSE 0 END), 0),"
    " COALESCE(SUM(CASE WHEN p.done_in = s.generation AND p.status = 'failed' THEN 1 ELSE 0 END),"
    " 0) FROM source_pages p JOIN sources s ON s.id = p.source_id"
    " WHERE p.source_id = ? AND p.found_in = s.generation"
)


def _page(row: Any) -> SourcePage:
    links = load_json(row[11]) if row[11] is not None else None
    return SourcePage(*row[:11], links, *row[12:])


def _source(row: Any) -> Source:
    return Source(*row[:5], load_json(row[5]), load_json(row[6]), *row[7:])


async def insert(tx: Tx, found: Source) -> None:
    await tx.execute(
        f"INSERT INTO sources ({_SOURCE}) VALUES ({', '.join('?' * 18)})",
        (
            found.id,
            found.agent_id,
            found.team_id,
            found.type,
            found.url,
            dump_json(found.include),
            dump_json(found.exclude),
            found.max_pages,
            found.schedule,
            found.status,
            found.error,
            found.generation,
            found.removed,
            found.lease_until,
            found.last_sync_at,
            found.next_sync_at,
            found.created_at,
            found.updated_at,
        ),
    )


async def get(tx: Tx, source_id: str) -> Source | None:
    rows = await tx.fetchall(f"SELECT {_SOURCE} FROM sources WHERE id = ?", (source_id,))
    return _source(rows[0]) if rows else None


async def of_agent(tx: Tx, agent_id: str) -> list[Source]:
    rows = await tx.fetchall(
        f"SELECT {_SOURCE} FROM sources WHERE agent_id = ? ORDER BY created_at DESC, id DESC",
        (agent_id,),
    )
    return [_source(r) for r in rows]


async def count_of_agent(tx: Tx, agent_id: str) -> int:
    return int(await tx.fetchval("SELECT COUNT(*) FROM sources WHERE agent_id = ?", (agent_id,)))


async def counts(tx: Tx, source_id: str) -> PageCounts:
    row = await tx.fetchone(_COUNTS, (source_id,))
    return PageCounts(*(int(v) for v in row)) if row else PageCounts()


async def update_settings(tx: Tx, found: Source) -> None:
    """Write what PATCH may change: globs, the page limit, the schedule and its next time."""
    await tx.execute(
        "UPDATE sources SET include = ?, exclude = ?, max_pages = ?, schedule = ?,"
        " next_sync_at = ?, updated_at = ? WHERE id = ?",
        (
            dump_json(found.include),
            dump_json(found.exclude),
            found.max_pages,
            found.schedule,
            found.next_sync_at,
            found.updated_at,
            found.id,
        ),
    )


async def delete(tx: Tx, source_id: str) -> None:
    """Delete a source, its pages and the documents they made."""
    await tx.execute(
        "DELETE FROM documents WHERE id IN (SELECT document_id FROM source_pages"
        " WHERE source_id = ? AND document_id IS NOT NULL)",
        (source_id,),
    )
    await tx.execute("DELETE FROM sources WHERE id = ?", (source_id,))


async def queue(tx: Tx, source_id: str, now: str) -> bool:
    """Ask for a sync, unless one is asked for or under way."""
    changed = await tx.execute(
        "UPDATE sources SET status = 'queued', updated_at = ? WHERE id = ?"
        " AND status IN ('ready', 'failed')",
        (now, source_id),
    )
    return changed > 0


async def any_due(tx: Tx, now: str) -> bool:
    """Whether a scheduled source's next sync is due (read before writing anything)."""
    row = await tx.fetchone(
        "SELECT 1 FROM sources WHERE next_sync_at IS NOT NULL AND next_sync_at <= ?"
        " AND status IN ('ready', 'failed') LIMIT 1",
        (now,),
    )
    return row is not None


async def queue_due(tx: Tx, now: str) -> int:
    """Queue every scheduled source whose next sync is due."""
    return await tx.execute(
        "UPDATE sources SET status = 'queued', next_sync_at = NULL, updated_at = ?"
        " WHERE next_sync_at IS NOT NULL AND next_sync_at <= ? AND status IN ('ready', 'failed')",
        (now, now),
    )


async def claim(tx: Tx, source_id: str, now: str, lease_until: str) -> bool:
    """Take a queued source (its sync begins: a new generation), or one syncing whose lease
    ran out (its process died: the same generation goes on)."""
    changed = await tx.execute(
        "UPDATE sources SET"
        " generation = CASE WHEN status = 'queued' THEN generation + 1 ELSE generation END,"
        " removed = CASE WHEN status = 'queued' THEN 0 ELSE removed END,"
        " status = 'syncing', error = NULL, lease_until = ? WHERE id = ?"
        " AND (status = 'queued' OR (status = 'syncing' AND lease_until < ?))",
        (lease_until, source_id, now),
    )
    return changed > 0


async def abandoned(tx: Tx, now: str, limit: int) -> list[str]:
    """Sources nobody syncs: queued, or syncing with a lease run out."""
    rows = await tx.fetchall(
        "SELECT id FROM sources WHERE status IN ('queued', 'syncing')"
        " AND (lease_until IS NULL OR lease_until < ?) ORDER BY updated_at LIMIT ?",
        (now, limit),
    )
    return [r[0] for r in rows]


async def renew(tx: Tx, source_id: str, lease_until: str) -> None:
    await tx.execute(
        "UPDATE sources SET lease_until = ? WHERE id = ? AND status = 'syncing'",
        (lease_until, source_id),
    )


async def finish(
    tx: Tx, source_id: str, error: str | None, now: str, next_sync_at: str | None
) -> None:
    await tx.execute(
        "UPDATE sources SET status = ?, error = ?, lease_until = NULL, last_sync_at = ?,"
        " next_sync_at = ?, updated_at = ? WHERE id = ? AND status = 'syncing'",
        ("failed" if error else "ready", error, now, next_sync_at, now, source_id),
    )


# ── pages ────────────────────────────────────────────────────────────────────────────────


async def found(tx: Tx, source_id: str, generation: int, urls: list[str]) -> int:
    """Record pages as found by this sync (new ones pending); return how many were not yet."""
    added = 0
    for url in urls:
        added += await tx.execute(
            f"INSERT INTO source_pages ({_PAGE}) VALUES"
            " (?, ?, 'pending', ?, 0, 0, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL)"
            " ON CONFLICT (source_id, url) DO UPDATE SET found_in = excluded.found_in"
            " WHERE source_pages.found_in < excluded.found_in",
            (source_id, url, generation),
        )
    return added


async def found_urls(tx: Tx, source_id: str, generation: int) -> list[str]:
    """The pages this sync has found so far (a resumed sync goes on from them)."""
    rows = await tx.fetchall(
        "SELECT url FROM source_pages WHERE source_id = ? AND found_in = ?",
        (source_id, generation),
    )
    return [r[0] for r in rows]


async def to_fetch(tx: Tx, source_id: str, generation: int) -> list[str]:
    """Pages this sync found and has not fetched yet (after a resume: those left)."""
    rows = await tx.fetchall(
        "SELECT url FROM source_pages WHERE source_id = ? AND found_in = ? AND done_in < ?"
        " ORDER BY url",
        (source_id, generation, generation),
    )
    return [r[0] for r in rows]


async def page(tx: Tx, source_id: str, url: str) -> SourcePage | None:
    rows = await tx.fetchall(
        f"SELECT {_PAGE} FROM source_pages WHERE source_id = ? AND url = ?", (source_id, url)
    )
    return _page(rows[0]) if rows else None


async def pages(tx: Tx, source_id: str, after: str, limit: int) -> list[SourcePage]:
    rows = await tx.fetchall(
        f"SELECT {_PAGE} FROM source_pages WHERE source_id = ? AND url > ? ORDER BY url LIMIT ?",
        (source_id, after, limit),
    )
    return [_page(r) for r in rows]


async def record(
    tx: Tx, source_id: str, url: str, generation: int, result: PageResult, now: str
) -> None:
    """What a sync's fetch of a page found (its document apart: `set_document`)."""
    await tx.execute(
        "UPDATE source_pages SET status = ?, done_in = ?, etag = ?, last_modified = ?,"
        " body_hash = ?, text_hash = ?, error = ?, fetched_at = ?, links = COALESCE(?, links),"
        " changed_in = CASE WHEN ? THEN ? ELSE changed_in END,"
        " changed_at = CASE WHEN ? THEN ? ELSE changed_at END"
        " WHERE source_id = ? AND url = ?",
        (
            result.status,
            generation,
            result.etag,
            result.last_modified,
            result.body_hash,
            result.text_hash,
            result.error,
            now,
            None if result.links is None else dump_json(result.links),
            result.changed,
            generation,
            result.changed,
            now,
            source_id,
            url,
        ),
    )


async def set_document(tx: Tx, source_id: str, url: str, document_id: str | None) -> None:
    await tx.execute(
        "UPDATE source_pages SET document_id = ? WHERE source_id = ? AND url = ?",
        (document_id, source_id, url),
    )


async def remove_page(tx: Tx, source_id: str, url: str) -> None:
    """A page gone from the site: its row, its document, counted as removed."""
    await tx.execute(
        "DELETE FROM documents WHERE id = (SELECT document_id FROM source_pages"
        " WHERE source_id = ? AND url = ?)",
        (source_id, url),
    )
    changed = await tx.execute(
        "DELETE FROM source_pages WHERE source_id = ? AND url = ?", (source_id, url)
    )
    await tx.execute("UPDATE sources SET removed = removed + ? WHERE id = ?", (changed, source_id))


async def unfound(tx: Tx, source_id: str, generation: int, limit: int) -> list[str]:
    """Pages this sync did not find (gone from the sitemap or the site's links)."""
    rows = await tx.fetchall(
        "SELECT url FROM source_pages WHERE source_id = ? AND found_in < ? LIMIT ?",
        (source_id, generation, limit),
    )
    return [r[0] for r in rows]


async def source_of_documents(tx: Tx, document_ids: list[str]) -> dict[str, str]:
    """The source that made each of these documents (those made by one)."""
    found: dict[str, str] = {}
    for start in range(0, len(document_ids), 500):  # within every backend's parameter cap
        batch = document_ids[start : start + 500]
        rows = await tx.fetchall(
            "SELECT document_id, source_id FROM source_pages WHERE document_id IN"
            f" ({', '.join('?' * len(batch))})",
            tuple(batch),
        )
        found.update({r[0]: r[1] for r in rows})
    return found
