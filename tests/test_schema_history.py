"""`schema.sql` (what a new SQLite database gets) is version 1 with every migration of
`agentsvc/db/migrations/` applied: the same tables, columns, constraints, indexes and
triggers, so an upgraded database and a new one cannot drift apart."""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path

import pytest

from agentsvc.db.migrations import VERSIONS, schema_at, schema_version, sqlite_schema
from agentsvc.db.sqlite import SqliteDatabase


def _split_top_level(body: str) -> list[str]:
    """A CREATE TABLE's body, split at the commas outside parentheses."""
    items, depth, start = [], 0, 0
    for i, char in enumerate(body):
        if char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
        elif char == "," and depth == 0:
            items.append(body[start:i].strip())
            start = i + 1
    items.append(body[start:].strip())
    return items


def _normalised(sql: str) -> str:
    sql = re.sub(r"--[^\n]*", " ", sql)  # comments
    sql = sql.replace('"', "")  # RENAME COLUMN writes the new name quoted
    sql = re.sub(r"\s+", " ", sql).strip()
    return re.sub(r"\s*([(),])\s*", r"\1", sql)


def schema_of(conn: sqlite3.Connection) -> dict[tuple[str, str], object]:
    """Every object in sqlite_master, normalised: comments, spacing and quoting dropped; a
    table as the set of its column definitions and constraints (ALTER TABLE ... ADD COLUMN
    appends a column where schema.sql may list it in the middle)."""
    objects: dict[tuple[str, str], object] = {}
    for kind, name, table, sql in conn.execute(
        "SELECT type, name, tbl_name, sql FROM sqlite_master WHERE sql IS NOT NULL"
    ):
        text = _normalised(sql)
        if kind == "table" and not text.startswith("CREATE VIRTUAL TABLE"):
            head, _, rest = text.partition("(")
            body = rest[: rest.rindex(")")]
            objects[kind, name] = (head, frozenset(_split_top_level(body)))
        else:
            objects[kind, name] = (table, text)
    return objects


def _connect(path) -> sqlite3.Connection:
    return sqlite3.connect(path)


async def _opened(path) -> None:
    """Open (create or migrate) the database with the app's own migrator, then close it."""
    db = SqliteDatabase(path)
    await db.open()
    await db.close()


async def test_schema_sql_is_version_1_migrated_to_the_newest(tmp_path):
    new, old = tmp_path / "new.db", tmp_path / "old.db"
    await _opened(new)
    conn = _connect(old)
    conn.executescript(VERSIONS[0].sqlite + "PRAGMA user_version = 1;")
    conn.close()
    await _opened(old)
    migrated, fresh = _connect(old), _connect(new)
    try:
        assert migrated.execute("PRAGMA user_version").fetchone()[0] == schema_version()
        assert fresh.execute("PRAGMA user_version").fetchone()[0] == schema_version()
        got, want = schema_of(migrated), schema_of(fresh)
        assert sorted(set(got) ^ set(want)) == []  # the same objects, by name
        assert {k: v for k, v in got.items() if want[k] != v} == {}
    finally:
        migrated.close()
        fresh.close()


def test_schema_sql_is_what_a_new_database_gets():
    """The file the migrator runs for a new database is the one at the top of the tree."""
    conn = sqlite3.connect(":memory:")
    conn.executescript(sqlite_schema())
    assert schema_of(conn) == schema_of(_at(schema_version()))
    conn.close()


def _at(version: int) -> sqlite3.Connection:
    conn = sqlite3.connect(":memory:")
    conn.executescript(schema_at(version))
    return conn


@pytest.mark.parametrize("version", range(1, schema_version()))
async def test_a_database_of_any_version_migrates_to_schema_sql(tmp_path, version):
    """An older database (as the upgrade tests build one) ends as a new one starts."""
    old = tmp_path / "old.db"
    conn = _connect(old)
    conn.executescript(schema_at(version))
    conn.close()
    await _opened(old)
    migrated, fresh = _connect(old), sqlite3.connect(":memory:")
    fresh.executescript(sqlite_schema())
    try:
        assert migrated.execute("PRAGMA user_version").fetchone()[0] == schema_version()
        assert schema_of(migrated) == schema_of(fresh)
    finally:
        migrated.close()
        fresh.close()


def test_no_other_module_holds_schema_statements():
    """The schema is written in agentsvc/db/migrations/ (and schema.sql) and nowhere else
    in the package."""
    package = Path(__file__).resolve().parent.parent / "agentsvc"
    # (Upkeep may drop an index: search_index.py removes a failed concurrent reindex's.)
    statement = re.compile(r"\b(CREATE( UNIQUE| VIRTUAL)?|ALTER) (TABLE|INDEX|TRIGGER|FUNCTION)\b")
    holders = [
        str(path.relative_to(package))
        for path in sorted(package.rglob("*"))
        if path.suffix in (".py", ".sql")
        and "migrations" not in path.relative_to(package).parts
        and statement.search(path.read_text(encoding="utf-8"))
    ]
    assert holders == []
