"""The `agentsvc` command: serve in an empty directory, signals, and the admin commands."""

from __future__ import annotations

import argparse
import asyncio
import importlib.metadata
import os
import re
import signal
import socket
import subprocess
import time
from pathlib import Path
from urllib.parse import urlsplit

import aiohttp
import pytest

from agentsvc.cli import build_parser
from tests.support import pg
from tests.support.cli import AGENTSVC, Server, call, free_port, run, run_process
from tests.support.fakes.mcp_server import FakeMcpServer


def test_serve_with_no_configuration(tmp_path):
    server = Server(tmp_path)
    try:
        assert server.url.startswith("http://127.0.0.1:")
        status, _, body = server.get("/healthz")
        assert (status, body) == (200, {"status": "ok"})
        assert (tmp_path / "data" / "agentsvc.db").is_file()
        # The longest query the API accepts (an OAuth callback, percent-encoded 4-byte
        # characters) fits the request line; it is answered by the API, in its envelope.
        wide = "%F0%9D%95%AC"
        query = f"code={wide * 2048}&state={wide * 200}"
        status, _, body = server.get(f"/api/v1/auth/callback/github?{query}")
        assert status < 500 and set(body) == {"data", "error"}, body
    finally:
        code = server.stop(signal.SIGINT)
    assert code == 0
    assert "stopped" in "".join(server.log)


def test_admin_commands_against_a_running_server(tmp_path):
    server = Server(tmp_path)
    try:
        result = run(["apikey", "create", "--email", "ops@example.com"], tmp_path)
        assert result.returncode == 0, result.stderr
        key = result.stdout.strip()
        assert result.stdout == key + "\n" and key.startswith("asvc_")
        status, headers, body = server.get("/api/v1/agents", key)
        assert status == 200 and body == {"data": [], "error": None}
        assert headers["X-RateLimit-Limit"] == "1000"

        result = run(["team", "set-plan", "--email", "ops@example.com", "--plan", "free"], tmp_path)
        assert result.returncode == 0, result.stderr
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            if server.get("/api/v1/agents", key)[1]["X-RateLimit-Limit"] == "20":
                break
            time.sleep(0.2)
        assert server.get("/api/v1/agents", key)[1]["X-RateLimit-Limit"] == "20"

        # A second key for the same user acts for the same team.
        second = run(["apikey", "create", "--email", "ops@example.com"], tmp_path).stdout.strip()
        assert second != key and server.get("/api/v1/agents", second)[0] == 200
    finally:
        assert server.stop() == 0


def test_user_create_and_failures(tmp_path):
    ok = run(
        ["user", "create", "--email", "a@example.com", "--password", "correct horse"], tmp_path
    )
    assert ok.returncode == 0, ok.stderr
    assert ok.stdout.strip().startswith("usr_")
    for args in (
        ["user", "create", "--email", "a@example.com", "--password", "correct horse"],
        ["user", "create", "--email", "b@example.com", "--password", "short"],
        ["team", "set-plan", "--email", "nobody@example.com", "--plan", "free"],
        ["team", "set-plan", "--email", "a@example.com", "--plan", "platinum"],
    ):
        result = run(args, tmp_path)
        assert result.returncode != 0
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("agentsvc: "), result.stderr


@pytest.mark.parametrize(
    ("env", "named"),
    [
        ({"AGENTSVC_SERVER_PORT": "nope"}, "server.port"),
        ({"AGENTSVC_SERVER_PROT": "1"}, "server.prot: is not a known field"),
    ],
)
def test_bad_configuration_stops_startup(tmp_path, env, named):
    result = run(["serve"], tmp_path, **env)
    assert result.returncode == 1
    assert named in result.stderr
    assert not (tmp_path / "data").exists()


def without_write_clock(lines: list[str]) -> list[str]:
    """The lines but the write clock's warning: a write held past `slow_write_ms` while the
    process waited for a processor busy with other tests measures the machine, not the
    command (tests/test_write_holds.py tests that warning)."""
    return [line for line in lines if "agentsvc.db.holds" not in line]


