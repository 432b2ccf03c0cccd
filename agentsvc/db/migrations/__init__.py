"""Every schema version, each written once: its SQLite and PostgreSQL statements side by side.

`vNNNN_<what>.py` is version NNNN: `SQLITE` (the script that brings a version NNNN-1 SQLite
database to it), `POSTGRES` (the same for PostgreSQL, or None for the versions older than
PostgreSQL's first schema) and, where there is a PostgreSQL migration, `UNDO_POSTGRES` (what
takes it away again, for the tests that build an older database). `v0001_initial.py` holds
the first release's schema, where the history starts.

A new database gets the newest schema in one go: `schema.sql` at the top of the checkout
(shipped inside the wheel) on SQLite, `schema_postgres.sql` here on PostgreSQL. A change to
the schema is a new module here plus the same change folded into both files; the tests
prove `schema.sql` equals version 1 migrated to the newest version, and compare the two
backends' tables.
"""

from __future__ import annotations

import importlib
import pkgutil
import re
import sqlite3
from dataclasses import dataclass
from importlib import resources
from pathlib import Path


@dataclass(frozen=True)
class Migration:
    """One schema version: the statements that bring the version before it there."""

    version: int
    name: str
    sqlite: str
    postgres: str | None  # None: older than PostgreSQL's first schema
    undo_postgres: str | None


def _load() -> tuple[Migration, ...]:
    found: list[Migration] = []
    for info in pkgutil.iter_modules(__path__):
        match = re.fullmatch(r"v(\d{4})_\w+", info.name)
        if match is None:
            continue
        module = importlib.import_module(f"{__name__}.{info.name}")
        found.append(
            Migration(
                version=int(match.group(1)),
                name=info.name,
                sqlite=module.SQLITE,
                postgres=module.POSTGRES,
                undo_postgres=getattr(module, "UNDO_POSTGRES", None),
            )
        )
    found.sort(key=lambda m: m.version)
    numbers = [m.version for m in found]
    assert numbers == list(range(1, len(found) + 1)), f"versions are not 1..N: {numbers}"
    return tuple(found)


VERSIONS = _load()  # VERSIONS[n - 1] is version n
# PostgreSQL databases begin at the last version without PostgreSQL statements: one
# created then got that version's whole schema, so no PostgreSQL migration goes before it.
FIRST_POSTGRES_VERSION = max(m.version for m in VERSIONS if m.postgres is None)
POSTGRES_MIGRATIONS: dict[int, str] = {
    m.version: m.postgres for m in VERSIONS if m.postgres is not None
}
UNDO_POSTGRES: dict[int, str] = {
    m.version: m.undo_postgres for m in VERSIONS if m.undo_postgres is not None
}
assert set(POSTGRES_MIGRATIONS) == set(range(FIRST_POSTGRES_VERSION + 1, len(VERSIONS) + 1))


def schema_version() -> int:
    """The version a fully migrated database has (`user_version`, `schema_info`)."""
    return len(VERSIONS)


def sqlite_schema() -> str:
    """The newest SQLite schema: packaged in the wheel, or at the top of a checkout."""
    packaged = resources.files("agentsvc").joinpath("schema.sql")
    if packaged.is_file():
        return packaged.read_text(encoding="utf-8")
    return (Path(__file__).resolve().parents[3] / "schema.sql").read_text(encoding="utf-8")


def postgres_schema() -> str:
    """The newest PostgreSQL schema."""
    return resources.files(__name__).joinpath("schema_postgres.sql").read_text(encoding="utf-8")


def schema_at(version: int) -> str:
    """A script that makes an empty SQLite file a database of `version`, as upgrade tests
    need: version 1 migrated that far, its objects in the order they were made."""
    conn = sqlite3.connect(":memory:")
    try:
        for migration in VERSIONS[:version]:
            conn.executescript(migration.sqlite)
        rows = conn.execute(
            "SELECT type, name, sql FROM sqlite_master WHERE sql IS NOT NULL ORDER BY rowid"
        ).fetchall()
    finally:
        conn.close()
    virtual = [name for kind, name, sql in rows if sql.startswith("CREATE VIRTUAL TABLE")]
    statements = [
        f"{sql};\n"
        for kind, name, sql in rows
        # SQLite makes its own tables and those behind a virtual (FTS5) table.
        if not name.startswith("sqlite_")
        and not (kind == "table" and any(name.startswith(f"{v}_") for v in virtual))
    ]
    return "".join(statements) + f"PRAGMA user_version = {version};"
