"""The `agentsvc` command: serve, apikey create, user create and set-password, login-link,
team set-plan, backup, migrate, restore, copy-data, eval run."""

from __future__ import annotations

import argparse
import asyncio
import difflib
import errno
import gc
import logging
import os
import re
import signal
import socket
import sys
from collections.abc import Awaitable, Callable
from typing import Any, NoReturn

from agentsvc.cli_eval import add_eval_command
from agentsvc.cli_input import UsageError, checked, checked_plan, read_password
from agentsvc.cli_upgrade import add_upgrade_commands, unreachable
from agentsvc.config import (
    WILDCARD_HOSTS,
    ConfigError,
    Settings,
    listener_url,
    load_settings,
    log_level,
)
from agentsvc.db import Database, database_for
from agentsvc.db.restore import RestoreRefused
from agentsvc.db.upgrade import UpgradeRefused
from agentsvc.errors import ValidationFailed
from agentsvc.passwords import MAX_PASSWORD_LENGTH, MIN_PASSWORD_LENGTH
from agentsvc.process_limits import OpenFileLimit, raise_open_file_limit
from agentsvc.running import (
    DirectoryInUse,
    forget_running,
    lock_data_dir,
    record_running,
    running_public_url,
)
from agentsvc.storage import StorageError

log = logging.getLogger(__name__)


class CommandError(Exception):
    """A failure reported as one line on stderr with a non-zero exit."""


def _settings(args: argparse.Namespace) -> Settings:
    server: dict[str, Any] = {}
    for name in ("host", "port", "data_dir"):
        value = getattr(args, name, None)
        if value is not None:
            server[name] = value
    return load_settings(args.config, overrides={"server": server} if server else None)


async def _serve(
    settings: Settings, sockets: list[socket.socket], open_files: OpenFileLimit | None = None
) -> None:
    from aiohttp import web

    from agentsvc.api.server import make_runner
    from agentsvc.app import create_app

    # Before anything starts: a signal during start-up stops the server once it is up,
    # and a signal right after the start-up line is never the default (killing) action.
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    app = create_app(settings)
    runner = make_runner(app, settings)
    try:
        await runner.setup()
    except BaseException:
        # What started before the failing step (the database, its threads) is closed, or
        # the process could not exit.
        await runner.cleanup()
        raise
    for sock in sockets:
        await web.SockSite(runner, sock).start()
    host, port = sockets[0].getsockname()[:2]
    _tune_collector()
    try:  # before the start-up line: whoever waits for it may run `login-link` at once
        running = record_running(settings.server.data_dir, settings.server.public_url)
    except OSError as exc:  # only `login-link` needs it, and it falls back to the settings
        log.warning("cannot note the public URL in the data directory: %s", exc)
        running = None
    _log_addresses(settings, host, port)
    if open_files is not None:
        open_files.log()
    await stop.wait()
    log.info("agentsvc stopping")
    if running is not None:
        forget_running(running)
    await runner.cleanup()
    log.info("agentsvc stopped")


def _listen(host: str, port: int) -> list[socket.socket]:
    """Listening sockets on host:port, bound before anything starts, so a port in use
    stops `serve` with one line. Port 0 picks a free port (on the first address)."""
    sockets: list[socket.socket] = []
    try:
        found = socket.getaddrinfo(
            host or None, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )
        addresses = list(dict.fromkeys((family, address) for family, *_, address in found))
        for family, address in addresses[:1] if port == 0 else addresses:
            # SO_REUSEADDR, as aiohttp sets it: a restart is not refused by old connections.
            sockets.append(socket.create_server(address, family=family))
    except OSError as exc:
        for sock in sockets:
            sock.close()
        shown = f"[{host}]" if ":" in host else host or "every interface"
        if exc.errno == errno.EADDRINUSE:
            raise CommandError(
                f"port {port} on {shown} is in use (another program listens there);"
                " choose another with --port"
            ) from None
        reason = (exc.strerror or str(exc)).lower()
        raise CommandError(f"cannot listen on port {port} of {shown}: {reason}") from None
    return sockets


