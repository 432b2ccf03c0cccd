"""The `agentsvc` command: serve, apikey create, user create and set-password, login-link,
team set-plan, backup, migrate."""

from __future__ import annotations

import argparse
import asyncio
import gc
import logging
import os
import signal
import socket
import sys
from collections.abc import Awaitable, Callable
from typing import Any, NoReturn

from aiohttp import web

from agentsvc.cli_input import (
    UsageError,
    checked,
    checked_plan,
    forget_running,
    read_password,
    record_running,
    running_public_url,
)
from agentsvc.config import (
    WILDCARD_HOSTS,
    ConfigError,
    Settings,
    listener_url,
    load_settings,
    log_level,
)
from agentsvc.db import Database, database_for
from agentsvc.errors import ValidationFailed
from agentsvc.passwords import MAX_PASSWORD_LENGTH, MIN_PASSWORD_LENGTH
from agentsvc.process_limits import OpenFileLimit, raise_open_file_limit

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


async def _serve(settings: Settings, open_files: OpenFileLimit | None = None) -> None:
    from agentsvc.api.server import make_runner
    from agentsvc.app import create_app

    sock = None
    if settings.server.port == 0:
        # The port must be known before the app is built: a derived public_url names it.
        sock = _bind_any_port(settings.server.host)
        port = sock.getsockname()[1]
        settings = settings.model_copy(update={"server": settings.server.listening_on(port)})
    app = create_app(settings)
    runner = make_runner(app, settings)
    await runner.setup()
    if sock is not None:
        site: web.BaseSite = web.SockSite(runner, sock)
    else:
        site = web.TCPSite(runner, settings.server.host, settings.server.port)
    try:
        await site.start()
    except OSError as exc:
        await runner.cleanup()
        where = f"{settings.server.host}:{settings.server.port}"
        raise CommandError(f"cannot listen on {where}: {exc}") from exc
    host, port = site._server.sockets[0].getsockname()[:2]  # noqa: SLF001
    _tune_collector()
    _log_addresses(settings, host, port)
    if open_files is not None:
        open_files.log()
    try:
        running = record_running(settings.server.data_dir, settings.server.public_url)
    except OSError as exc:  # only `login-link` needs it, and it falls back to the settings
        log.warning("cannot note the public URL in the data directory: %s", exc)
        running = None
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()
    log.info("agentsvc stopping")
    if running is not None:
        forget_running(running)
    await runner.cleanup()
    log.info("agentsvc stopped")


def _bind_any_port(host: str) -> socket.socket:
    """A listening socket on a free port of `host` (what `--port 0` asks for)."""
    try:
        family, _, _, _, address = socket.getaddrinfo(
            host or None, 0, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )[0]
        return socket.create_server(address, family=family)
    except OSError as exc:
        raise CommandError(f"cannot listen on {host}:0: {exc}") from exc


