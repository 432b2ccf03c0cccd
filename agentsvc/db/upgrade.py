"""Upgrading a database's schema without losing it: what would run, the checks before,
the backup, and the refusals.

Both backends migrate the same way (sqlite.py, postgres.py): a database of the newest
version opens at once; otherwise, under the upgrade lock (SQLite: a file lock beside the
database; PostgreSQL: an advisory lock, held across processes and hosts), the version is
read again (another process may have just upgraded it), `survey` decides, the database
is copied into the backups directory (`Upgrader.back_up`), and each migration runs in a
transaction of its own that also sets the version. A process that waited for the lock
then finds the newest version and migrates nothing.

A database is refused, with a message naming its version, this agentsvc's and a backup,
when it is newer than the code, half-migrated (it has objects a later version makes: a
migration applied in part by hand or by a tool that did not use one transaction), holds
tables but no version, when the backup cannot be made, when a migration fails (the
database then stays at the last version that was whole), and on SQLite when another
process serves the data directory (an older server must not run on a newer schema).

Half-migration is found by name: the tables, indexes, triggers, functions and columns the
later migrations' scripts create and no later script drops or renames (so none of them
can exist in a database that is whole at its version; tests/test_upgrade_refusals.py
checks every version of both backends).
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from agentsvc.db.backups import BackupFailed, Backups
from agentsvc.db.migrations import FIRST_POSTGRES_VERSION, VERSIONS, schema_version
from agentsvc.db.pg_tools import ToolFailed

if TYPE_CHECKING:
    from agentsvc.config import Settings
    from agentsvc.db import Tx

log = logging.getLogger(__name__)


class UpgradeRefused(RuntimeError):
    """The database is not opened: the message says why and what to do, in words."""


@dataclass(frozen=True)
class Step:
    """One migration that would run."""

    version: int
    name: str  # the module's, such as v0020_sources

    @property
    def label(self) -> str:
        """For people: `20 (sources)`."""
        return f"{self.version} ({self.name.partition('_')[2].replace('_', ' ')})"


@dataclass(frozen=True)
class Survey:
    """What opening the database would do, found without changing it."""

    found: int | None  # its schema version; None: a new, empty database
    steps: tuple[Step, ...]
    refusal: str | None = None  # why it would be refused


@dataclass
class Upgrade:
    """What an upgrade did, for `agentsvc migrate` to report."""

    found: int  # 0: a new database, created at `reached`
    reached: int
    backup: Path | None


# ── objects a later version makes ───────────────────────────────────────────────────────
_NOT_IDEMPOTENT = r"(?!IF\s+NOT\s+EXISTS\b)(?!OR\s+REPLACE\b)"
# (kind, pattern): the name, and the table an index or trigger is on.
_CREATED = [
    ("table", re.compile(rf"\bCREATE\s+(?:VIRTUAL\s+)?TABLE\s+{_NOT_IDEMPOTENT}(\w+)()", re.I)),
    (
        "index",
        re.compile(rf"\bCREATE\s+(?:UNIQUE\s+)?INDEX\s+{_NOT_IDEMPOTENT}(\w+)\s+ON\s+(\w+)", re.I),
    ),
    (
        "trigger",
        re.compile(rf"\bCREATE\s+TRIGGER\s+{_NOT_IDEMPOTENT}(\w+)\b.*?\bON\s+(\w+)", re.I | re.S),
    ),
    ("function", re.compile(rf"\bCREATE\s+FUNCTION\s+{_NOT_IDEMPOTENT}(\w+)()", re.I)),
]
_ADDED_COLUMN = re.compile(
    r"\bALTER\s+TABLE\s+(\w+)\s+ADD\s+(?:COLUMN\s+)?(?!CONSTRAINT\b)(?!IF\b)(\w+)", re.I
)
_RENAMED_COLUMN = re.compile(
    r"\bALTER\s+TABLE\s+(\w+)\s+RENAME\s+COLUMN\s+(\w+)\s+TO\s+(\w+)", re.I
)
_RENAMED_TABLE = re.compile(r"\bALTER\s+TABLE\s+(\w+)\s+RENAME\s+TO\s+(\w+)", re.I)
_DROPPED = re.compile(r"\bDROP\s+(TABLE|INDEX|TRIGGER|FUNCTION)\s+(?:IF\s+EXISTS\s+)?(\w+)", re.I)
_DROPPED_COLUMN = re.compile(r"\bALTER\s+TABLE\s+(\w+)\s+DROP\s+(?:COLUMN\s+)?(\w+)", re.I)


@dataclass(frozen=True)
class Probe:
    """An object version `version` makes: (kind, name), a column's name being table.column."""

    version: int
    kind: str
    name: str
    table: str = ""  # the table an index or trigger is on


