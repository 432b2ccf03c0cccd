"""Fast store tests: a fresh, fully migrated database (SQLite in a temporary directory, or
a schema of its own on the test PostgreSQL server), no app."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from agentsvc.db import Database
from agentsvc.db.postgres import PostgresDatabase
from agentsvc.db.sqlite import SqliteDatabase
from tests.support import pg


@pytest.fixture
async def db(tmp_path: Path) -> AsyncIterator[Database]:
    if pg.SERVER_URL:
        database: Database = PostgresDatabase(pg.fresh_database_url())
    else:
        database = SqliteDatabase(tmp_path / "store.db")
    await database.open()
    try:
        yield database
    finally:
        await database.close()