def _log_addresses(settings: Settings, host: str, port: int) -> None:
    """Name the listener and the public URL, and warn when they cannot both be right."""
    from agentsvc.services.team.trust import loopback_port_mismatch

    server = settings.server
    shown = f"[{host}]" if ":" in host else host
    # Absolute paths: the process's working directory is not the reader's.
    data = str(settings.db_path)
    if settings.database.url:
        data = f"{server.data_dir}; database: {settings.database_label}"
    log.info(
        "agentsvc listening on http://%s:%s (public URL %s; data: %s)",
        shown,
        port,
        server.public_url,
        data,
    )
    if server.public_url_derived and server.host in WILDCARD_HOSTS:
        log.info(
            "public URL %s is derived from the listener on every interface; set [server]"
            " public_url (AGENTSVC_SERVER_PUBLIC_URL) to the address others browse to",
            server.public_url,
        )
    other = loopback_port_mismatch(server.public_url, port)
    if other is not None and not server.public_url_derived:
        log.warning(
            "[server] public_url %s is on port %s but agentsvc listens on port %s: a"
            " browser at %s is refused (403, untrusted origin) and e-mailed links"
            " lead to port %s; set public_url to the address you browse to, or leave it"
            " empty to derive it from the listener",
            server.public_url,
            other,
            port,
            listener_url(server.host, port),
            other,
        )


def _tune_collector() -> None:
    """Keep the cyclic garbage collector's pauses short while many streams are open.

    A full collection walks every tracked object: with the ~77,000 objects of the loaded
    modules plus ~75 per open stream, it stalled the loop for 100-250 ms under 2,000
    streams (scripts/bench_chat.py). Startup objects are frozen out of the walk, and the
    young generation is collected every 50,000 allocations instead of 700, so full
    collections become rare and young ones stay a few milliseconds.
    """
    gc.collect()
    gc.freeze()
    gc.set_threshold(50_000, 20, 10)


def _run(coro_fn: Callable[[], Awaitable[Any]], fast_loop: bool = False) -> Any:
    if fast_loop:
        try:
            import uvloop

            return uvloop.run(coro_fn())
        except ImportError:  # pragma: no cover - uvloop is Linux/macOS only
            pass
    return asyncio.run(coro_fn())


def _where(settings: Settings) -> str:
    """The database a command used, for its messages: `in /abs/data` or the PostgreSQL one."""
    if settings.database.url:
        return f"in {settings.database_label}"
    return f"in {settings.server.data_dir}"


def _existing(settings: Settings) -> Settings:
    """The settings, once their SQLite database is known to exist: a lookup never creates
    one (run in another directory, it would find nothing in a new, empty database)."""
    if not settings.database.url and not settings.db_path.is_file():
        raise CommandError(
            f"no database {_where(settings)} (start `agentsvc serve` on this data directory"
            " first, or pass the server's --data-dir)"
        )
    return settings


async def _with_db(settings: Settings, fn: Callable[[Database], Awaitable[Any]]) -> Any:
    created = not settings.database.url and not settings.db_path.is_file()
    db = database_for(settings)
    await _reaching(settings, db.open())
    if created:  # commands that create (apikey create, user create, migrate) say where
        log.info("created a new database: %s", settings.db_path)
    try:
        return await fn(db)
    finally:
        await db.close()


def cmd_serve(args: argparse.Namespace) -> None:
    settings = _settings(args)
    # One server per SQLite data directory: two would both write the file and both take
    # over every delivery lease. With PostgreSQL, processes sharing a directory is the
    # documented cluster on one machine.
    locking = not settings.database.url
    # Taken before binding when the directory exists (a second server on it is named as
    # such, not as "port in use"); else after, so a taken port leaves no new directory.
    lock = _lock_data_dir(settings) if locking and settings.server.data_dir.is_dir() else None
    try:
        sockets = _listen(settings.server.host, settings.server.port)
        if locking and lock is None:
            try:
                lock = _lock_data_dir(settings)
            except CommandError:
                for sock in sockets:
                    sock.close()
                raise
        if settings.server.port == 0:
            # The port must be known before the app is built: a derived public_url names it.
            port = sockets[0].getsockname()[1]
            settings = settings.model_copy(update={"server": settings.server.listening_on(port)})
        if settings.server.cpu_affinity and hasattr(os, "sched_setaffinity"):
            # Keeps the loop and aiosqlite's threads on one core.
            os.sched_setaffinity(0, settings.server.cpu_affinity)
        open_files = raise_open_file_limit()  # every connection and stream is a descriptor
        _run(lambda: _serve(settings, sockets, open_files), fast_loop=True)
    finally:
        if lock is not None:
            os.close(lock)


