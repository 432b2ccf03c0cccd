"""PostgreSQL's client tools, as agentsvc runs them: pg_dump for backups, pg_restore and
psql for `agentsvc restore`.

The tools are found in `[database] pg_bin_dir`, else on PATH, else in the newest
`/usr/lib/postgresql/N/bin` (Debian's and Ubuntu's layout). Their major version must be
the server's or newer: an older pg_dump refuses a newer server, and an older pg_restore
cannot read a newer pg_dump's file; both are said in words with what to install.

A dump holds agentsvc's schema alone (`--schema`, the connection's current schema: `public`
unless the URL sets `search_path`), in the custom format. A restore runs in ONE
transaction through psql: the schema is dropped and made again from the file, so an error
anywhere leaves the database as it was, and nothing of the replaced schema survives beside
what the file holds (tables a later migration added included).

The URL is asyncpg's: its query keys that libpq does not know are server settings (as
asyncpg treats them), handed to the tools as `options=-c key=value`. The password never
goes on a command line (other local users see those): it is written to a passfile of
this process, removed afterwards.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import parse_qsl, quote, urlencode, urlsplit, urlunsplit

DEBIAN_BIN_DIRS = Path("/usr/lib/postgresql")

# Query keys of a URL that libpq itself knows (asyncpg's `database` is libpq's `dbname`).
LIBPQ_KEYS = {
    "host", "hostaddr", "port", "dbname", "user", "password", "passfile", "channel_binding",
    "connect_timeout", "client_encoding", "options", "application_name",
    "fallback_application_name", "keepalives", "keepalives_idle", "keepalives_interval",
    "keepalives_count", "tcp_user_timeout", "gssencmode", "sslmode", "sslcompression",
    "sslcert", "sslkey", "sslpassword", "sslrootcert", "sslcrl", "sslcrldir", "sslsni",
    "requirepeer", "ssl_min_protocol_version", "ssl_max_protocol_version", "krbsrvname",
    "gsslib", "service", "target_session_attrs",
}  # fmt: skip


class ToolFailed(Exception):
    """A client tool is missing or failed; the message says why and what to do, in words."""


@dataclass(frozen=True)
class Archive:
    """What a pg_dump file holds, read with `pg_restore --list`."""

    schema: str  # the schema its schema_info table is in
    version: int  # the schema version it holds
    creates_schema: bool  # whether it makes the schema itself (a --schema dump does)


def find(tool: str, bin_dir: str = "") -> str | None:
    """The path of a client tool (pg_dump, pg_restore, psql), or None."""
    if bin_dir:
        path = Path(bin_dir) / tool
        return str(path) if path.is_file() and os.access(path, os.X_OK) else None
    found = shutil.which(tool)
    if found:
        return found
    candidates = sorted(
        DEBIAN_BIN_DIRS.glob(f"*/bin/{tool}"),
        key=lambda p: int(p.parts[-3]) if p.parts[-3].isdigit() else 0,
    )
    return str(candidates[-1]) if candidates else None


def _required(tool: str, bin_dir: str) -> str:
    path = find(tool, bin_dir)
    if path is None:
        where = f"in [database] pg_bin_dir ({bin_dir})" if bin_dir else "on PATH"
        raise ToolFailed(
            f"{tool} was not found {where}: install PostgreSQL's client tools of the server's"
            " major version or newer (Debian and Ubuntu: postgresql-client-N), or set"
            " [database] pg_bin_dir to where they are"
        )
    return path


def libpq_url(url: str, passfile: Path | None = None) -> str:
    """The URL as libpq reads it: no password (see `passfile`), asyncpg's server settings as
    `options`, `database` as `dbname`."""
    parts = urlsplit(url)
    keep, settings = [], []
    for key, value in parse_qsl(parts.query, keep_blank_values=True):
        if key == "password":
            continue
        if key == "database":
            key = "dbname"
        if key in LIBPQ_KEYS:
            keep.append((key, value))
        else:
            escaped = value.replace("\\", "\\\\").replace(" ", "\\ ")
            settings.append(f"-c {key}={escaped}")
    if settings:
        keep.append(("options", " ".join(settings)))
    if passfile is not None:
        keep.append(("passfile", str(passfile)))
    netloc = parts.netloc
    if parts.password is not None:
        netloc = netloc.replace(f":{parts.password}@", "@", 1)
    return urlunsplit(parts._replace(netloc=netloc, query=urlencode(keep, quote_via=quote)))


@contextlib.contextmanager
def _connection(url: str) -> Iterator[str]:
    """The libpq URL for one run of the tools, its password in a passfile of its own."""
    parts = urlsplit(url)
    password = parts.password
    for key, value in parse_qsl(parts.query):
        if key == "password":
            password = value
    if password is None:
        yield libpq_url(url)
        return
    from urllib.parse import unquote

    with tempfile.TemporaryDirectory(prefix="agentsvc-pg-") as folder:
        passfile = Path(folder) / "pgpass"
        secret = unquote(password).replace("\\", "\\\\").replace(":", "\\:")
        fd = os.open(passfile, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as file:
            file.write(f"*:*:*:*:{secret}\n")
        yield libpq_url(url, passfile)


def _run(args: list[str], **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run(  # noqa: S603 - our own argument list
        args, capture_output=True, text=True, check=False, **kwargs
    )


def _reason(tool: str, stderr: str) -> str:
    """What a failed tool said, with what to do where we recognise it."""
    text = stderr.strip()
    server = re.search(r"server version: (\d+)", text)
    if "server version mismatch" in text and server:
        return (
            f"{tool} is older than the PostgreSQL server (version {server.group(1)}): install"
            f" the client tools of version {server.group(1)} (Debian and Ubuntu:"
            f" postgresql-client-{server.group(1)}) and set [database] pg_bin_dir to their"
            " bin directory"
        )
    if "unsupported version" in text and "file header" in text:
        return (
            f"the file was written by a newer pg_dump than this {tool} can read: install the"
            " client tools of the version that wrote it and set [database] pg_bin_dir"
        )
    lines = [line for line in text.splitlines() if line.strip()]
    said = "; ".join(line.removeprefix(f"{tool}: ").strip() for line in lines[-3:])
    return f"{tool} said: {said}" if said else f"{tool} ended without saying why"


def dump(url: str, target: Path, schema: str, bin_dir: str = "") -> None:
    """Write agentsvc's schema of the database into `target` (custom format); on failure
    remove `target` and raise ToolFailed."""
    pg_dump = _required("pg_dump", bin_dir)
    with _connection(url) as libpq:
        done = _run(
            [
                pg_dump,
                "--format=custom",
                "--no-owner",
                f"--schema={_quoted(schema)}",
                f"--file={target}",
                f"--dbname={libpq}",
            ]
        )
    if done.returncode != 0:
        target.unlink(missing_ok=True)
        raise ToolFailed(_reason("pg_dump", done.stderr))
    os.chmod(target, 0o600)


def _quoted(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def read_archive(path: Path, bin_dir: str = "") -> Archive:
    """What a pg_dump file holds; ToolFailed when it is not one of agentsvc's databases."""
    pg_restore = _required("pg_restore", bin_dir)
    listed = _run([pg_restore, "--list", str(path)])
    if listed.returncode != 0:
        if "input file does not appear to be a valid archive" in listed.stderr:
            raise ToolFailed(f"{path} is not a pg_dump file in the custom format")
        raise ToolFailed(_reason("pg_restore", listed.stderr))
    table = re.search(r"^\d+; \d+ \d+ TABLE (\S+) schema_info ", listed.stdout, re.MULTILINE)
    if table is None:
        raise ToolFailed(f"{path} holds no agentsvc database (it has no schema_info table)")
    schema = table.group(1)
    data = _run(
        [
            pg_restore,
            "--data-only",
            f"--schema={schema}",
            "--table=schema_info",
            "--file=-",
            str(path),
        ]
    )
    version = re.search(r"^COPY \S+ \(version\) FROM stdin;\n(\d+)\n", data.stdout, re.MULTILINE)
    if data.returncode != 0 or version is None:
        raise ToolFailed(f"{path} holds no schema version (its schema_info table is empty)")
    creates = re.search(rf"^\d+; \d+ \d+ SCHEMA - {re.escape(schema)} ", listed.stdout, re.M)
    return Archive(schema=schema, version=int(version.group(1)), creates_schema=bool(creates))


