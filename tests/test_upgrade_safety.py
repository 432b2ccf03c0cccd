"""Issue 37 item 3 on SQLite: a backup before every upgrade (rotated), no upgrade without
one, refusals that name both versions and a backup (a newer database, a half-migrated
one, a migration that fails, a server running beside), `migrate --plan`, two processes
starting at once, and `agentsvc restore`. The PostgreSQL side is test_upgrade_postgres.py;
the upgrade of every earlier version with a shop's data is test_upgrade_ladder.py."""

from __future__ import annotations

import hashlib
import sqlite3
import subprocess
import sys

import pytest

from agentsvc.config import ConfigError, load_settings
from agentsvc.db.backups import Backups, copy_sqlite, version_in_name
from agentsvc.db.migrations import VERSIONS, schema_version
from tests.support import pg
from tests.support.cli import Server, run
from tests.support.upgrades import (
    config,
    first_statement,
    holding_sqlite_upgrade_lock,
    old_sqlite,
    read_until,
    sqlite_contents,
    started,
    user_version,
)

pytestmark = pg.sqlite_only
NEWEST = schema_version()


def _digest(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _backups(data_dir) -> list[str]:
    folder = data_dir / "backups"
    return sorted(p.name for p in folder.iterdir()) if folder.is_dir() else []


def _refusal(result) -> str:
    """The one line a refused command printed."""
    assert result.returncode == 1, (result.stdout, result.stderr)
    lines = [line for line in result.stderr.splitlines() if line.startswith("agentsvc: ")]
    assert len(lines) == 1, result.stderr
    return lines[0]


def test_migrate_plan_prints_what_would_run_and_changes_nothing(tmp_path):
    db = old_sqlite(tmp_path / "data", NEWEST - 3)
    before = _digest(db)
    planned = run(["migrate", "--plan"], tmp_path)
    assert planned.returncode == 0, planned.stderr
    lines = planned.stdout.splitlines()
    assert lines[0] == f"{db}: schema version {NEWEST - 3}; this agentsvc needs {NEWEST}"
    assert lines[1] == "would run, each migration in a transaction of its own:"
    assert lines[2:5] == [
        f"  {m.version} ({m.name.partition('_')[2].replace('_', ' ')})" for m in VERSIONS[-3:]
    ]
    assert lines[5].startswith(f"after a backup into {tmp_path / 'data' / 'backups'}")
    assert lines[-1] == "nothing was changed"
    assert _digest(db) == before and _backups(tmp_path / "data") == []

    done = run(["migrate"], tmp_path)
    assert done.returncode == 0, done.stderr
    backup = tmp_path / "data" / "backups" / _backups(tmp_path / "data")[0]
    assert done.stdout.strip() == (
        f"{db}: upgraded from schema version {NEWEST - 3} to {NEWEST} (3 migrations);"
        f" backup: {backup}"
    )
    again = run(["migrate", "--plan"], tmp_path)
    assert again.stdout.strip() == f"{db}: schema version {NEWEST}, the newest; nothing to run"
    assert run(["migrate"], tmp_path).stdout.strip() == (
        f"{db}: schema version {NEWEST} (nothing to migrate)"
    )


def test_migrate_plan_on_no_database_creates_none(tmp_path):
    planned = run(["migrate", "--plan", "--data-dir", str(tmp_path / "none")], tmp_path)
    assert planned.returncode == 0, planned.stderr
    assert "no database yet; one would be created at schema version" in planned.stdout
    assert not (tmp_path / "none").exists()


def test_the_backup_before_an_upgrade_holds_the_old_database_and_is_private(tmp_path):
    db = old_sqlite(tmp_path / "data", 12)
    run(["migrate"], tmp_path)
    (name,) = _backups(tmp_path / "data")
    backup = tmp_path / "data" / "backups" / name
    assert version_in_name(backup) == 12
    assert backup.stat().st_mode & 0o777 == 0o600
    assert (tmp_path / "data" / "backups").stat().st_mode & 0o777 == 0o700
    copy = sqlite3.connect(backup)
    assert copy.execute("PRAGMA user_version").fetchone()[0] == 12
    assert copy.execute("SELECT content FROM messages").fetchall() == [("Where is my parcel?",)]
    assert copy.execute("PRAGMA journal_mode").fetchone()[0] == "delete"  # one file
    copy.close()
    assert user_version(db) == NEWEST


def test_backups_are_rotated_and_other_files_left_alone(tmp_path):
    settings = config(tmp_path, backups_kept=2)
    (tmp_path / "data" / "backups").mkdir(parents=True)
    (tmp_path / "data" / "backups" / "mine.db").write_text("the operator's own")
    for version in (10, 11, 12):
        (tmp_path / "data" / "agentsvc.db").unlink(missing_ok=True)
        old_sqlite(tmp_path / "data", version)
        assert run(["migrate", "--config", str(settings)], tmp_path).returncode == 0
    kept = _backups(tmp_path / "data")
    assert kept[-1] == "mine.db"
    assert [version_in_name(tmp_path / n) for n in kept[:-1]] == [11, 12]


def test_no_backup_means_no_upgrade_unless_turned_off(tmp_path):
    db = old_sqlite(tmp_path / "data", 15)
    (tmp_path / "data" / "backups").write_text("a file where the directory would be")
    before = sqlite_contents(db)
    message = _refusal(run(["migrate"], tmp_path))
    assert f"the database {db} (schema version 15) was not upgraded to {NEWEST}" in message
    assert "the backup into" in message and "could not be made (not a directory" in message
    assert "Nothing was changed" in message and "backup_before_migrate = false" in message
    assert sqlite_contents(db) == before

    done = run(["migrate"], tmp_path, AGENTSVC_DATABASE_BACKUP_BEFORE_MIGRATE="false")
    assert done.returncode == 0, done.stderr
    assert "no backup taken" in done.stdout
    assert "without a backup ([database] backup_before_migrate = false)" in done.stderr
    assert user_version(db) == NEWEST


def test_a_database_newer_than_this_agentsvc_refuses_naming_both_versions_and_a_backup(
    tmp_path,
):
    db = old_sqlite(tmp_path / "data", 16)
    run(["migrate"], tmp_path)  # the backup of version 16
    (name,) = _backups(tmp_path / "data")
    conn = sqlite3.connect(db)
    conn.execute(f"PRAGMA user_version = {NEWEST + 2}")  # as a newer agentsvc leaves it
    conn.close()
    for command in (["serve", "--port", "0"], ["migrate"], ["migrate", "--plan"]):
        message = _refusal(run(command, tmp_path))
        assert f"has schema version {NEWEST + 2}, newer than this agentsvc's {NEWEST}" in message
        assert f"`agentsvc restore {tmp_path / 'data' / 'backups' / name}`" in message
    assert user_version(db) == NEWEST + 2


def test_a_half_migrated_database_refuses_naming_both_versions_and_the_backup(tmp_path):
    db = old_sqlite(tmp_path / "data", 19)
    backups = Backups(tmp_path / "data" / "backups", 5, "db")
    backup = backups.reserve(19)
    copy_sqlite(db, backup)  # what the upgrade that was cut took first
    conn = sqlite3.connect(db)
    conn.executescript(first_statement(20))  # a migration applied in part, by hand
    conn.close()
    before = sqlite_contents(db)
    for command in (["serve", "--port", "0"], ["migrate"], ["migrate", "--plan"]):
        message = _refusal(run(command, tmp_path))
        assert "is half-migrated: its schema version is 19" in message
        assert "table sources (version 20)" in message
        assert f"This agentsvc needs version {NEWEST}" in message
        assert f"`agentsvc restore {backup}`" in message
    assert sqlite_contents(db) == before and len(_backups(tmp_path / "data")) == 1


def test_a_migration_that_fails_leaves_the_last_whole_version_and_names_the_backup(tmp_path):
    db = old_sqlite(tmp_path / "data", 4)
    conn = sqlite3.connect(db)
    conn.executescript(
        "INSERT INTO mail_outbox (id, to_address, subject, body, reason, created_at)"
        " VALUES ('mail_1', 'a@b.co', 'Hi', 'Hello', 'no SMTP configured', 't');"
        # Something the migration of version 5 cannot get past (an operator's own trigger).
        "CREATE TRIGGER keep_mail BEFORE UPDATE ON mail_outbox"
        " BEGIN SELECT RAISE(ABORT, 'mail is kept'); END;"
    )
    conn.close()
    message = _refusal(run(["migrate"], tmp_path))
    (name,) = _backups(tmp_path / "data")
    assert f"from schema version 4 to {NEWEST} stopped: migration 5 (sealed mail) failed" in message
    assert "(the database said: mail is kept)" in message
    assert "The database is at schema version 4, whole" in message
    assert f"This agentsvc needs version {NEWEST}" in message
    assert f"`agentsvc restore {tmp_path / 'data' / 'backups' / name}`" in message
    conn = sqlite3.connect(db)
    assert conn.execute("SELECT body FROM mail_outbox").fetchall() == [("Hello",)]
    conn.execute("DROP TRIGGER keep_mail")
    conn.commit()
    conn.close()
    assert user_version(db) == 4
    assert run(["migrate"], tmp_path).returncode == 0
    assert user_version(db) == NEWEST


def test_two_processes_upgrading_one_sqlite_file_at_once_migrate_it_once(tmp_path):
    db = old_sqlite(tmp_path / "data", 9)
    logs: list[list[str]] = [[], []]
    with holding_sqlite_upgrade_lock(db):  # both start while it is held, then race for it
        procs = [started(["migrate"], tmp_path) for _ in logs]
        for proc, log in zip(procs, logs, strict=True):
            read_until(proc, "waiting for another process that is upgrading", log)
    outputs = []
    for proc, log in zip(procs, logs, strict=True):
        out, err = proc.communicate(timeout=60)
        assert proc.returncode == 0, "".join(log) + err
        outputs.append(out.strip())
    assert sorted(o.rsplit(";", 1)[0] for o in outputs) == [
        f"{db}: schema version {NEWEST} (nothing to migrate)",
        f"{db}: upgraded from schema version 9 to {NEWEST} ({NEWEST - 9} migrations)",
    ]
    assert len(_backups(tmp_path / "data")) == 1
    assert user_version(db) == NEWEST


def test_no_upgrade_beneath_a_running_server(tmp_path):
    """An older server holds the data directory's serve lock (a process taking it with the
    function `serve` takes it with stands in for it: the older release cannot run here)."""
    db = old_sqlite(tmp_path / "data", NEWEST - 1)
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys; from pathlib import Path;"
            " from agentsvc.running import lock_data_dir;"
            f" lock_data_dir(Path({str(tmp_path / 'data')!r})); print('held', flush=True);"
            " sys.stdin.read()",
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "held"
        message = _refusal(run(["migrate"], tmp_path))
        assert f"at schema version {NEWEST - 1} and this agentsvc needs {NEWEST}" in message
        assert f"another agentsvc (pid {holder.pid}) serves this data directory" in message
        assert user_version(db) == NEWEST - 1 and _backups(tmp_path / "data") == []
    finally:
        holder.communicate("")
    assert run(["migrate"], tmp_path).returncode == 0  # once it is stopped


def test_backup_settings_are_checked(tmp_path):
    for value in ("0", "many", "1001"):
        with pytest.raises(ConfigError, match="database.backups_kept: must be a whole number"):
            load_settings(None, environ={"AGENTSVC_DATABASE_BACKUPS_KEPT": value}, overrides={})
    with pytest.raises(ConfigError, match="database.backup_before_migrate"):
        load_settings(
            None, environ={"AGENTSVC_DATABASE_BACKUP_BEFORE_MIGRATE": "perhaps"}, overrides={}
        )


def test_restore_refuses_what_it_cannot_do_safely(tmp_path):
    db = old_sqlite(tmp_path / "data", 14)
    run(["migrate"], tmp_path)
    (name,) = _backups(tmp_path / "data")
    backup = tmp_path / "data" / "backups" / name
    before = sqlite_contents(db)

    asked = run(["restore", str(backup)], tmp_path)  # not a terminal, and no --yes
    assert asked.returncode == 2
    assert asked.stderr.strip() == (
        f"agentsvc: restore replaces the database {db} with {backup} (schema version 14); the"
        f" database replaced is kept in {tmp_path / 'data' / 'backups'} first: add --yes to"
        " confirm (nothing was changed)"
    )
    server = Server(tmp_path)
    try:
        message = _refusal(run(["restore", str(backup), "--yes"], tmp_path))
        assert message == (
            f"agentsvc: an agentsvc server (pid {server.proc.pid}) serves {tmp_path / 'data'}:"
            " stop it before restoring; nothing was changed"
        )
    finally:
        server.stop()

    garbage = tmp_path / "notes.db"
    garbage.write_bytes(b"not a database at all" * 100)
    empty = tmp_path / "empty.db"
    sqlite3.connect(empty).execute("CREATE TABLE t (x)").connection.close()
    newer = tmp_path / "newer.db"
    copy_sqlite(backup, newer)
    conn = sqlite3.connect(newer)
    conn.execute(f"PRAGMA user_version = {NEWEST + 1}")
    conn.close()
    for path, said in (
        (garbage, f"{garbage} is not a SQLite database"),
        (empty, f"{empty} holds no agentsvc database (no schema version)"),
        (newer, f"{newer} holds schema version {NEWEST + 1}, newer than this agentsvc's {NEWEST}"),
        (tmp_path / "gone.db", f"{tmp_path / 'gone.db'}: no such file"),
        (tmp_path / "data", f"{tmp_path / 'data'} is a directory: name the backup file in it"),
    ):
        assert _refusal(run(["restore", str(path), "--yes"], tmp_path)).startswith(
            f"agentsvc: {said}"
        )
    assert sqlite_contents(db) == before
    assert _backups(tmp_path / "data") == [name]  # nothing kept: nothing was replaced


def test_commands_say_when_the_database_cannot_be_reached(tmp_path):
    settings = config(tmp_path, url="postgresql://agentsvc@127.0.0.1:1/agentsvc")
    for command in (["migrate"], ["migrate", "--plan"], ["apikey", "create", "--email", "a@b.co"]):
        message = _refusal(run([*command, "--config", str(settings)], tmp_path))
        assert message == (
            "agentsvc: cannot reach PostgreSQL 127.0.0.1:1/agentsvc: the connection was refused"
            " (nothing answers on that port)"
        )