def _lock_data_dir(settings: Settings) -> int:
    try:
        return lock_data_dir(settings.server.data_dir)
    except DirectoryInUse as exc:
        raise CommandError(str(exc)) from None
    except OSError as exc:
        reason = (exc.strerror or str(exc)).lower()
        raise CommandError(
            f"cannot use the data directory {settings.server.data_dir}: {reason}"
        ) from None


def cmd_apikey_create(args: argparse.Namespace) -> None:
    from agentsvc.services.team import accounts
    from agentsvc.services.team.sessions import normalise_email

    options = checked(email=args.email, name=args.name, key_name=args.key_name)
    settings = _settings(args)

    async def create(db: Database) -> str:
        user, team = await accounts.ensure_user_with_team(
            db,
            email=normalise_email(options.email or ""),
            name=(options.name or "").strip(),
            plan=settings.plans.default,
        )
        created = await accounts.create_key_for(
            db, team_id=team.id, user_id=user.id, name=options.key_name or "cli"
        )
        return created.key

    print(_run(lambda: _with_db(settings, create)))


def cmd_eval_run(args: argparse.Namespace) -> None:
    from agentsvc.cli_eval import EvalFailed, run_eval

    settings = _existing(_settings(args))
    try:
        status = _run(lambda: _with_db(settings, lambda db: run_eval(db, settings, args)))
    except EvalFailed as exc:
        raise CommandError(str(exc)) from exc
    if status:
        sys.exit(status)


def _new_password(args: argparse.Namespace) -> str:
    from agentsvc.passwords import hash_password

    if getattr(args, "password", None) is not None:
        if args.password_stdin:
            raise UsageError("give --password or --password-stdin, not both")
        password = checked(password=args.password).password or ""
    else:
        password = read_password(args.password_stdin)
    return hash_password(password)


def cmd_user_create(args: argparse.Namespace) -> None:
    from agentsvc.errors import Conflict
    from agentsvc.services.team import accounts
    from agentsvc.services.team.sessions import normalise_email

    options = checked(email=args.email, name=args.name)
    email = normalise_email(options.email or "")
    settings = _settings(args)
    password_hash = _new_password(args)

    async def create(db: Database) -> str:
        try:
            user = await accounts.create_user(
                db,
                email=email,
                name=(options.name or "").strip(),
                password_hash=password_hash,
                plan=settings.plans.default,
            )
        except Conflict as exc:
            raise CommandError(exc.message) from None
        return user.id

    print(_run(lambda: _with_db(settings, create)))


def cmd_user_set_password(args: argparse.Namespace) -> None:
    from agentsvc.services.team import accounts
    from agentsvc.services.team.sessions import normalise_email

    email = normalise_email(checked(email=args.email).email or "")
    settings = _existing(_settings(args))
    password_hash = _new_password(args)

    async def set_password(db: Database) -> None:
        try:
            await accounts.set_password(db, email=email, password_hash=password_hash)
        except LookupError as exc:
            raise CommandError(
                f"{exc} {_where(settings)}; create it with `agentsvc user create`"
            ) from exc

    _run(lambda: _with_db(settings, set_password))
    print(f"{email}: password set")


def cmd_login_link(args: argparse.Namespace) -> None:
    from agentsvc.services.team import accounts, sessions

    options = checked(email=args.email, callback=args.callback)
    email = sessions.normalise_email(options.email or "")
    settings = _existing(_settings(args))
    running = running_public_url(settings.server.data_dir)
    if settings.server.public_url_derived and running:
        # The link must reach the server that runs now, on whatever port it was given.
        server = settings.server.model_copy(update={"public_url": running})
        settings = settings.model_copy(update={"server": server})

    async def create(db: Database) -> str:
        user = await accounts.user_by_email(db, email)
        if user is None:
            raise CommandError(
                f"no user with e-mail {email} {_where(settings)}; create one with"
                " `agentsvc apikey create` or `agentsvc user create`"
            )
        try:
            return await sessions.create_magic_link(db, settings, user, options.callback or "/")
        except ValidationFailed as exc:
            raise UsageError(f"--callback: {exc.message.partition(': ')[2]}") from exc

    print(_run(lambda: _with_db(settings, create)))


