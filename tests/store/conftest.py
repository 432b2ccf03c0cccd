"""Fast store tests: a fresh, fully migrated database in a temporary directory, no app."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from agentsvc.db.sqlite import SqliteDatabase


@pytest.fixture
async def db(tmp_path: Path) -> AsyncIterator[SqliteDatabase]:
    database = SqliteDatabase(tmp_path / "store.db")
    await database.open()
    try:
        yield database
    finally:
        await database.close()
