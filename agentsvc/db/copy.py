"""Copy a SQLite instance into an empty PostgreSQL database (`agentsvc copy-data`), its
files with it.

Files go first (`storage/copying.py`, each streamed a chunk at a time): from the instance's
store (data_dir, or its S3 bucket) into the target's (the PostgreSQL database itself, or the
S3 store `--storage-to` names); a file already there is replaced, so a copy that failed can
be made again. Then the rows.

Rows go table by table in foreign-key order with COPY (asyncpg's binary
`copy_records_to_table`), in one transaction: a failure leaves the target as it was. The
counters (`*_totals`, `agent_daily`) and the rated answers by agent (`message_ratings`) are
not copied: PostgreSQL's triggers count the copied rows as they arrive, so they come out
right by construction. `trigger_daily` is copied: its widget events are kept nowhere else.
The messages' search index is each database's own (FTS5 here, a GIN index there). Tables
that stand in for SQLite's rowid get it copied, so lists keep their order; identity columns
then continue after the largest copied value. Every table's row count is compared at the
end.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import asyncpg

from agentsvc.db.postgres import PostgresDatabase
from agentsvc.db.sqlite import SqliteDatabase
from agentsvc.errors import StorageUnavailable
from agentsvc.storage import FileStore
from agentsvc.storage.copying import Copied, copy_files
from agentsvc.storage.database import DatabaseStore

# Parents before children.
TABLES = [
    "users",
    "teams",
    "memberships",
    "avatars",
    "api_keys",
    "agents",
    "agent_versions",
    "experiments",
    "evalsets",
    "eval_cases",
    "eval_runs",
    "eval_results",
    "channels",  # before conversations, which name their channel
    "tools",
    "sessions",
    "magic_links",
    "oauth_states",
    "invitations",
    "mail_outbox",
    "team_secrets",
    "canned_responses",
    "conversations",
    "messages",
    "message_attachments",  # their files stay in the data directory
    "conversation_events",
    "conversation_notes",
    "conversation_reads",
    "paused_turns",
    "tool_approvals",  # after paused_turns, which it names
    "unanswered_questions",
    "triggers",
    "trigger_daily",
    "guardrail_daily",  # its hits are kept nowhere else
    "form_submissions",
    "form_deliveries",
    "form_delivery_attempts",
    "form_events",
    "documents",
    "passages",
    "passage_embeddings",
    "sources",
    "source_pages",  # after documents, which its pages name
    "curated_answers",
    "webhooks",
    "webhook_events",
    "webhook_deliveries",
    "webhook_delivery_attempts",
    "channel_inbound",
    "channel_deliveries",
    "channel_delivery_attempts",
    "audit_log",
    "team_sso",
    "team_domains",
    "sso_states",
    "sso_seen",
    "team_scim",
    "scim_users",
    "scim_groups",
    "scim_group_members",
    "usage_daily",
    "usage_monthly",
    "team_budgets",
    "agent_budgets",
    "budget_alerts",
]
# The files' tables are filled by key from the source's storage, not copied as rows.
FILE_TABLES = ("stored_files", "stored_file_chunks")
# Every other table of the schema, and why it is not copied (tests/test_copy_data.py checks
# that each table is in one list or the other).
NOT_COPIED = {
    "passages_fts": "SQLite's search index; PostgreSQL's is a GIN index on the rows",
    "messages_fts": "SQLite's search index; PostgreSQL's is a GIN index on the rows",
    "conversation_totals": "counted by PostgreSQL's triggers as the rows arrive",
    "submission_totals": "counted by PostgreSQL's triggers as the rows arrive",
    "form_field_totals": "counted by PostgreSQL's triggers as the rows arrive",
    "form_event_totals": "counted by PostgreSQL's triggers as the rows arrive",
    "agent_daily": "counted by PostgreSQL's triggers as the rows arrive",
    "message_ratings": "counted by PostgreSQL's triggers as the rows arrive",
    "stored_files": "the files themselves are copied from the source's storage, by key",
    "stored_file_chunks": "the files themselves are copied from the source's storage, by key",
}
BATCH_ROWS = 5_000


class CopyFailed(Exception):
    """The copy could not be made (the message says why, for the operator)."""


@dataclass(frozen=True, slots=True)
class FileCopy:
    """Where the files come from, and where they go (None: into the target database)."""

    source: FileStore
    target: FileStore | None = None
    progress: Callable[[Copied], None] | None = None


async def copy_data(
    sqlite_path: Path,
    url: str,
    progress: Callable[[str, int], None] | None = None,
    files: FileCopy | None = None,
) -> dict[str, int]:
    """Copy every row of the SQLite database at `sqlite_path` into the empty PostgreSQL
    database at `url`, and the files of `files`; return the rows copied per table (the
    files under "files" and "file_bytes")."""
    source = SqliteDatabase(sqlite_path, readers=1)
    await source.open()  # migrates an older SQLite file to the current schema first
    await source.close()
    target = PostgresDatabase(url, pool_size=2)
    try:
        await target.open()  # creates the schema when the database is new
    except (OSError, asyncpg.PostgresError) as exc:
        raise CopyFailed(f"cannot open {redacted(url)}: {exc}") from None
    try:
        async with target.acquire() as conn:
            for table in TABLES:
                if await conn.fetchval(f"SELECT EXISTS (SELECT 1 FROM {table})"):
                    raise CopyFailed(
                        f"the target database is not empty (table {table} has rows);"
                        " copy-data only fills an empty database"
                    )
        moved = await _copy_files(files, target) if files is not None else None
        async with target.acquire() as conn:
            raw = sqlite3.connect(f"file:{sqlite_path}?mode=ro", uri=True)
            try:
                copied = await _copy_tables(raw, conn, progress)
            finally:
                raw.close()
    finally:
        await target.close()
    if moved is not None:
        copied.update({"files": moved.files, "file_bytes": moved.bytes})
    return copied


async def _copy_files(files: FileCopy, target: PostgresDatabase) -> Copied:
    """Every file of the source's store into the target's; CopyFailed when a store cannot
    be used (the rows are not copied then)."""
    into = files.target or DatabaseStore(target)
    try:
        return await copy_files(files.source, into, files.progress)
    except StorageUnavailable:
        raise CopyFailed(
            f"the files could not be copied from {files.source.label} into {into.label}"
            " (the reason is in the log above); no row was copied"
        ) from None


async def _copy_tables(
    raw: sqlite3.Connection,
    conn: asyncpg.Connection,
    progress: Callable[[str, int], None] | None,
) -> dict[str, int]:
    copied: dict[str, int] = {}
    async with conn.transaction():
        for table in TABLES:
            target_columns = await _columns(conn, table)
            source_columns = [r[1] for r in raw.execute(f"PRAGMA table_info({table})")]
            columns = [c for c in source_columns if c in target_columns]
            selected = ", ".join(columns)
            if "rowid" in target_columns and "rowid" not in source_columns:
                columns.append("rowid")
                selected += ", rowid"
            cursor = raw.execute(f"SELECT {selected} FROM {table} ORDER BY rowid")
            total = 0
            while rows := cursor.fetchmany(BATCH_ROWS):
                await conn.copy_records_to_table(table, records=rows, columns=columns)
                total += len(rows)
            expected = raw.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0]
            found = await conn.fetchval(f"SELECT COUNT(*) FROM {table}")
            if not expected == found == total:
                raise CopyFailed(
                    f"{table}: {expected} rows in SQLite but {found} in PostgreSQL; nothing"
                    " was copied"
                )
            await _continue_identities(conn, table)
            copied[table] = total
            if progress is not None:
                progress(table, total)
    return copied


async def _columns(conn: asyncpg.Connection, table: str) -> set[str]:
    rows = await conn.fetch(
        "SELECT column_name FROM information_schema.columns"
        " WHERE table_name = $1 AND table_schema = current_schema() AND is_generated = 'NEVER'",
        table,
    )
    return {r[0] for r in rows}


async def _continue_identities(conn: asyncpg.Connection, table: str) -> None:
    """Identity columns continue after the largest copied value."""
    rows = await conn.fetch(
        "SELECT column_name FROM information_schema.columns WHERE table_name = $1"
        " AND table_schema = current_schema() AND is_identity = 'YES'",
        table,
    )
    for (column,) in rows:
        await conn.execute(
            f"SELECT setval(pg_get_serial_sequence('{table}', '{column}'),"
            f" COALESCE((SELECT MAX({column}) FROM {table}), 0) + 1, false)"
        )


def redacted(url: str) -> str:
    """The URL without its password (for logs and messages)."""
    from urllib.parse import urlsplit, urlunsplit

    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.replace(f":{parts.password}@", ":***@", 1)
    return urlunsplit(parts._replace(netloc=netloc))