def cmd_team_set_plan(args: argparse.Namespace) -> None:
    from agentsvc.services.team import accounts
    from agentsvc.services.team.sessions import normalise_email

    email = normalise_email(checked(email=args.email).email or "")
    settings = _settings(args)
    plan = checked_plan(args.plan, settings.plans.plans)
    _existing(settings)

    async def set_plan(db: Database) -> None:
        try:
            await accounts.set_team_plan(db, email=email, plan=plan)
        except LookupError as exc:
            raise CommandError(f"{exc} {_where(settings)}") from exc

    _run(lambda: _with_db(settings, set_plan))
    print(f"{email}: plan {plan}")


def cmd_team_verify_domain(args: argparse.Namespace) -> None:
    from agentsvc.services.sso import domains

    domain = args.domain.strip().lower().rstrip(".")
    settings = _existing(_settings(args))

    async def verify(db: Database) -> bool:
        try:
            return await domains.verify_by_operator(db, args.team, domain)
        except LookupError as exc:
            raise CommandError(f"{exc} {_where(settings)}") from exc

    changed = _run(lambda: _with_db(settings, verify))
    print(f"{domain}: verified for team {args.team}" + ("" if changed else " (already)"))


def cmd_backup(args: argparse.Namespace) -> None:
    from pathlib import Path

    from agentsvc.db.backups import BackupFailed, copy_sqlite

    settings = _settings(args)
    target = Path(args.path)
    if settings.database.url:
        _pg_dump(settings, target)
        return
    source_path = _existing(settings).db_path
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        # The copy holds every team's data: created 0600 (whatever the umask), never over
        # an existing file.
        os.close(os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    except FileExistsError:
        raise CommandError(f"{target} already exists; choose a new file") from None
    os.chmod(target, 0o600)
    try:
        copy_sqlite(source_path, target)
    except BackupFailed as exc:
        raise CommandError(str(exc)) from None
    print(target)


def _pg_dump(settings: Settings, target: Any) -> None:
    """PostgreSQL's backup is pg_dump's of agentsvc's schema (custom format; `agentsvc
    restore` reads it)."""
    from agentsvc.db.pg_tools import ToolFailed, current_schema, dump

    if target.exists():
        raise CommandError(f"{target} already exists; choose a new file")
    target.parent.mkdir(parents=True, exist_ok=True)
    url = settings.database.url
    try:
        dump(url, target, _run(lambda: current_schema(url)), settings.database.pg_bin_dir)
    except ToolFailed as exc:
        raise CommandError(str(exc)) from None
    print(target)


def cmd_migrate(args: argparse.Namespace) -> None:
    from agentsvc.cli_upgrade import migrated_line, plan_lines

    settings = _settings(args)
    if args.plan:
        survey = _run(lambda: _reaching(settings, database_for(settings).survey()))
        if survey.refusal is not None:
            raise CommandError(survey.refusal)
        print("\n".join(plan_lines(settings, survey)))
        return

    async def open_it(db: Database) -> Any:
        return db.upgrader.done

    done = _run(lambda: _with_db(settings, open_it))
    print(migrated_line(settings, done))


async def _reaching(settings: Settings, work: Awaitable[Any]) -> Any:
    """`work`, with a database that cannot be reached said in words."""
    try:
        return await work
    except OSError as exc:
        raise CommandError(unreachable(settings, exc)) from None


def cmd_restore(args: argparse.Namespace) -> None:
    from pathlib import Path

    from agentsvc.cli_upgrade import restore_command

    print(restore_command(_settings(args), Path(args.path), args.yes))


def cmd_copy_data(args: argparse.Namespace) -> None:
    from agentsvc.db.copy import CopyFailed, copy_data, redacted
    from agentsvc.db.postgres import is_postgres_url

    settings = _settings(args)
    if settings.database.url:
        raise UsageError("copy-data copies the SQLite database: unset [database] url first")
    if not is_postgres_url(args.to):
        raise UsageError("--to: must be a postgresql:// URL")
    target_storage = _target_storage(settings, args.storage_to)
    _existing(settings)

    def report(table: str, rows: int) -> None:
        print(f"{table}: {rows} rows", flush=True)

    async def copy() -> dict[str, int]:
        files = await _file_copy(settings, target_storage)
        try:
            return await copy_data(settings.db_path, args.to, report, files)
        finally:
            await _close_stores(files)

    try:
        copied = _run(copy)
    except CopyFailed as exc:
        raise CommandError(str(exc)) from None
    moved, size = copied.pop("files", 0), copied.pop("file_bytes", 0)
    where = target_storage.url if target_storage is not None else "the database"
    if target_storage is None and settings.storage.url:
        where = f"{settings.storage.url} (left where they are)"
    print(
        f"copied {sum(copied.values())} rows of {settings.db_path} into {redacted(args.to)};"
        f" every table's count matches; {moved} files ({size} bytes) into {where}"
    )


def _target_storage(settings: Settings, url: str | None) -> Any:
    """The [storage] settings of the copy's files (`--storage-to`), or None: into the
    database (or, from an S3 instance, left in its bucket)."""
    if not url:
        return None
    from pydantic import ValidationError

    from agentsvc.config import StorageSettings, storage_with_environment
    from agentsvc.validation_messages import describe_validation_error

    try:
        chosen = StorageSettings.model_validate({**settings.storage.model_dump(), "url": url})
    except ValidationError as exc:
        reason = describe_validation_error(exc, "", StorageSettings).replace("url: ", "", 1)
        raise UsageError(f"--storage-to: {reason}") from None
    return storage_with_environment(chosen)


async def _file_copy(settings: Settings, target: Any) -> Any:
    """The stores files are copied between (their connections checked first), or None
    when they stay where they are (an S3 instance, copied without --storage-to)."""
    from agentsvc.db.copy import FileCopy
    from agentsvc.storage import StorageError, open_store

    if target is None and settings.storage.url:
        return None
    source = open_store(settings, None)
    into = None
    if target is not None:
        into = open_store(settings.model_copy(update={"storage": target}), None)
    try:
        for store in (source, into):
            if store is not None:
                await store.check()
    except StorageError:
        await _close_stores(FileCopy(source, into))
        raise

    def files_progress(done: Any) -> None:
        if done.files % 100 == 0:
            print(f"files: {done.files} ({done.bytes} bytes)", flush=True)

    return FileCopy(source, into, files_progress)


async def _close_stores(files: Any) -> None:
    if files is not None:
        for store in (files.source, files.target):
            if store is not None:
                await store.close()


class _Parser(argparse.ArgumentParser):
    """argparse, with usage errors as one line on stderr (exit status 2) that name an
    unknown option, with the close one meant, before anything else."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        # `--password` must not be taken for `--password-stdin`, nor any prefix for an option.
        super().__init__(*args, **{**kwargs, "allow_abbrev": False})
        self._given: list[str] = []

    def parse_known_args(self, args: Any = None, namespace: Any = None) -> Any:
        self._given = list(sys.argv[1:] if args is None else args)
        parsed, extras = super().parse_known_args(self._given, namespace)
        if extras:  # said by the command that was given them, not by `agentsvc`
            self.error(f"unexpected argument {extras[0]!r}")  # or names the unknown option
        return parsed, extras

    def error(self, message: str) -> NoReturn:
        # A misspelt option explains a missing required one (`--emial` for `--email`).
        unknown = self._unknown_option()
        hint = " (see --help)"
        if unknown is not None:
            message = f"unknown option {unknown}"
            hint = self._did_you_mean(unknown, self._option_string_actions) or hint
        elif self._commands():
            choice = re.search(r"invalid choice: '([^']*)'", message)
            if choice is not None:
                message = f"unknown command {choice.group(1)!r}"
                hint = self._did_you_mean(choice.group(1), self._commands()) or hint
            elif "required" in message:
                message = f"a command is required: {', '.join(self._commands())}"
        command = self.prog.removeprefix("agentsvc").strip()
        self.exit(2, f"agentsvc: {command + ': ' if command else ''}{message}{hint}\n")

    def _unknown_option(self) -> str | None:
        """The first option given to this parser that it does not know."""
        known = self._option_string_actions
        given = iter(self._given)
        for arg in given:
            if arg == "--":
                return None
            if not arg.startswith("-") or arg == "-" or NEGATIVE_NUMBER.match(arg):
                if self._commands():
                    return None  # what follows the command is the command's own
                continue
            name = arg.split("=", 1)[0]
            if name not in known:
                return name
            if known[name].nargs != 0 and "=" not in arg:
                next(given, None)  # its value, whatever it looks like
        return None

    def _commands(self) -> list[str]:
        return [
            name
            for action in self._actions
            if isinstance(action, argparse._SubParsersAction)  # noqa: SLF001 (no public walk)
            for name in action.choices
        ]

    @staticmethod
    def _did_you_mean(word: str, choices: Any) -> str:
        close = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
        return f" (did you mean {close[0]}?)" if close else ""


NEGATIVE_NUMBER = re.compile(r"^-\d+$|^-\d*\.\d+$")


class _Version(argparse.Action):
    """`--version`: the installed package's version, looked up only when asked."""

    def __init__(self, option_strings: list[str], dest: str, **kwargs: Any) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, **kwargs)

    def __call__(self, parser: argparse.ArgumentParser, *_: Any) -> NoReturn:
        from importlib.metadata import PackageNotFoundError, version

        try:
            number = version("agentsvc")
        except PackageNotFoundError:  # run from a checkout that was never installed
            number = "(not installed)"
        print(f"agentsvc {number}")
        parser.exit()


