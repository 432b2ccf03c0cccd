"""The `agentsvc` command: serve, apikey create, user create, team set-plan, backup, migrate."""

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
from typing import Any

from aiohttp import web

from agentsvc.config import ConfigError, Settings, load_settings
from agentsvc.db import Database

log = logging.getLogger("agentsvc")


class CommandError(Exception):
    """A failure reported as one line on stderr with a non-zero exit."""


def _settings(args: argparse.Namespace) -> Settings:
    server: dict[str, Any] = {}
    for name in ("host", "port", "data_dir"):
        value = getattr(args, name, None)
        if value is not None:
            server[name] = value
    return load_settings(args.config, overrides={"server": server} if server else None)


MAX_REQUEST_LINE_BYTES = 32 * 1024


async def _serve(settings: Settings) -> None:
    from agentsvc.app import create_app
    from agentsvc.observability import JsonAccessLogger, access_log

    sock = None
    if settings.server.port == 0:
        # The port must be known before the app is built: a derived public_url names it.
        sock = _bind_any_port(settings.server.host)
        port = sock.getsockname()[1]
        settings = settings.model_copy(update={"server": settings.server.listening_on(port)})
    app = create_app(settings)
    runner = web.AppRunner(
        app,
        access_log=access_log if settings.server.access_log else None,
        access_log_class=JsonAccessLogger,
        # aiohttp's 8190-byte default refuses, with a plain-text 400, a request line the
        # API's own bounds allow: query strings up to 2,448 characters (an OAuth callback)
        # percent-encode to up to 12 bytes each.
        max_line_size=MAX_REQUEST_LINE_BYTES,
        max_field_size=MAX_REQUEST_LINE_BYTES,
    )
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
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()
    log.info("agentsvc stopping")
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
    from agentsvc.services.trust import loopback_port_mismatch

    server = settings.server
    shown = f"[{host}]" if ":" in host else host
    log.info(
        "agentsvc listening on http://%s:%s (public URL %s; data: %s)",
        shown,
        port,
        server.public_url,
        settings.db_path,
    )
    if server.public_url_derived and server.host in ("", "0.0.0.0", "::"):  # noqa: S104
        log.info(
            "public URL %s is derived from the listener on every interface; set [server]"
            " public_url (AGENTSVC_SERVER_PUBLIC_URL) to the address others browse to",
            server.public_url,
        )
    other = loopback_port_mismatch(server.public_url, port)
    if other is not None and not server.public_url_derived:
        log.warning(
            "[server] public_url %s is on port %s but agentsvc listens on port %s: a"
            " browser at http://%s:%s is refused (403, untrusted origin) and e-mailed links"
            " lead to port %s; set public_url to the address you browse to, or leave it"
            " empty to derive it from the listener",
            server.public_url,
            other,
            port,
            shown if host not in ("0.0.0.0", "::") else "127.0.0.1",  # noqa: S104
            port,
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
    db = Database(settings.db_path)
    await db.open()
    try:
        return await fn(db)
    finally:
        await db.close()


def cmd_serve(args: argparse.Namespace) -> None:
    settings = _settings(args)
    if settings.server.cpu_affinity and hasattr(os, "sched_setaffinity"):
        # Keeps the loop and aiosqlite's threads on one core (see PERFORMANCE.md).
        os.sched_setaffinity(0, settings.server.cpu_affinity)
    _run(lambda: _serve(settings), fast_loop=True)


def cmd_apikey_create(args: argparse.Namespace) -> None:
    from agentsvc.services import accounts

    settings = _settings(args)

    async def create(db: Database) -> str:
        user, team = await accounts.ensure_user_with_team(
            db, email=args.email, name=args.name or "", plan=settings.plans.default
        )
        async with db.write() as conn:
            created = await accounts.create_api_key(
                conn, team_id=team.id, user_id=user.id, name=args.key_name or "cli"
            )
        return created.key

    print(_run(lambda: _with_db(settings, create)))


def cmd_user_create(args: argparse.Namespace) -> None:
    from agentsvc.passwords import MIN_PASSWORD_LENGTH, hash_password
    from agentsvc.services import accounts
    from agentsvc.store import accounts as accounts_store

    settings = _settings(args)
    if len(args.password) < MIN_PASSWORD_LENGTH:
        raise CommandError(f"password must be at least {MIN_PASSWORD_LENGTH} characters")
    password_hash = hash_password(args.password)

    async def create(db: Database) -> str:
        async with db.write() as conn:
            if await accounts_store.get_user_by_email(conn, args.email):
                raise CommandError(f"a user with e-mail {args.email} already exists")
            user, _ = await accounts.create_user_with_team(
                conn,
                email=args.email,
                name=args.name or "",
                password_hash=password_hash,
                plan=settings.plans.default,
            )
        return user.id

    print(_run(lambda: _with_db(settings, create)))


def cmd_team_set_plan(args: argparse.Namespace) -> None:
    from agentsvc.services import accounts

    settings = _settings(args)
    if args.plan not in settings.plans.plans:
        raise CommandError(
            f"unknown plan {args.plan!r}; plans: {', '.join(sorted(settings.plans.plans))}"
        )

    async def set_plan(db: Database) -> None:
        try:
            await accounts.set_team_plan(db, email=args.email, plan=args.plan)
        except LookupError as exc:
            raise CommandError(str(exc)) from exc

    _run(lambda: _with_db(settings, set_plan))
    print(f"{args.email}: plan {args.plan}")


def cmd_backup(args: argparse.Namespace) -> None:
    import sqlite3
    from pathlib import Path

    settings = _settings(args)
    source_path = settings.db_path
    if not source_path.is_file():
        raise CommandError(f"no database at {source_path}")
    target = Path(args.path)
    if target.exists():
        raise CommandError(f"{target} already exists; choose a new file")
    target.parent.mkdir(parents=True, exist_ok=True)
    # SQLite's online backup copies a consistent snapshot while the server keeps writing.
    source = sqlite3.connect(f"file:{source_path}?mode=ro", uri=True)
    dest = sqlite3.connect(target)
    try:
        with dest:
            source.backup(dest, pages=1024)
        check = dest.execute("PRAGMA integrity_check").fetchone()[0]
        if check != "ok":
            raise CommandError(f"backup failed its integrity check: {check}")
    finally:
        dest.close()
        source.close()
    print(target)


def cmd_migrate(args: argparse.Namespace) -> None:
    from agentsvc.db import schema_version

    settings = _settings(args)
    _run(lambda: _with_db(settings, lambda db: asyncio.sleep(0)))
    print(f"{settings.db_path}: schema version {schema_version()}")


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", help="TOML configuration file (or AGENTSVC_CONFIG)")
    parser.add_argument("--data-dir", dest="data_dir", help="data directory (default ./data)")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="agentsvc", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)

    serve = commands.add_parser("serve", help="run the service in the foreground")
    _common(serve)
    serve.add_argument("--host")
    serve.add_argument("--port", type=int)
    serve.set_defaults(func=cmd_serve)

    apikey = commands.add_parser("apikey", help="manage API keys").add_subparsers(
        dest="subcommand", required=True
    )
    create_key = apikey.add_parser("create", help="create a key; prints it alone on stdout")
    _common(create_key)
    create_key.add_argument("--email", required=True)
    create_key.add_argument("--name", help="the user's name when the user is created")
    create_key.add_argument("--key-name", dest="key_name", help="a label for the key")
    create_key.set_defaults(func=cmd_apikey_create)

    user = commands.add_parser("user", help="manage users").add_subparsers(
        dest="subcommand", required=True
    )
    create_user = user.add_parser("create", help="create a user with a password")
    _common(create_user)
    create_user.add_argument("--email", required=True)
    create_user.add_argument("--password", required=True)
    create_user.add_argument("--name")
    create_user.set_defaults(func=cmd_user_create)

    team = commands.add_parser("team", help="manage teams").add_subparsers(
        dest="subcommand", required=True
    )
    set_plan = team.add_parser("set-plan", help="set the plan of the team a user owns")
    _common(set_plan)
    set_plan.add_argument("--email", required=True)
    set_plan.add_argument("--plan", required=True)
    set_plan.set_defaults(func=cmd_team_set_plan)

    backup = commands.add_parser(
        "backup", help="write a consistent copy of the database to PATH (safe while serving)"
    )
    _common(backup)
    backup.add_argument("path")
    backup.set_defaults(func=cmd_backup)

    migrate = commands.add_parser("migrate", help="create or upgrade the database schema")
    _common(migrate)
    migrate.set_defaults(func=cmd_migrate)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point of the `agentsvc` command."""
    logging.basicConfig(
        level=os.environ.get("AGENTSVC_LOG_LEVEL", "INFO"),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    args = build_parser().parse_args(argv)
    try:
        args.func(args)
    except (ConfigError, CommandError) as exc:
        print(f"agentsvc: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    return 0