def _script(version: int, postgres: bool) -> str:
    migration = VERSIONS[version - 1]
    text = (migration.postgres or "") if postgres else migration.sqlite
    return re.sub(r"--[^\n]*", " ", text)


def later_objects(found: int, postgres: bool) -> list[Probe]:
    """Objects the migrations after `found` make that no migration after it drops or
    renames away: none can exist in a database that is whole at version `found`."""
    made: list[Probe] = []
    gone: set[tuple[str, str]] = set()
    for version in range(found + 1, schema_version() + 1):
        script = _script(version, postgres)
        for kind, pattern in _CREATED:
            for name, table in pattern.findall(script):
                made.append(Probe(version, kind, name.lower(), table.lower()))
        for table, column in _ADDED_COLUMN.findall(script):
            made.append(Probe(version, "column", f"{table}.{column}".lower(), table.lower()))
        for table, old, new in _RENAMED_COLUMN.findall(script):
            made.append(Probe(version, "column", f"{table}.{new}".lower(), table.lower()))
            gone.add(("column", f"{table}.{old}".lower()))
        for old, new in _RENAMED_TABLE.findall(script):
            made.append(Probe(version, "table", new.lower()))
            gone.add(("table", old.lower()))
        gone.update((kind.lower(), name.lower()) for kind, name in _DROPPED.findall(script))
        gone.update(("column", f"{t}.{c}".lower()) for t, c in _DROPPED_COLUMN.findall(script))
    # A table dropped or renamed away takes its columns, indexes and triggers with it, so
    # an older database may have objects of those names on the table it replaced.
    tables_gone = {name for kind, name in gone if kind == "table"}
    return [
        p
        for p in made
        if (p.kind, p.name) not in gone and (p.table or p.name.partition(".")[0]) not in tables_gone
    ]


_EXISTING = {
    "sqlite": """
        SELECT type, lower(name) FROM sqlite_master WHERE type IN ('table', 'index', 'trigger')
        UNION ALL
        SELECT 'column', lower(m.name || '.' || c.name)
        FROM sqlite_master AS m, pragma_table_info(m.name) AS c WHERE m.type = 'table'
    """,
    "postgresql": """
        SELECT CASE c.relkind WHEN 'i' THEN 'index' ELSE 'table' END, lower(c.relname)
        FROM pg_class AS c WHERE c.relnamespace = current_schema()::regnamespace
            AND c.relkind IN ('r', 'p', 'i', 'I')
        UNION ALL
        SELECT 'trigger', lower(t.tgname) FROM pg_trigger AS t JOIN pg_class AS c
            ON c.oid = t.tgrelid
        WHERE c.relnamespace = current_schema()::regnamespace AND NOT t.tgisinternal
        UNION ALL
        SELECT 'function', lower(p.proname) FROM pg_proc AS p
        WHERE p.pronamespace = current_schema()::regnamespace
        UNION ALL
        SELECT 'column', lower(table_name || '.' || column_name)
        FROM information_schema.columns WHERE table_schema = current_schema()
    """,
}


async def present_later_objects(tx: Tx, found: int) -> list[Probe]:
    """The objects of later versions the database already has."""
    rows = await tx.fetchall(_EXISTING[tx.dialect])
    existing = {(row[0], row[1]) for row in rows}
    probes = later_objects(found, postgres=tx.dialect == "postgresql")
    return [p for p in probes if (p.kind, p.name) in existing]


