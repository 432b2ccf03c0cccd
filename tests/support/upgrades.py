"""Databases of earlier schema versions, configurations and processes for the tests of
upgrades, backups and restores (tests/test_upgrade_*.py)."""

from __future__ import annotations

import contextlib
import fcntl
import os
import select
import sqlite3
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

from agentsvc.db.migrations import UNDO_POSTGRES, VERSIONS, schema_at
from tests.support.warm import WarmProcess


def old_sqlite(data_dir: Path, version: int) -> Path:
    """A data directory holding a SQLite database of `version`, with a team, an agent, a
    conversation and a message in it; the database's path."""
    data_dir.mkdir(parents=True, mode=0o700, exist_ok=True)
    path = data_dir / "agentsvc.db"
    conn = sqlite3.connect(path)
    conn.executescript(schema_at(version))
    conn.executescript(
        "INSERT INTO users (id, email, created_at, updated_at)"
        " VALUES ('usr_1', 'a@b.co', 't', 't');"
        "INSERT INTO teams VALUES ('team_1', 'T', 'usr_1', 'pro', 't', 't');"
        "INSERT INTO agents (id, team_id, name, slug, model, temperature, created_at, updated_at)"
        " VALUES ('agt_1', 'team_1', 'Shop', 'shop', 'builtin', 70, 't', 't');"
        "INSERT INTO conversations (id, agent_id, team_id, title, created_at, updated_at)"
        " VALUES ('conv_1', 'agt_1', 'team_1', 'Hi', 't', 't');"
        "INSERT INTO messages (id, conversation_id, role, content, created_at)"
        " VALUES ('msg_1', 'conv_1', 'user', 'Where is my parcel?', 't');"
    )
    conn.close()
    return path


def user_version(path: Path) -> int:
    conn = sqlite3.connect(path)
    try:
        return conn.execute("PRAGMA user_version").fetchone()[0]
    finally:
        conn.close()


def first_statement(version: int, postgres: bool = False) -> str:
    """The first statement of a migration's script: applied alone, it half-migrates."""
    migration = VERSIONS[version - 1]
    script = migration.postgres if postgres else migration.sqlite
    assert script
    return script.strip().split(";\n")[0] + ";"


def config(folder: Path, **database: object) -> Path:
    """A configuration file with these [database] keys (strings quoted, booleans and
    numbers as TOML writes them), and the shared secret key a database URL needs."""
    lines = ["[database]"]
    for key, value in database.items():
        shown = str(value).lower() if isinstance(value, bool) else value
        lines.append(f'{key} = "{value}"' if isinstance(value, str) else f"{key} = {shown}")
    lines += ["[server]", 'secret_key = "upgrade-tests"']
    path = folder / "agentsvc.toml"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@contextlib.contextmanager
def holding_sqlite_upgrade_lock(db_path: Path) -> Iterator[None]:
    """Hold the file lock an upgrading process holds (as if one were upgrading)."""
    fd = os.open(db_path.with_name(db_path.name + "-upgrade.lock"), os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def started(args: list[str], cwd: Path) -> WarmProcess:
    """`agentsvc ARGS` in a process of its own, its output readable as it comes."""
    return WarmProcess(
        args,
        cwd=cwd,
        env=dict(os.environ),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def read_until(proc: WarmProcess, text: str, seen: list[str], seconds: float = 60) -> None:
    """Read the process's stderr into `seen` (chunks, straight from the pipe: the file
    object's buffer would hide lines from select) until it holds `text`."""
    deadline = time.monotonic() + seconds
    fd = proc.stderr.fileno()
    while text not in "".join(seen):
        left = deadline - time.monotonic()
        assert left > 0, f"no {text!r} within {seconds} s: {''.join(seen)}"
        if select.select([fd], [], [], left)[0]:
            chunk = os.read(fd, 65536).decode("utf-8", "replace")
            assert chunk, f"ended before {text!r}: {''.join(seen)}"
            seen.append(chunk)


async def postgres_at(url: str, version: int) -> None:
    """Take a PostgreSQL database of the newest version back to `version` (UNDO_POSTGRES)."""
    import asyncpg

    conn = await asyncpg.connect(url)
    try:
        for later in sorted((n for n in UNDO_POSTGRES if n > version), reverse=True):
            await conn.execute(UNDO_POSTGRES[later])
        await conn.execute("UPDATE schema_info SET version = $1", version)
    finally:
        await conn.close()


async def postgres_contents(url: str) -> dict[str, object]:
    """Everything agentsvc's schema holds, comparable: each table's rows (as text, sorted),
    the columns, indexes, triggers and functions, the sequences' positions, the version."""
    import asyncpg

    conn = await asyncpg.connect(url)
    try:
        tables = await conn.fetch(
            "SELECT tablename FROM pg_tables WHERE schemaname = current_schema() ORDER BY 1"
        )
        rows = {
            t: sorted(r[0] for r in await conn.fetch(f'SELECT x::text FROM "{t}" AS x'))  # noqa: S608
            for (t,) in tables
        }
        catalog = {
            name: sorted(tuple(r) for r in await conn.fetch(query))
            for name, query in _CATALOG.items()
        }
    finally:
        await conn.close()
    return {"rows": rows, **catalog}


_CATALOG = {
    "columns": "SELECT table_name, column_name, data_type, is_nullable, column_default"
    " FROM information_schema.columns WHERE table_schema = current_schema()",
    "indexes": "SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = current_schema()",
    "triggers": "SELECT t.tgname, c.relname FROM pg_trigger AS t JOIN pg_class AS c"
    " ON c.oid = t.tgrelid WHERE c.relnamespace = current_schema()::regnamespace"
    " AND NOT t.tgisinternal",
    "functions": "SELECT proname FROM pg_proc WHERE pronamespace = current_schema()::regnamespace",
    "sequences": "SELECT sequencename, last_value FROM pg_sequences"
    " WHERE schemaname = current_schema()",
}


def sqlite_contents(path: Path) -> tuple[int, list[str]]:
    """The schema version and every statement that makes the database again (opening it
    for writing may switch the file to WAL mode: bytes change, the database does not)."""
    conn = sqlite3.connect(path)
    try:
        return conn.execute("PRAGMA user_version").fetchone()[0], list(conn.iterdump())
    finally:
        conn.close()