def _port(text: str) -> int:
    try:
        port = int(text)
    except ValueError:
        port = -1
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"must be a whole number from 0 to 65535, got {text!r}")
    return port


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--config",
        metavar="FILE",
        help="TOML configuration file (default: $AGENTSVC_CONFIG, else none: built-in defaults)",
    )
    parser.add_argument(
        "--data-dir",
        dest="data_dir",
        metavar="DIR",
        help="data directory (default: [server] data_dir, $AGENTSVC_SERVER_DATA_DIR, ./data)",
    )


def _email(parser: argparse.ArgumentParser, what: str) -> None:
    parser.add_argument(
        "--email", required=True, metavar="E", help=f"{what} (required; compared ignoring case)"
    )


def _password_input(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--password-stdin",
        dest="password_stdin",
        action="store_true",
        help="read the password from the first line of stdin (for scripts); default: ask"
        f" twice on the terminal. At least {MIN_PASSWORD_LENGTH}, at most"
        f" {MAX_PASSWORD_LENGTH} characters",
    )


def _add(commands: Any, name: str, func: Callable[..., None], help: str) -> _Parser:
    parser = commands.add_parser(name, help=help, description=help)
    _common(parser)
    parser.set_defaults(func=func)
    return parser


def build_parser() -> argparse.ArgumentParser:
    """The `agentsvc` parser: every option of every command is listed by its --help."""
    parser = _Parser(prog="agentsvc", description=__doc__)
    parser.add_argument("--version", action=_Version, help="print the version and exit")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    # In the order `agentsvc --help` lists them.
    _serve_command(commands)
    _apikey_commands(commands)
    _user_commands(commands)
    _login_link_command(commands)
    _team_commands(commands)
    _database_commands(commands)
    add_eval_command(commands, lambda parent, name, help: _add(parent, name, cmd_eval_run, help))
    return parser


