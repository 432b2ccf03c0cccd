"""The `agentsvc` command in a subprocess: one-shot runs, a served instance, plain HTTP calls."""

from __future__ import annotations

import http.client
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from urllib.parse import urlsplit

AGENTSVC = [sys.executable, "-m", "agentsvc"]


def run(
    args: list[str], cwd: Path, stdin: str | None = None, **env: str
) -> subprocess.CompletedProcess:
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


class Server:
    """`agentsvc serve` in a subprocess on a free port."""

    def __init__(
        self, cwd: Path, *args: str, env: dict[str, str] | None = None, port: str | None = "0"
    ):
        self.proc = subprocess.Popen(
            [*AGENTSVC, "serve", *(["--port", port] if port is not None else []), *args],
            cwd=cwd,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, **(env or {})},
        )
        self.log: list[str] = []
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            line = self.proc.stderr.readline()
            if not line:
                break
            self.log.append(line)
            match = re.search(r"listening on (http://\S+)", line)
            if match:
                self.url = match.group(1)
                return
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