def _log_addresses(settings: Settings, host: str, port: int) -> None:
    """Name the listener and the public URL, and warn when they cannot both be right."""
    from agentsvc.services.team.trust import loopback_port_mismatch

    server = settings.server
    shown = f"[{host}]" if ":" in host else host
    log.info(
        "agentsvc listening on http://%s:%s (public URL %s; data: %s)",
        shown,
        port,
        server.public_url,
        settings.database_label,
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


async def _with_db(settings: Settings, fn: Callable[[Database], Awaitable[Any]]) -> Any:
    db = database_for(settings)
    await db.open()
    try:
        return await fn(db)
    finally:
        await db.close()


def cmd_serve(args: argparse.Namespace) -> None:
    settings = _settings(args)
    open_files = raise_open_file_limit()  # every connection and stream is a descriptor
    if settings.server.cpu_affinity and hasattr(os, "sched_setaffinity"):
        # Keeps the loop and aiosqlite's threads on one core (see PERFORMANCE.md).
        os.sched_setaffinity(0, settings.server.cpu_affinity)
    _run(lambda: _serve(settings, open_files), fast_loop=True)


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
    settings = _settings(args)
    password_hash = _new_password(args)

    async def set_password(db: Database) -> None:
        try:
            await accounts.set_password(db, email=email, password_hash=password_hash)
        except LookupError as exc:
            raise CommandError(f"{exc}; create it with `agentsvc user create`") from exc

    _run(lambda: _with_db(settings, set_password))
    print(f"{email}: password set")


def cmd_login_link(args: argparse.Namespace) -> None:
    from agentsvc.services.team import accounts, sessions

    options = checked(email=args.email, callback=args.callback)
    email = sessions.normalise_email(options.email or "")
    settings = _settings(args)
    running = running_public_url(settings.server.data_dir)
    if settings.server.public_url_derived and running:
        # The link must reach the server that runs now, on whatever port it was given.
        server = settings.server.model_copy(update={"public_url": running})
        settings = settings.model_copy(update={"server": server})

    async def create(db: Database) -> str:
        user = await accounts.user_by_email(db, email)
        if user is None:
            raise CommandError(
                f"no user with e-mail {email}; create one with `agentsvc apikey create`"
                " or `agentsvc user create`"
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

    async def set_plan(db: Database) -> None:
        try:
            await accounts.set_team_plan(db, email=email, plan=plan)
        except LookupError as exc:
            raise CommandError(str(exc)) from exc

    _run(lambda: _with_db(settings, set_plan))
    print(f"{email}: plan {plan}")


def cmd_backup(args: argparse.Namespace) -> None:
    from pathlib import Path

    from agentsvc.db.sqlite import BackupFailed, copy_database

    settings = _settings(args)
    if settings.database.url:
        _pg_dump(settings.database.url, Path(args.path))
        return
    source_path = settings.db_path
    if not source_path.is_file():
        raise CommandError(f"no database at {source_path}")
    target = Path(args.path)
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        # The copy holds every team's data: created 0600 (whatever the umask), never over
        # an existing file.
        os.close(os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    except FileExistsError:
        raise CommandError(f"{target} already exists; choose a new file") from None
    os.chmod(target, 0o600)
    try:
        copy_database(source_path, target)
    except BackupFailed as exc:
        raise CommandError(str(exc)) from None
    print(target)


def _pg_dump(url: str, target: Any) -> None:
    """PostgreSQL's backup is pg_dump's (custom format; restore with pg_restore)."""
    import shutil
    import subprocess

    from agentsvc.db.copy import redacted

    pg_dump = shutil.which("pg_dump")
    if pg_dump is None:
        raise CommandError(
            "pg_dump is not installed; install PostgreSQL's client tools (Debian:"
            " postgresql-client) or run pg_dump --format=custom where it is"
        )
    if target.exists():
        raise CommandError(f"{target} already exists; choose a new file")
    target.parent.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(  # noqa: S603 - our own argument list
        [pg_dump, "--format=custom", "--no-owner", f"--file={target}", f"--dbname={url}"],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        target.unlink(missing_ok=True)
        detail = done.stderr.strip().replace(url, redacted(url))
        raise CommandError(f"pg_dump failed: {detail}")
    os.chmod(target, 0o600)
    print(target)


def cmd_migrate(args: argparse.Namespace) -> None:
    from agentsvc.db.schema import schema_version

    settings = _settings(args)
    _run(lambda: _with_db(settings, lambda db: asyncio.sleep(0)))
    print(f"{settings.database_label}: schema version {schema_version()}")


def cmd_copy_data(args: argparse.Namespace) -> None:
    from agentsvc.db.copy import CopyFailed, copy_data, redacted
    from agentsvc.db.postgres import is_postgres_url

    settings = _settings(args)
    if settings.database.url:
        raise UsageError("copy-data copies the SQLite database: unset [database] url first")
    if not is_postgres_url(args.to):
        raise UsageError("--to: must be a postgresql:// URL")

    if not settings.db_path.is_file():
        raise CommandError(f"no database at {settings.db_path}")

    def report(table: str, rows: int) -> None:
        print(f"{table}: {rows} rows", flush=True)

    try:
        copied = _run(lambda: copy_data(settings.db_path, args.to, report))
    except CopyFailed as exc:
        raise CommandError(str(exc)) from None
    print(
        f"copied {sum(copied.values())} rows of {settings.db_path} into {redacted(args.to)};"
        " every table's count matches"
    )


class _Parser(argparse.ArgumentParser):
    """argparse, with usage errors as one line on stderr (exit status 2)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        # `--password` must not be taken for `--password-stdin`, nor any prefix for an option.
        super().__init__(*args, **{**kwargs, "allow_abbrev": False})

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"agentsvc: {self.prog.removeprefix('agentsvc ')}: {message} (see --help)\n")


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
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

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

    apikey = commands.add_parser("apikey", help="manage API keys").add_subparsers(
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

    user = commands.add_parser("user", help="manage users").add_subparsers(
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

    team = commands.add_parser("team", help="manage teams").add_subparsers(
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

    backup = _add(
        commands,
        "backup",
        cmd_backup,
        "write a consistent copy of the database to PATH (safe while serving)",
    )
    backup.add_argument("path", metavar="PATH", help="a new file (it must not exist)")

    _add(commands, "migrate", cmd_migrate, "create or upgrade the database schema")

    copy = _add(
        commands,
        "copy-data",
        cmd_copy_data,
        "copy this SQLite instance into an empty PostgreSQL database and check the counts",
    )
    copy.add_argument("--to", metavar="URL", required=True, help="postgresql://... (empty)")
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point of the `agentsvc` command."""
    logging.basicConfig(
        level=log_level(),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    args = build_parser().parse_args(argv)
    try:
        args.func(args)
    except UsageError as exc:
        print(f"agentsvc: {exc}", file=sys.stderr)
        return 2
    except (ConfigError, CommandError) as exc:
        print(f"agentsvc: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    return 0
