"""`agentsvc migrate [--plan]` and `agentsvc restore PATH [--yes]`: upgrading the
database and going back to a backup, as the operators' guide tells them
(docs/operators/backup-and-upgrade.md). The work is db/upgrade.py's and db/restore.py's;
this module words it."""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from agentsvc.cli_input import UsageError
from agentsvc.config import Settings
from agentsvc.db.backups import Backups
from agentsvc.db.migrations import schema_version
from agentsvc.db.restore import (
    Restored,
    RestoreRefused,
    postgres_archive,
    restore_postgres,
    restore_sqlite,
    sqlite_backup_version,
)
from agentsvc.db.upgrade import Survey, Upgrade


def add_upgrade_commands(commands: Any, add: Callable[..., argparse.ArgumentParser]) -> None:
    """`migrate` and `restore` on the parser; `add(parent, name, help)` makes a command with
    the common options and what it runs."""
    migrate = add(
        commands,
        "migrate",
        "create or upgrade the database schema, after a backup into data_dir/backups/",
    )
    migrate.add_argument(
        "--plan",
        action="store_true",
        help="print the migrations that would run (versions and names) and change nothing",
    )
    restore = add(
        commands,
        "restore",
        "replace the database with a backup (SQLite: a copy such as data_dir/backups/*.db;"
        " PostgreSQL: a pg_dump file); the database replaced is kept in data_dir/backups/",
    )
    restore.add_argument("path", metavar="PATH", help="the backup to restore")
    restore.add_argument(
        "--yes",
        action="store_true",
        help="replace the database without asking (needed when not run in a terminal)",
    )


def plan_lines(settings: Settings, survey: Survey) -> list[str]:
    """What `migrate --plan` prints for a database that would open."""
    label = settings.database_label
    if survey.found is None:
        return [
            f"{label}: no database yet; one would be created at schema version {schema_version()}",
            "nothing was changed",
        ]
    if not survey.steps:
        return [f"{label}: schema version {survey.found}, the newest; nothing to run"]
    lines = [
        f"{label}: schema version {survey.found}; this agentsvc needs {schema_version()}",
        "would run, each migration in a transaction of its own:",
        *(f"  {step.label}" for step in survey.steps),
    ]
    database = settings.database
    if database.backup_before_migrate:
        how = "pg_dump, custom format" if database.url else "an online copy"
        lines.append(
            f"after a backup into {settings.server.data_dir / 'backups'} ({how}; the newest"
            f" {database.backups_kept} kept)"
        )
    else:
        lines.append("without a backup ([database] backup_before_migrate = false)")
    lines.append("nothing was changed")
    return lines


def migrated_line(settings: Settings, done: Upgrade | None) -> str:
    """What `migrate` prints once the database is open."""
    label = settings.database_label
    if done is None:
        return f"{label}: schema version {schema_version()} (nothing to migrate)"
    if done.found == 0:
        return f"{label}: schema version {done.reached} (a new database)"
    backup = f"; backup: {done.backup}" if done.backup else "; no backup taken"
    return (
        f"{label}: upgraded from schema version {done.found} to {done.reached}"
        f" ({done.reached - done.found} migrations){backup}"
    )


def restore_command(settings: Settings, path: Path, yes: bool) -> str:
    """Check the backup, ask (or take --yes), restore; the line to print."""
    database = settings.database
    backups = Backups(
        settings.server.data_dir / "backups",
        database.backups_kept,
        "dump" if database.url else "db",
    )
    if database.url:
        archive = postgres_archive(path, database.pg_bin_dir)
        _confirm(settings, path, archive.version, yes)
        try:
            done = asyncio.run(
                restore_postgres(database.url, path, archive, backups, database.pg_bin_dir)
            )
        except OSError as exc:
            raise RestoreRefused(unreachable(settings, exc)) from None
    else:
        version = sqlite_backup_version(path)
        _confirm(settings, path, version, yes)
        done = restore_sqlite(settings.db_path, path, backups)
    return _restored_line(settings, path, done)


def unreachable(settings: Settings, error: OSError) -> str:
    """A database that could not be reached, in words (not the driver's)."""
    from agentsvc.outbound import why_not_connected

    return f"cannot reach {settings.database_label}: {why_not_connected(error)}"


def _confirm(settings: Settings, path: Path, version: int, yes: bool) -> None:
    what = (
        f"restore replaces the database {settings.database_label} with {path} (schema"
        f" version {version}); the database replaced is kept in"
        f" {settings.server.data_dir / 'backups'} first"
    )
    if yes:
        return
    if not sys.stdin.isatty():
        raise UsageError(f"{what}: add --yes to confirm (nothing was changed)")
    print(what, file=sys.stderr)
    answer = input("Type yes to replace it: ")
    if answer.strip().lower() != "yes":
        raise UsageError("not confirmed: nothing was changed")


def _restored_line(settings: Settings, path: Path, done: Restored) -> str:
    line = f"restored {path} (schema version {done.version}) into {settings.database_label}"
    if done.kept is not None:
        line += f"; the database replaced is kept as {done.kept}"
    if done.version < schema_version():
        line += (
            f"; the next start (or `agentsvc migrate`) upgrades it to schema version"
            f" {schema_version()}, after a backup"
        )
    return line