def startup_warnings(log: list[str]) -> list[str]:
    """The warnings of a server's start, but the write clock's."""
    lines = without_write_clock("".join(log).splitlines())
    return [line for line in lines if " WARNING " in line]


def cookie_of(headers: dict) -> str:
    return headers["Set-Cookie"].split(";", 1)[0]


@pytest.mark.parametrize("how", ["--port", "AGENTSVC_SERVER_PORT", "port 0"])
def test_serve_on_any_port_trusts_and_links_to_that_port(tmp_path, how):
    port = free_port()
    if how == "--port":
        server = Server(tmp_path, port=str(port))
    elif how == "AGENTSVC_SERVER_PORT":
        server = Server(tmp_path, port=None, env={"AGENTSVC_SERVER_PORT": str(port)})
    else:
        server = Server(tmp_path)
    if how != "port 0":
        assert server.url == f"http://127.0.0.1:{port}"
    try:
        origin = server.url
        assert f"(public URL {origin};" in "".join(server.log)
        assert startup_warnings(server.log) == []
        # First-run setup from a browser on that address is not refused as untrusted.
        status, headers, body = call(
            origin + "/api/v1/setup",
            "POST",
            {"email": "owner@example.com", "password": "correct horse"},
            Origin=origin,
        )
        assert status == 201, body
        # The printed sign-in link points at the running server, works once, and its
        # session may change state from that origin.
        result = run(["login-link", "--email", "owner@example.com"], tmp_path)
        assert result.returncode == 0, result.stderr
        link = result.stdout.strip()
        assert link.startswith(origin + "/api/v1/auth/magic-link/verify?token="), link
        status, headers, _ = call(link)
        assert (status, headers["Location"]) == (303, "/")  # a path: same origin
        status, _, body = call(
            origin + "/api/v1/agents",
            "POST",
            {"name": "Support"},
            Origin=origin,
            Cookie=cookie_of(headers),
        )
        assert status == 201, body
        assert call(link)[0] == 401  # once only
    finally:
        assert server.stop() == 0


def test_loopback_public_url_on_another_port_is_warned(tmp_path):
    server = Server(tmp_path, env={"AGENTSVC_SERVER_PUBLIC_URL": "http://localhost:8080"})
    try:
        assert "(public URL http://localhost:8080;" in "".join(server.log)
        for _ in range(10):  # the warning follows the start-up line
            server.log.append(server.proc.stderr.readline())
            if "WARNING" in server.log[-1]:
                break
        warning = next(line for line in server.log if "WARNING" in line)
        assert "public_url http://localhost:8080 is on port 8080" in warning
        assert f"listens on port {urlsplit(server.url).port}" in warning
    finally:
        server.stop()


def test_public_url_of_a_proxy_is_not_warned(tmp_path):
    server = Server(tmp_path, env={"AGENTSVC_SERVER_PUBLIC_URL": "https://chat.example.com"})
    try:
        assert startup_warnings(server.log) == []
    finally:
        server.stop()


def test_owner_signs_in_after_apikey_create(tmp_path):
    server = Server(tmp_path)
    try:
        assert run(["apikey", "create", "--email", "Owner@Example.com"], tmp_path).returncode == 0
        result = run(
            ["user", "set-password", "--email", "owner@example.com", "--password-stdin"],
            tmp_path,
            stdin="correct horse battery\n",
        )
        assert result.returncode == 0, result.stderr
        assert "correct horse" not in result.stdout + result.stderr
        status, headers, body = call(
            server.url + "/api/v1/auth/sign-in/email",
            "POST",
            {"email": "owner@example.com", "password": "correct horse battery"},
            Origin=server.url,
        )
        assert status == 200, body
        status, _, body = call(server.url + "/api/v1/auth/session", Cookie=cookie_of(headers))
        assert body["data"]["team"]["role"] == "owner"
        # Replacing the password: the old one stops working.
        run(
            ["user", "set-password", "--email", "owner@example.com", "--password-stdin"],
            tmp_path,
            stdin="another long password",
        )
        status, _, _ = call(
            server.url + "/api/v1/auth/sign-in/email",
            "POST",
            {"email": "owner@example.com", "password": "correct horse battery"},
            Origin=server.url,
        )
        assert status == 401
    finally:
        server.stop()


