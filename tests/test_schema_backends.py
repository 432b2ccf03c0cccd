"""The two backends' newest schemas hold the same things: every table, column (by mapped
type), unique key, index and trigger-maintained counter of `schema.sql` exists in
`schema_postgres.sql` and the other way round, except the differences listed below, each
for a reason. Needs the test PostgreSQL (TEST_POSTGRES_URL)."""

from __future__ import annotations

import re
import sqlite3

import pytest

from agentsvc.db.migrations import sqlite_schema
from tests.support import pg

pytestmark = pg.postgres_only

# SQLite's declared type -> the PostgreSQL types that hold the same values.
TYPES = {
    "INTEGER": {"bigint", "integer"},
    "TEXT": {"text"},
    "REAL": {"double precision"},
    "BLOB": {"bytea"},
}

# ── intended differences ────────────────────────────────────────────────────────────────
# Full-text search: SQLite keeps FTS5 tables (their shadow tables made by SQLite) filled by
# triggers; PostgreSQL searches a generated tsvector column (passages) or an expression
# (messages) through GIN indexes, so it has no tables or triggers for it.
SQLITE_ONLY_TABLES = {"messages_fts", "passages_fts", "sqlite_sequence"}
FTS_SHADOW = re.compile(r"(messages|passages)_fts_\w+")
POSTGRES_ONLY_INDEXES = {
    "messages_search",  # GIN over (agent_id, messages.search): SQLite has messages_fts
    "messages_agent_rowid",  # the agent's newest messages, for a search's common words
    # GIN over (agent_id, passages.search) (btree_gin, which the test server has): SQLite
    # has passages_fts
    "passages_agent_search",
    # Passages by agent: SQLite's FTS5 query restricts by its scope token instead.
    "passages_agent",
}
POSTGRES_ONLY_COLUMNS = {
    ("passages", "search"),  # the generated tsvector of heading and text
    ("messages", "search"),  # the generated tsvector of the content
    ("messages", "agent_id"),  # the conversation's agent (a trigger copies it), for search
}
# Tables that lists order by insertion carry `rowid`, an identity column standing for
# SQLite's implicit rowid, so the store's SQL reads the same on both.
POSTGRES_ROWID = "rowid"
POSTGRES_ONLY_TABLES = {
    "schema_info",  # the version: SQLite keeps it in PRAGMA user_version
    "job_runs",  # claims of periodic jobs among several processes (one process on SQLite)
}
FTS_TARGETS = {"messages_fts", "passages_fts"}  # what the SQLite-only triggers write


def _writes(sql: str) -> set[str]:
    """The tables a trigger's body inserts into, updates or deletes from."""
    found = set(re.findall(r"\b(?:INSERT\s+INTO|DELETE\s+FROM|UPDATE)\s+(\w+)", sql, re.I))
    return {name for name in found if name.upper() != "SET"}  # ... DO UPDATE SET


def _sqlite_catalog() -> dict[str, object]:
    conn = sqlite3.connect(":memory:")
    conn.executescript(sqlite_schema())
    try:
        rows = conn.execute(
            "SELECT type, name, tbl_name, sql FROM sqlite_master WHERE sql IS NOT NULL"
        ).fetchall()
        tables = [
            name
            for kind, name, _, _ in rows
            if kind == "table" and name not in SQLITE_ONLY_TABLES and not FTS_SHADOW.fullmatch(name)
        ]
        columns = {
            (table, col[1]): col[2]
            for table in tables
            for col in conn.execute(f"PRAGMA table_info({table})")
        }
        keys, indexes = set(), {}
        for table in tables:
            for _, index, unique, origin, _ in conn.execute(f"PRAGMA index_list({table})"):
                names = tuple(c[2] for c in conn.execute(f"PRAGMA index_info({index})"))
                if origin in ("pk", "u"):
                    keys.add((table, "primary" if origin == "pk" else "unique", names))
                else:
                    indexes[index] = (table, bool(unique), names)
            # An INTEGER PRIMARY KEY is the rowid itself: no index, but a key all the same.
            pk = [c[1] for c in conn.execute(f"PRAGMA table_info({table})") if c[5]]
            if pk and not any(k[:2] == (table, "primary") for k in keys):
                keys.add((table, "primary", tuple(pk)))
        counters = set()
        for kind, _, table, sql in rows:
            if kind == "trigger":
                event = re.search(r"\b(INSERT|UPDATE|DELETE)\b", sql).group(1).lower()
                body = sql[re.search(r"\bBEGIN\b", sql).end() :]
                counters |= {(table, event, target) for target in _writes(body) - FTS_TARGETS}
    finally:
        conn.close()
    return {
        "tables": set(tables),
        "columns": columns,
        "keys": keys,
        "indexes": indexes,
        "counters": counters,
    }