async def read_version(tx: Tx) -> tuple[int | None, bool]:
    """(schema version, whether it holds tables); version None: no version recorded."""
    if tx.dialect == "sqlite":
        version = await tx.fetchval("PRAGMA user_version")
        tables = await tx.fetchval("SELECT count(*) FROM sqlite_master WHERE type = 'table'")
        return (version or None), bool(tables)
    tables = await tx.fetchval(
        "SELECT count(*) FROM pg_class WHERE relnamespace = current_schema()::regnamespace"
        " AND relkind IN ('r', 'p')"
    )
    if not await tx.fetchval("SELECT to_regclass('schema_info') IS NOT NULL"):
        return None, bool(tables)
    versions = await tx.fetchall("SELECT DISTINCT version FROM schema_info")
    return (int(versions[0][0]) if len(versions) == 1 else None), True


def steps_after(found: int, postgres: bool) -> tuple[Step, ...]:
    """The migrations a database of version `found` needs, in order."""
    first = max(found, FIRST_POSTGRES_VERSION if postgres else 1) + 1
    return tuple(Step(m.version, m.name) for m in VERSIONS[first - 1 :])


# ── the upgrade of one database ─────────────────────────────────────────────────────────
@dataclass
class Upgrader:
    """What upgrading this database involves besides its SQL: where its name is said, its
    backups (None: `backup_before_migrate = false`, or a bare database in a test), the
    PostgreSQL tools' directory, and who else serves a SQLite data directory."""

    label: str
    backups: Backups | None = None
    pg_bin_dir: str = ""
    other_server: Callable[[], int | None] = lambda: None
    done: Upgrade | None = field(default=None, repr=False)

    async def survey(self, tx: Tx) -> Survey:
        """What opening the database would do, read without changing anything."""
        found, has_tables = await read_version(tx)
        if found is None:
            if has_tables:
                return Survey(found, (), self._unversioned(tx.dialect))
            return Survey(None, ())
        if found > schema_version():
            return Survey(found, (), self._newer(found))
        steps = steps_after(found, postgres=tx.dialect == "postgresql")
        if not steps:
            return Survey(found, ())
        present = await present_later_objects(tx, found)
        if present:
            return Survey(found, steps, self._half_migrated(found, present))
        return Survey(found, steps)

    def check_beside_servers(self, found: int) -> None:
        """Refuse to migrate a SQLite database another process serves."""
        pid = self.other_server()
        if pid is not None:
            shown = f" (pid {pid})" if pid > 0 else ""
            raise UpgradeRefused(
                f"the database {self.label} is at schema version {found} and this agentsvc"
                f" needs {schema_version()}, but another agentsvc{shown} serves this data"
                " directory: stop it first (a server must not run on a schema newer than its"
                " own), then start the new version or run `agentsvc migrate`"
            )

    async def back_up(self, found: int, copy: Callable[[Path], Awaitable[None]]) -> Path | None:
        """Copy the database (of version `found`) with `copy(target)` into the backups, or
        refuse to migrate; rotate the older copies. None when backups are off."""
        if self.backups is None:
            log.warning(
                "upgrading %s from schema version %s without a backup"
                " ([database] backup_before_migrate = false)",
                self.label,
                found,
            )
            return None
        started = time.monotonic()
        try:
            target = self.backups.reserve(found)
        except OSError as exc:
            raise self._no_backup(found, _words(exc)) from None
        log.info("backing up %s (schema version %s) to %s", self.label, found, target)
        try:
            await copy(target)
        except (BackupFailed, ToolFailed, OSError) as exc:
            target.unlink(missing_ok=True)
            raise self._no_backup(found, _words(exc)) from None
        except BaseException:
            target.unlink(missing_ok=True)
            raise
        size = target.stat().st_size
        log.info(
            "backup written: %s (%.1f MB in %.1f s)", target, size / 1e6, time.monotonic() - started
        )
        for old in self.backups.rotate():
            log.info("removed an older backup: %s (keeping %s)", old, self.backups.keep)
        return target

    def migrated(self, step: Step, started: float) -> None:
        """Log one migration applied (and committed)."""
        log.info(
            "%s: migration %s applied in %.2f s",
            self.label,
            step.label,
            time.monotonic() - started,
        )

    def created(self) -> None:
        """A new database was given the newest schema."""
        self.done = Upgrade(0, schema_version(), None)

    def finished(self, found: int, backup: Path | None) -> None:
        """Record and log an upgrade done."""
        self.done = Upgrade(found, schema_version(), backup)
        log.info(
            "%s upgraded from schema version %s to %s%s",
            self.label,
            found,
            schema_version(),
            f" (backup: {backup})" if backup else "",
        )

    # ── refusals ──────────────────────────────────────────────────────────────────────
    def failed(
        self, found: int, step: Step, reached: int, backup: Path | None, said: str
    ) -> UpgradeRefused:
        """A migration failed; its transaction was rolled back."""
        where = (
            f"the backup taken before the upgrade is {backup} (`agentsvc restore {backup}`"
            " goes back to it)"
            if backup
            else "no backup was taken ([database] backup_before_migrate = false)"
        )
        return UpgradeRefused(
            f"upgrading the database {self.label} from schema version {found} to"
            f" {schema_version()} stopped: migration {step.label} failed (the database said:"
            f" {said}). The database is at schema version {reached}, whole: each migration is"
            f" one transaction and nothing of this one was kept. This agentsvc needs version"
            f" {schema_version()} and does not start; {where}"
        )

    def _no_backup(self, found: int, reason: str) -> UpgradeRefused:
        assert self.backups is not None
        return UpgradeRefused(
            f"the database {self.label} (schema version {found}) was not upgraded to"
            f" {schema_version()}: the backup into {self.backups.directory} could not be made"
            f" ({reason}). Nothing was changed. Make the backup possible (free space, the"
            " directory writable; on PostgreSQL the client tools, see docs/operators/"
            "backup-and-upgrade.md), or set [database] backup_before_migrate = false to"
            " upgrade without one, after a backup of your own"
        )

    def _older_backup(self, at_most: int) -> str:
        if self.backups is None:
            return "backups are off ([database] backup_before_migrate = false)"
        backup = self.backups.newest(at_most)
        if backup is None:
            return f"no backup of schema version {at_most} or older is in {self.backups.directory}"
        return (
            f"the newest backup it can run is {backup.path} (schema version {backup.version};"
            f" `agentsvc restore {backup.path}`, losing what changed since)"
        )

    def _newer(self, found: int) -> str:
        return (
            f"the database {self.label} has schema version {found}, newer than this"
            f" agentsvc's {schema_version()}: a newer agentsvc upgraded it. Install that"
            f" version again; to go back to this one, restore a backup taken before that"
            f" upgrade: {self._older_backup(schema_version())}"
        )

    def _half_migrated(self, found: int, present: list[Probe]) -> str:
        named = ", ".join(f"{p.kind} {p.name} (version {p.version})" for p in present[:4])
        more = f" and {len(present) - 4} more" if len(present) > 4 else ""
        return (
            f"the database {self.label} is half-migrated: its schema version is {found} but it"
            f" already has objects of later versions: {named}{more}. This agentsvc needs"
            f" version {schema_version()} and does not upgrade a database in that state"
            " (changed outside agentsvc's migrations, by hand or by a tool that does not use"
            " one transaction per migration). Restore a backup:"
            f" {self._older_backup(found)}; or take those objects away so that it is version"
            f" {found} again"
        )

    def _unversioned(self, dialect: str) -> str:
        where = (
            "PRAGMA user_version is 0" if dialect == "sqlite" else "schema_info holds no version"
        )
        return (
            f"the database {self.label} holds tables but no schema version ({where}): it is"
            " not an agentsvc database, or one whose restore stopped part way. This agentsvc"
            f" (schema version {schema_version()}) does not touch it; restore a backup:"
            f" {self._older_backup(schema_version())}"
        )


def _words(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.strerror:
        where = f": {exc.filename}" if exc.filename else ""
        return f"{exc.strerror.lower()}{where}"
    return str(exc)


def upgrader_for(settings: Settings) -> Upgrader:
    """The upgrade of the database the settings name."""
    database = settings.database
    backups = None
    if database.backup_before_migrate:
        kind = "dump" if database.url else "db"
        backups = Backups(settings.server.data_dir / "backups", database.backups_kept, kind)
    other_server: Callable[[], int | None] = lambda: None  # noqa: E731
    if not database.url:
        from agentsvc.running import other_server_pid

        data_dir = settings.server.data_dir
        other_server = lambda: other_server_pid(data_dir)  # noqa: E731
    return Upgrader(settings.database_label, backups, database.pg_bin_dir, other_server)