def restore(
    url: str, path: Path, archive: Archive, extensions: list[str], bin_dir: str = ""
) -> None:
    """Replace the archive's schema in the database with what the file holds, in one
    transaction (psql --single-transaction): its schema dropped and made again, the
    extensions that lived in it (and btree_gin, which its search indexes may need)
    created again before the indexes. Raise ToolFailed, with the database unchanged."""
    pg_restore = _required("pg_restore", bin_dir)
    psql = _required("psql", bin_dir)
    schema = _quoted(archive.schema)
    prologue = f"SET client_min_messages = warning; DROP SCHEMA IF EXISTS {schema} CASCADE;"
    if not archive.creates_schema:  # a whole-database dump leaves `public` to exist
        prologue += f" CREATE SCHEMA {schema};"
    wanted = list(dict.fromkeys([*extensions, "btree_gin"]))
    # Where an extension cannot be made (no privilege, not installed), the restore goes on:
    # the file's indexes then say whether it was needed.
    again = " ".join(
        f"BEGIN CREATE EXTENSION IF NOT EXISTS {_quoted(name)} SCHEMA {schema};"
        " EXCEPTION WHEN OTHERS THEN NULL; END;"
        for name in wanted
    )
    with tempfile.TemporaryDirectory(prefix="agentsvc-restore-") as folder:
        scripts = {}
        for section in ("pre-data", "post-data"):
            scripts[section] = Path(folder) / f"{section}.sql"
            made = _run(
                [
                    pg_restore,
                    f"--section={section}",
                    "--no-owner",
                    "--no-privileges",
                    f"--file={scripts[section]}",
                    str(path),
                ]
            )
            if made.returncode != 0:
                raise ToolFailed(_reason("pg_restore", made.stderr))
        with _connection(url) as libpq:
            psql_args = [
                psql,
                "--no-psqlrc",
                "--quiet",
                "--set=ON_ERROR_STOP=1",
                "--single-transaction",
                f"--dbname={libpq}",
                f"--command={prologue}",
                f"--file={scripts['pre-data']}",
                f"--command=DO $$ BEGIN {again} END $$;",
                "--file=-",
                f"--file={scripts['post-data']}",
            ]
            _pipe(pg_restore, path, psql_args, Path(folder))


