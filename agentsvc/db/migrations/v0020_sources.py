"""Version 20 (issue 34): an agent's sources, sites whose pages its knowledge follows.

A source is a sitemap, a site crawled from a start page, or one URL; each sync is
numbered (`generation`), and each page records the last sync that found it, fetched it
and changed it, so a sync a stopped process left is resumed by another (its lease ran
out) without fetching again what was done. A page keeps its validators (ETag,
Last-Modified) and hashes, so an unchanged page is neither downloaded again nor indexed
again; its document is named by `document_id` (cleared when the document is deleted).
"""

_SCRIPT = """
    CREATE TABLE sources (
        id            TEXT PRIMARY KEY,
        agent_id      TEXT NOT NULL REFERENCES agents(id) ON DELETE CASCADE,
        team_id       TEXT NOT NULL,
        type          TEXT NOT NULL CHECK (type IN ('sitemap', 'crawl', 'url')),
        url           TEXT NOT NULL,
        include       TEXT NOT NULL,           -- JSON [glob]
        exclude       TEXT NOT NULL,           -- JSON [glob]
        max_pages     {integer} NOT NULL,
        schedule      TEXT NOT NULL CHECK (schedule IN ('off', 'hourly', 'daily', 'weekly')),
        status        TEXT NOT NULL CHECK (status IN ('queued', 'syncing', 'ready', 'failed')),
        error         TEXT,
        generation    {integer} NOT NULL DEFAULT 0,  -- the number of the last sync begun
        removed       {integer} NOT NULL DEFAULT 0,  -- pages the last sync removed
        lease_until   TEXT,
        last_sync_at  TEXT,
        next_sync_at  TEXT,
        created_at    TEXT NOT NULL,
        updated_at    TEXT NOT NULL
    );
    CREATE INDEX sources_agent ON sources(agent_id, created_at);
    CREATE INDEX sources_open ON sources(status, lease_until)
        WHERE status IN ('queued', 'syncing');
    CREATE INDEX sources_due ON sources(next_sync_at) WHERE next_sync_at IS NOT NULL;
    CREATE TABLE source_pages (
        source_id      TEXT NOT NULL REFERENCES sources(id) ON DELETE CASCADE,
        url            TEXT NOT NULL,          -- normalised
        status         TEXT NOT NULL
            CHECK (status IN ('pending', 'ok', 'failed', 'duplicate', 'skipped')),
        found_in       {integer} NOT NULL,     -- the last sync that found it
        done_in        {integer} NOT NULL DEFAULT 0,  -- the last sync that fetched it
        changed_in     {integer} NOT NULL DEFAULT 0,  -- the last sync that changed it
        etag           TEXT,
        last_modified  TEXT,
        body_hash      TEXT,
        text_hash      TEXT,
        document_id    TEXT REFERENCES documents(id) ON DELETE SET NULL,
        links          TEXT,                   -- JSON [url]: the site's pages it links to
        error          TEXT,
        changed_at     TEXT,
        fetched_at     TEXT,
        PRIMARY KEY (source_id, url)
    );
    CREATE INDEX source_pages_document ON source_pages(document_id)
        WHERE document_id IS NOT NULL;
"""

# Constant text only (no value is ever formatted into these scripts).
SQLITE = _SCRIPT.replace("{integer}", "INTEGER")
POSTGRES = _SCRIPT.replace("{integer}", "BIGINT")

# Taken away again, for the tests that build a PostgreSQL database of an earlier version.
UNDO_POSTGRES = """
DROP TABLE source_pages;
DROP TABLE sources;
"""