def _serve_command(commands: Any) -> None:
    """`serve`."""
    serve = _add(commands, "serve", cmd_serve, "run the service in the foreground")
    serve.add_argument(
        "--host",
        metavar="H",
        help="address to listen on (default: [server] host, $AGENTSVC_SERVER_HOST, 127.0.0.1;"
        " 0.0.0.0 or :: for every interface)",
    )
    serve.add_argument(
        "--port",
        type=_port,
        metavar="P",
        help="port to listen on, 0-65535, 0 picks a free one (default: [server] port,"
        " $AGENTSVC_SERVER_PORT, 8080). Without [server] public_url, links and the"
        " trusted origin are http://H:P",
    )


def _apikey_commands(commands: Any) -> None:
    """`apikey create`."""
    apikey = commands.add_parser("apikey", help="manage API keys: create").add_subparsers(
        dest="subcommand", required=True, metavar="SUBCOMMAND"
    )
    create_key = _add(
        apikey,
        "create",
        cmd_apikey_create,
        "create the user and their own team when missing, then an API key; prints the key"
        " alone on stdout (safe while a server runs)",
    )
    _email(create_key, "the user's e-mail address")
    create_key.add_argument(
        "--name", metavar="N", help="the user's name, when the user is created (default: none)"
    )
    create_key.add_argument(
        "--key-name",
        dest="key_name",
        metavar="L",
        help="a label for the key, up to 200 characters (default: cli)",
    )