def one_line_usage_error(result: subprocess.CompletedProcess) -> str:
    assert result.returncode == 2, (result.returncode, result.stdout, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("agentsvc: "), result.stderr
    assert result.stdout == ""
    return lines[0].removeprefix("agentsvc: ")


def test_cli_refuses_what_the_api_refuses_with_its_message(tmp_path):
    server = Server(tmp_path)
    try:
        key = run(["apikey", "create", "--email", "owner@example.com"], tmp_path).stdout.strip()
        status, _, body = call(
            server.url + "/api/v1/team/invite",
            "POST",
            {"email": "not an email"},
            Authorization=f"Bearer {key}",
        )
        assert status == 400
        api_message = body["error"]["message"]
        assert api_message.startswith("email: ")
        cli_message = one_line_usage_error(
            run(["apikey", "create", "--email", "not an email"], tmp_path)
        )
        assert cli_message == "--" + api_message
    finally:
        server.stop()
    assert not run(["login-link", "--email", "not an email"], tmp_path).stdout


@pytest.mark.parametrize(
    ("args", "stdin", "named"),
    [
        (["apikey", "create", "--email", "a@b@c"], None, "--email"),
        (
            ["apikey", "create", "--email", "a@example.com", "--key-name", "k" * 201],
            None,
            "--key-name",
        ),
        (["apikey", "create", "--email", "a@example.com", "--name", "a\x1bb"], None, "--name"),
        (["user", "create", "--email", "a@example.com", "--password", "short"], None, "--password"),
        (
            ["user", "create", "--email", "a@example.com", "--password-stdin"],
            "x" * 1025,
            "--password",
        ),
        (
            [
                "user",
                "create",
                "--email",
                "a@example.com",
                "--password",
                "long enough",
                "--password-stdin",
            ],
            "long enough",
            "not both",
        ),
        (["user", "set-password", "--email", "a@example.com"], None, "--password-stdin"),
        (
            ["user", "set-password", "--email", "a@example.com", "--password-stdin"],
            "",
            "--password",
        ),
        (
            ["user", "set-password", "--email", "a@example.com", "--password", "x" * 8],
            None,
            "--password",
        ),
        (
            ["login-link", "--email", "a@example.com", "--callback", "//evil.test"],
            None,
            "--callback",
        ),
        (
            ["login-link", "--email", "a@example.com", "--callback", "https://evil.test/"],
            None,
            "--callback",
        ),
        (["team", "set-plan", "--email", "a@example.com", "--plan", "platinum"], None, "--plan"),
        (["team", "set-plan", "--email", "a@example.com"], None, "--plan"),
        (["serve", "--port", "70000"], None, "--port"),
        (["serve", "--port", "eighty"], None, "--port"),
    ],
)
def test_bad_option_is_a_usage_error_naming_it(tmp_path, args, stdin, named):
    run(["user", "create", "--email", "a@example.com", "--password-stdin"], tmp_path, "long enough")
    message = one_line_usage_error(run(args, tmp_path, stdin))
    assert named in message
    assert "Traceback" not in message


def test_failures_that_are_not_usage_errors_exit_1(tmp_path):
    assert run(["migrate"], tmp_path).returncode == 0
    for args in (
        ["login-link", "--email", "nobody@example.com"],
        ["user", "set-password", "--email", "nobody@example.com", "--password-stdin"],
        ["team", "set-plan", "--email", "nobody@example.com", "--plan", "free"],
    ):
        result = run(args, tmp_path, "long enough")
        assert result.returncode == 1, result.stderr
        # One line (on CI, a loaded machine once added the write clock's warning to it).
        (error,) = without_write_clock(result.stderr.splitlines())
        assert "nobody@example.com" in error
        assert f" in {tmp_path / 'data'}" in error  # where it looked, absolute


def _commands(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()):
    for action in parser._actions:  # noqa: SLF001 (argparse has no public walk)
        if isinstance(action, argparse._SubParsersAction):  # noqa: SLF001
            for name, sub in action.choices.items():
                yield from _commands(sub, (*path, name))
            return
    yield path, parser


def test_every_option_of_every_command_is_documented():
    commands = dict(_commands(build_parser()))
    assert {" ".join(p) for p in commands} >= {
        "serve",
        "apikey create",
        "user create",
        "user set-password",
        "login-link",
        "team set-plan",
        "backup",
        "migrate",
        "copy-data",
    }
    for path, parser in commands.items():
        text = parser.format_help()
        for action in parser._actions:  # noqa: SLF001
            assert action.help, (path, action.dest)
            for option in action.option_strings:
                assert option in text, (path, option)
            if action.choices:
                assert all(str(c) in text for c in action.choices), (path, action.dest)
            if action.default not in (None, False, argparse.SUPPRESS):
                assert f"default: {action.default}" in action.help, (path, action.dest)


def _on_a_terminal(args: list[str], cwd: Path, answers: list[str]) -> tuple[int, str]:
    """Run a command with a pseudo-terminal as stdin and type each answer after its prompt
    (getpass flushes what was typed before it asks); return the exit status and stderr."""
    import pty
    import select

    main_fd, terminal_fd = pty.openpty()
    proc = subprocess.Popen(
        [*AGENTSVC, *args],
        cwd=cwd,
        stdin=terminal_fd,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    err = b""

    def asked() -> int:  # the prompts: "New password: ", "The same password again: "
        return err.count(b"password: ") + err.count(b"again: ")

    try:
        for answer in answers:
            prompts = asked()
            deadline = time.monotonic() + 30
            while asked() == prompts and time.monotonic() < deadline:
                if select.select([proc.stderr], [], [], 1)[0]:
                    chunk = os.read(proc.stderr.fileno(), 4096)
                    if not chunk:
                        break
                    err += chunk
            os.write(main_fd, answer.encode() + b"\n")
        err += proc.stderr.read()
        proc.wait(timeout=30)
    finally:
        os.close(terminal_fd)
        os.close(main_fd)
        if proc.poll() is None:
            proc.kill()
    return proc.returncode, err.decode()


def test_set_password_asks_twice_on_a_terminal(tmp_path):
    assert run(["apikey", "create", "--email", "owner@example.com"], tmp_path).returncode == 0
    args = ["user", "set-password", "--email", "owner@example.com"]
    code, err = _on_a_terminal(args, tmp_path, ["correct horse", "another horse"])
    assert code == 2 and "the two passwords differ" in err
    code, err = _on_a_terminal(args, tmp_path, ["correct horse", "correct horse"])
    assert code == 0, err
    assert "correct horse" not in err  # not echoed
    code, err = _on_a_terminal(args, tmp_path, ["short", "short"])
    assert code == 2 and "--password: must be a string of 8 to 1024 characters" in err


# ── issue 29, item 10: the first hour ─────────────────────────────────────────────────


def test_a_second_serve_on_the_same_data_directory_refuses_to_start(tmp_path):
    first = Server(tmp_path)
    port = str(urlsplit(first.url).port)
    try:
        for args in (["--port", port], ["--port", "0"]):  # the same command twice, or not
            result = run(["serve", *args], tmp_path)
            assert result.returncode == 1
            assert result.stderr == (
                f"agentsvc: another agentsvc (pid {first.proc.pid}) serves this data directory"
                f" ({tmp_path / 'data'}); stop it first, or give this one another --data-dir\n"
            )
        # The first serves on, and its note is still the one `login-link` reads.
        assert first.get("/healthz")[0] == 200
        note = (tmp_path / "data" / "server-url").read_text()
        assert note == f"{first.proc.pid} {first.url}\n"
        assert Server(tmp_path, "--data-dir", "other").stop() == 0  # another instance
    finally:
        first.proc.kill()  # however it ends, the lock goes with the process
        first.proc.communicate(timeout=30)
    assert Server(tmp_path).stop() == 0


@pg.postgres_only
def test_with_postgresql_processes_may_share_a_data_directory(tmp_path):
    """The documented cluster on one machine: the lock is SQLite's alone."""
    env = {
        "AGENTSVC_DATABASE_URL": pg.fresh_database_url(),
        "AGENTSVC_SERVER_SECRET_KEY": "the same for every process",
    }
    first = Server(tmp_path, env=env)
    try:
        second = Server(tmp_path, env=env)
        assert second.get("/healthz")[0] == 200
        assert second.stop() == 0
        assert first.get("/healthz")[0] == 200
    finally:
        assert first.stop() == 0


def test_a_server_never_removes_a_server_url_it_did_not_write(tmp_path):
    note = tmp_path / "data" / "server-url"
    server = Server(tmp_path)
    assert note.read_text() == f"{server.proc.pid} {server.url}\n"
    assert server.stop() == 0
    assert not note.exists()  # its own note goes with it
    for other in ("4242 http://127.0.0.1:9\n", None):
        server = Server(tmp_path)
        # Another process (a PostgreSQL sibling sharing the directory) replaced the note,
        # even with the very same text: it is not this server's to remove.
        text = other or note.read_text()
        replacement = tmp_path / "data" / "replacement"
        replacement.write_text(text)
        os.replace(replacement, note)
        assert server.stop() == 0
        assert note.read_text() == text


def test_port_already_in_use_is_one_line(tmp_path):
    open_dir = tmp_path / "open"  # an existing data directory others may list: still one line
    open_dir.mkdir()
    os.chmod(open_dir, 0o755)  # noqa: S103
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        for data_dir in ("data", "open"):
            result = run(["serve", "--port", str(port), "--data-dir", data_dir], tmp_path)
            assert result.returncode == 1
            assert result.stderr == (
                f"agentsvc: port {port} on 127.0.0.1 is in use (another program listens"
                " there); choose another with --port\n"
            )
    assert not (tmp_path / "data").exists()  # nothing started, nothing created


def test_lookups_never_create_a_database_and_name_the_absolute_data_directory(tmp_path):
    home, elsewhere = tmp_path / "home", tmp_path / "elsewhere"
    home.mkdir()
    elsewhere.mkdir()
    server = Server(home)
    try:
        # The start-up line names the data where the server runs, absolute.
        assert f"data: {home / 'data' / 'agentsvc.db'})" in "".join(server.log)
        assert run(["apikey", "create", "--email", "owner@example.com"], home).returncode == 0
        for args in (
            ["login-link", "--email", "owner@example.com"],
            ["user", "set-password", "--email", "owner@example.com", "--password-stdin"],
            ["team", "set-plan", "--email", "owner@example.com", "--plan", "free"],
            ["backup", "copy.db"],
            ["copy-data", "--to", "postgresql://127.0.0.1:1/none"],
        ):
            result = run(args, elsewhere, "long enough")
            assert result.returncode == 1, result.stderr
            assert result.stderr == (
                f"agentsvc: no database in {elsewhere / 'data'} (start `agentsvc serve` on"
                " this data directory first, or pass the server's --data-dir)\n"
            )
        assert list(elsewhere.iterdir()) == []
        # Pointed at the server's data directory, relative to where it runs, it works.
        result = run(
            ["login-link", "--email", "owner@example.com", "--data-dir", "../home/data"],
            elsewhere,
        )
        assert result.returncode == 0, result.stderr
        assert result.stdout.startswith(server.url + "/api/v1/auth/magic-link/verify?")
    finally:
        server.stop()


def test_version_prints_the_installed_version(tmp_path):
    result = run_process(["--version"], tmp_path)  # the installed command, in a process
    assert result.returncode == 0, result.stderr
    assert result.stdout == f"agentsvc {importlib.metadata.version('agentsvc')}\n"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["login-link", "--emial", "a@example.com"],
            "login-link: unknown option --emial (did you mean --email?)",
        ),
        (["serve", "--prot", "8081"], "serve: unknown option --prot (did you mean --port?)"),
        (["--verison"], "unknown option --verison (did you mean --version?)"),
        (["login-lnik"], "unknown command 'login-lnik' (did you mean login-link?)"),
        (
            ["user", "set-pasword", "--email", "a@example.com"],
            "user: unknown command 'set-pasword' (did you mean set-password?)",
        ),
        (
            [],
            "a command is required: serve, apikey, user, login-link, team, backup, migrate,"
            " restore, copy-data, eval (see --help)",
        ),
        (["migrate", "now"], "migrate: unexpected argument 'now' (see --help)"),
        (["backup", "a.db", "--fast"], "backup: unknown option --fast (see --help)"),
        # An option's value that looks like an option is not named as one (nor repeated).
        (
            ["user", "create", "--email", "a@example.com", "--password", "-secret"],
            "user create: argument --password: expected one argument (see --help)",
        ),
    ],
)
def test_cli_usage_errors_have_one_prefix_and_suggest_the_close_option(tmp_path, args, message):
    assert one_line_usage_error(run(args, tmp_path)) == message