# What psql reads after rows pg_restore could not finish: whatever state the stream was
# left in (inside a COPY or not), the line ends, `\.` ends a COPY or is itself an error,
# and the division fails: ON_ERROR_STOP then rolls the one transaction back.
_POISON = b"\n\\.\nSELECT 1 / 0;\n"


def _pipe(pg_restore: str, path: Path, psql_args: list[str], folder: Path) -> None:
    """Stream the file's rows from pg_restore into psql, which commits only if both ended
    well (the rows of a pg_restore that failed part way are followed by an error)."""
    with (
        (folder / "pg_restore.err").open("w+b") as restore_err,
        (folder / "psql.err").open("w+b") as psql_err,
    ):
        # Not a shell pipeline: psql must not commit the rows of a pg_restore that failed.
        psql = subprocess.Popen(psql_args, stdin=subprocess.PIPE, stderr=psql_err)  # noqa: S603
        data = subprocess.Popen(  # noqa: S603 - our own argument list
            [pg_restore, "--section=data", "--no-owner", "--file=-", str(path)],
            stdout=subprocess.PIPE,
            stderr=restore_err,
        )
        assert psql.stdin is not None and data.stdout is not None
        try:
            shutil.copyfileobj(data.stdout, psql.stdin, 1 << 16)
            if data.wait() != 0:
                psql.stdin.write(_POISON)
            psql.stdin.close()
        except BrokenPipeError:  # psql stopped at an error: pg_restore need not go on
            data.kill()
        finally:
            data.stdout.close()
            data.wait()
            psql.wait()
        if psql.returncode != 0 and data.returncode in (0, -9):
            psql_err.seek(0)
            said = psql_err.read().decode("utf-8", "replace")
            raise ToolFailed(_reason("psql", said) + "; the database was not changed")
        if data.returncode != 0:
            restore_err.seek(0)
            said = restore_err.read().decode("utf-8", "replace")
            raise ToolFailed(_reason("pg_restore", said) + "; the database was not changed")


async def current_schema(url: str) -> str:
    """The schema agentsvc's tables are in: the connection's current schema."""
    import asyncpg

    conn = await asyncpg.connect(url)
    try:
        return await conn.fetchval("SELECT current_schema()")
    finally:
        await conn.close()
