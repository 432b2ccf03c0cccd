"""The schema a new database gets, and the version a fully migrated one has."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from agentsvc.migrations import MIGRATIONS


def schema_sql() -> str:
    """Return the current schema: packaged in the wheel, or beside the package in a checkout."""
    packaged = resources.files("agentsvc").joinpath("schema.sql")
    if packaged.is_file():
        return packaged.read_text(encoding="utf-8")
    return (Path(__file__).resolve().parents[2] / "schema.sql").read_text(encoding="utf-8")


def schema_version() -> int:
    """The `user_version` a fully migrated database has."""
    return 1 + len(MIGRATIONS)