def test_top_level_help_lists_every_command():
    parser = build_parser()
    text = parser.format_help()
    for path in dict(_commands(parser)):
        assert all(word in text for word in path), path
    assert "--version" in text


def _count_lines(log: str, text: str) -> int:
    return sum(text in line for line in log.splitlines())


async def test_logs_only_our_own_lines_at_info(tmp_path):
    """A chat calling an MCP tool, an MCP client asking the agent, scheduler ticks: every
    INFO line is agentsvc's own, and the open data directory is warned about once."""
    (tmp_path / "data").mkdir()
    os.chmod(tmp_path / "data", 0o755)  # noqa: S103 (the warning under test)
    config = tmp_path / "agentsvc.toml"
    config.write_text("[outbound]\nallow_private = true\n[auth]\ninvitation_sweep_seconds = 0.2\n")
    fake = await FakeMcpServer().start()
    server = Server(tmp_path, "--config", str(config))
    try:
        key = run(["apikey", "create", "--email", "owner@example.com"], tmp_path).stdout.strip()
        auth = {"Authorization": f"Bearer {key}"}
        async with aiohttp.ClientSession(server.url, headers=auth) as http:
            async with http.post("/api/v1/agents", json={"name": "Shop"}) as resp:
                agent = (await resp.json())["data"]["id"]
            body = {"agentId": agent, "name": "shop", "description": "The shop"}
            body.update(executionType="mcp", mcpUrl=fake.url)
            async with http.post("/api/v1/tools", json=body) as resp:
                assert resp.status == 201, await resp.text()
            question = '/tool shop__get_order {"id": "7"}'
            chat = {"agentId": agent, "messages": [{"role": "user", "content": question}]}
            async with http.post("/api/v1/chat", json=chat) as resp:
                assert "Order 7" in await resp.text()
            ask = {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "tools/call",
                "params": {"name": "ask", "arguments": {"question": "Hello?"}},
            }
            mcp_headers = {"Accept": "application/json, text/event-stream"}
            async with http.post(f"/api/v1/mcp/{agent}", json=ask, headers=mcp_headers) as resp:
                assert resp.status == 200, await resp.text()
        await asyncio.sleep(1)  # the invitation sweep runs five times
    finally:
        server.stop()
        await fake.close()
    log = "".join(server.log)
    info = [line for line in log.splitlines() if " INFO " in line]
    assert info, log
    assert all(re.match(r"^\S+ \S+ INFO agentsvc(\.\S+)?: ", line) for line in info), log
    assert _count_lines(log, "has mode 755: other users may list it") == 1, log
    assert _count_lines(log, "agentsvc listening on") == 1
