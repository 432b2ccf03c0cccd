"""The `agentsvc` command: one-shot runs (in this process, or in a subprocess where only a
process shows it), a served instance in a subprocess, plain HTTP calls."""

from __future__ import annotations

import contextlib
import http.client
import io
import json
import logging
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path
from urllib.parse import urlsplit

from tests.support.warm import WarmProcess

AGENTSVC = [sys.executable, "-m", "agentsvc"]


def run(
    args: list[str], cwd: Path, stdin: str | None = None, **env: str
) -> subprocess.CompletedProcess:
    """`agentsvc ARGS` run in `cwd` with `stdin` and `env` added to the environment: its exit
    status, stdout and stderr. A one-shot command runs in this process (`main(argv)`, as
    the command line calls it, with its own working directory, environment, streams and
    logging), since starting an interpreter and importing the package costs over a second
    of CPU per run; `serve`, which listens, locks and takes signals, always runs in a
    process of its own, forked from one that has loaded the package (warm.py)."""
    if args[:1] == ["serve"]:
        return _run_forked(args, cwd, stdin, env)
    return _run_here(args, cwd, stdin, env)


def _run_forked(args: list[str], cwd: Path, stdin: str | None, env: dict[str, str]):
    """`agentsvc ARGS` in a process of its own, forked with the package loaded (warm.py)."""
    proc = WarmProcess(
        args,
        cwd=cwd,
        env={**os.environ, **env},
        stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        out, err = proc.communicate(stdin, timeout=60)
    except subprocess.TimeoutExpired:
        proc.kill()
        raise
    return subprocess.CompletedProcess(args, proc.returncode, out, err)


def run_process(
    args: list[str], cwd: Path, stdin: str | None = None, **env: str
) -> subprocess.CompletedProcess:
    """`agentsvc ARGS` in a subprocess, as the installed command runs it."""
    return subprocess.run(
        [*AGENTSVC, *args],
        cwd=cwd,
        input=stdin,
        stdin=None if stdin is not None else subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, **env},
    )


_HERE = threading.Lock()  # one command at a time: the directory and streams are the process's


def _run_here(
    args: list[str], cwd: Path, stdin: str | None, env: dict[str, str]
) -> subprocess.CompletedProcess:
    from agentsvc.cli import main

    out, err = io.StringIO(), io.StringIO()
    outcome: list[int] = []

    def command() -> None:  # in a thread: the caller may be inside a running event loop
        try:
            outcome.append(main(list(args)))
        except SystemExit as exc:  # argparse: usage errors (2), --help and --version (0)
            outcome.append(exc.code if isinstance(exc.code, int) else 1)

    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    saved_env, saved_dir = dict(os.environ), os.getcwd()
    with _HERE, contextlib.ExitStack() as stack:
        stack.enter_context(contextlib.redirect_stdout(out))
        stack.enter_context(contextlib.redirect_stderr(err))
        stdin_before, sys.stdin = sys.stdin, io.StringIO(stdin or "")
        root.handlers = []  # the command configures its own logging to its stderr
        os.environ.update(env)
        os.chdir(cwd)
        try:
            thread = threading.Thread(target=command, name="agentsvc-command")
            thread.start()
            thread.join(timeout=60)
            assert not thread.is_alive(), f"agentsvc {' '.join(args)} did not end in 60 s"
        finally:
            os.chdir(saved_dir)
            os.environ.clear()
            os.environ.update(saved_env)
            sys.stdin = stdin_before
            for handler in root.handlers:
                handler.close()
            root.handlers, root.level = handlers, level
    return subprocess.CompletedProcess(args, outcome[0], out.getvalue(), err.getvalue())


class Server:
    """`agentsvc serve` in a process of its own on a free port (forked with the package
    loaded: tests/support/warm.py)."""

    def __init__(
        self, cwd: Path, *args: str, env: dict[str, str] | None = None, port: str | None = "0"
    ):
        self.proc = WarmProcess(
            ["serve", *(["--port", port] if port is not None else []), *args],
            cwd=cwd,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, **(env or {})},
        )
        self.log: list[str] = []
        # A minute, as for a one-shot command: on a machine busy with other suites, starting
        # took over 30 s. A server that did not start is killed, never left running.
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            line = self.proc.stderr.readline()
            if not line:
                break
            self.log.append(line)
            match = re.search(r"listening on (http://\S+)", line)
            if match:
                self.url = match.group(1)
                return
        self.proc.kill()
        self.proc.communicate(timeout=30)
        raise AssertionError("server did not start: " + "".join(self.log))

    def get(self, path: str, key: str | None = None) -> tuple[int, dict, dict]:
        request = urllib.request.Request(self.url + path)
        if key:
            request.add_header("Authorization", f"Bearer {key}")
        try:
            with urllib.request.urlopen(request, timeout=10) as resp:
                return resp.status, dict(resp.headers), json.loads(resp.read())
        except urllib.error.HTTPError as exc:
            return exc.code, dict(exc.headers), json.loads(exc.read())

    def stop(self, sig: int = signal.SIGTERM) -> int:
        self.proc.send_signal(sig)
        _, rest = self.proc.communicate(timeout=30)
        self.log.append(rest)
        return self.proc.returncode


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def call(
    url: str, method: str = "GET", body: dict | None = None, **headers: str
) -> tuple[int, dict, dict | None]:
    """One HTTP request, redirects not followed: (status, headers, JSON body or None)."""
    parts = urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=10)
    data = json.dumps(body).encode() if body is not None else None
    if data is not None:
        headers["Content-Type"] = "application/json"
    conn.request(method, parts.path + (f"?{parts.query}" if parts.query else ""), data, headers)
    resp = conn.getresponse()
    raw = resp.read()
    conn.close()
    is_json = resp.getheader("Content-Type", "").startswith("application/json")
    return resp.status, dict(resp.getheaders()), json.loads(raw) if is_json else None