async def _postgres_catalog(url: str) -> dict[str, object]:
    import asyncpg

    conn = await asyncpg.connect(url)
    try:
        tables = {
            r[0]
            for r in await conn.fetch(
                "SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace"
                " WHERE c.relkind = 'r' AND n.nspname = current_schema()"
            )
        }
        columns = {
            (r[0], r[1]): r[2]
            for r in await conn.fetch(
                "SELECT table_name, column_name, data_type FROM information_schema.columns"
                " WHERE table_schema = current_schema()"
            )
        }
        # Each index: its table, uniqueness, columns (None for an expression), and the
        # constraint it backs (p, u) if any.
        index_rows = await conn.fetch(
            "SELECT i.relname, t.relname, x.indisunique, con.contype::text,"
            " ARRAY(SELECT a.attname FROM unnest(x.indkey) WITH ORDINALITY AS k(attnum, n)"
            "       LEFT JOIN pg_attribute a ON a.attrelid = t.oid AND a.attnum = k.attnum"
            "       ORDER BY k.n)"
            " FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid"
            " JOIN pg_class t ON t.oid = x.indrelid JOIN pg_namespace n ON n.oid = t.relnamespace"
            " LEFT JOIN pg_constraint con ON con.conindid = i.oid AND con.contype IN ('p', 'u')"
            " WHERE n.nspname = current_schema()"
        )
        keys, indexes = set(), {}
        for index, table, unique, constraint, names in index_rows:
            if constraint in ("p", "u"):
                keys.add((table, "primary" if constraint == "p" else "unique", tuple(names)))
            else:
                indexes[index] = (table, unique, tuple(names))
        trigger_rows = await conn.fetch(
            "SELECT c.relname, t.tgtype, p.prosrc FROM pg_trigger t"
            " JOIN pg_class c ON c.oid = t.tgrelid JOIN pg_proc p ON p.oid = t.tgfoid"
            " JOIN pg_namespace n ON n.oid = c.relnamespace"
            " WHERE NOT t.tgisinternal AND n.nspname = current_schema()"
        )
    finally:
        await conn.close()
    counters = set()
    for table, tgtype, source in trigger_rows:
        # tgtype's bits: 4 INSERT, 8 DELETE, 16 UPDATE.
        events = [e for bit, e in ((4, "insert"), (8, "delete"), (16, "update")) if tgtype & bit]
        counters |= {(table, e, target) for e in events for target in _writes(source)}
    return {
        "tables": tables,
        "columns": columns,
        "keys": keys,
        "indexes": indexes,
        "counters": counters,
    }


@pytest.fixture
async def catalogs():
    from agentsvc.db.postgres import PostgresDatabase

    url = pg.fresh_database_url()
    db = PostgresDatabase(url)
    await db.open()
    await db.close()
    return _sqlite_catalog(), await _postgres_catalog(url)


async def test_both_backends_have_the_same_tables(catalogs):
    lite, post = catalogs
    assert lite["tables"] == post["tables"] - POSTGRES_ONLY_TABLES
    assert POSTGRES_ONLY_TABLES <= post["tables"]


async def test_both_backends_have_the_same_columns_of_mapped_types(catalogs):
    lite, post = catalogs
    shared = lite["tables"]
    pg_columns = {
        key: kind
        for key, kind in post["columns"].items()
        if key[0] in shared and key[1] != POSTGRES_ROWID and key not in POSTGRES_ONLY_COLUMNS
    }
    assert sorted(set(lite["columns"]) ^ set(pg_columns)) == []
    mismatched = {
        key: (kind, pg_columns[key])
        for key, kind in lite["columns"].items()
        if pg_columns[key] not in TYPES[kind]
    }
    assert mismatched == {}


async def test_both_backends_have_the_same_keys_and_indexes(catalogs):
    lite, post = catalogs
    pg_keys = {k for k in post["keys"] if k[0] in lite["tables"] and k[2] != (POSTGRES_ROWID,)}
    assert lite["keys"] == pg_keys
    pg_indexes = {
        name: index
        for name, index in post["indexes"].items()
        if name not in POSTGRES_ONLY_INDEXES and index[0] in lite["tables"]
    }
    assert lite["indexes"] == pg_indexes
    assert POSTGRES_ONLY_INDEXES <= set(post["indexes"])


async def test_both_backends_keep_the_same_counters_by_trigger(catalogs):
    """Each (table, change, table written) of SQLite's triggers has a PostgreSQL trigger
    (a row or statement trigger running a PL/pgSQL function) writing the same table."""
    lite, post = catalogs
    assert lite["counters"]  # the parsing found them
    assert sorted(lite["counters"] ^ post["counters"]) == []