def _user_commands(commands: Any) -> None:
    """`user create` and `user set-password`."""
    user = commands.add_parser("user", help="manage users: create, set-password").add_subparsers(
        dest="subcommand", required=True, metavar="SUBCOMMAND"
    )
    create_user = _add(
        user,
        "create",
        cmd_user_create,
        "create a user (with their own team) who signs in with a password",
    )
    _email(create_user, "the new user's e-mail address")
    create_user.add_argument("--name", metavar="N", help="the user's name (default: none)")
    create_user.add_argument(
        "--password",
        metavar="P",
        help="the password on the command line (visible to other local users; prefer the"
        " prompt or --password-stdin)",
    )
    _password_input(create_user)
    set_password = _add(
        user,
        "set-password",
        cmd_user_set_password,
        "set or replace the password of an existing user (safe while a server runs)",
    )
    _email(set_password, "the user's e-mail address")
    _password_input(set_password)


def _login_link_command(commands: Any) -> None:
    """`login-link`."""
    login_link = _add(
        commands,
        "login-link",
        cmd_login_link,
        "print a one-time dashboard sign-in link for an existing user (works once, within"
        " [auth] magic_link_ttl_seconds; safe while a server runs)",
    )
    _email(login_link, "the user's e-mail address")
    login_link.add_argument(
        "--callback",
        metavar="URL",
        default="/",
        help="where the link lands once signed in: a path, or an address on a trusted origin"
        " (default: /, the dashboard)",
    )


def _team_commands(commands: Any) -> None:
    """`team set-plan` and `team verify-domain`."""
    team = commands.add_parser("team", help="manage teams: set-plan, verify-domain").add_subparsers(
        dest="subcommand", required=True, metavar="SUBCOMMAND"
    )
    set_plan = _add(team, "set-plan", cmd_team_set_plan, "set the plan of the team a user owns")
    _email(set_plan, "the owner's e-mail address")
    set_plan.add_argument(
        "--plan",
        required=True,
        metavar="PLAN",
        help="a plan of the configuration (required): free, starter, growth, pro, or a"
        " [plans.NAME] table",
    )
    verify = _add(
        team,
        "verify-domain",
        cmd_team_verify_domain,
        "prove a team's single sign-on domain without DNS (for internal domains; safe while a"
        " server runs)",
    )
    verify.add_argument("--team", required=True, metavar="TEAM_ID", help="the team's id (required)")
    verify.add_argument("domain", metavar="DOMAIN", help="a domain the team claims")


def _database_commands(commands: Any) -> None:
    """`backup`, `migrate`, `restore` and `copy-data`."""
    backup = _add(
        commands,
        "backup",
        cmd_backup,
        "write a consistent copy of the database to PATH (safe while serving)",
    )
    backup.add_argument("path", metavar="PATH", help="a new file (it must not exist)")
    add_upgrade_commands(
        commands,
        lambda parent, name, help: _add(
            parent, name, cmd_migrate if name == "migrate" else cmd_restore, help
        ),
    )

    copy = _add(
        commands,
        "copy-data",
        cmd_copy_data,
        "copy this SQLite instance and its files into an empty PostgreSQL database (the files"
        " into it, or into S3) and check the counts",
    )
    copy.add_argument("--to", metavar="URL", required=True, help="postgresql://... (empty)")
    copy.add_argument(
        "--storage-to",
        metavar="URL",
        help="s3://bucket/prefix for the files ([storage]'s endpoint and credentials, or the"
        " AWS variables); default: into the PostgreSQL database",
    )


def main(argv: list[str] | None = None) -> int:
    """Entry point of the `agentsvc` command."""
    from agentsvc.observability import configure_logging

    configure_logging(log_level())
    args = build_parser().parse_args(argv)
    try:
        args.func(args)
    except UsageError as exc:
        print(f"agentsvc: {exc}", file=sys.stderr)
        return 2
    except (ConfigError, CommandError, UpgradeRefused, RestoreRefused, StorageError) as exc:
        print(f"agentsvc: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    return 0
