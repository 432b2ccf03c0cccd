"""The `agentsvc` command: serve in an empty directory, signals, and the admin commands."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

AGENTSVC = [sys.executable, "-m", "agentsvc"]


def run(args: list[str], cwd: Path, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [*AGENTSVC, *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, **env},
    )


class Server:
    """`agentsvc serve` in a subprocess on a free port."""

    def __init__(self, cwd: Path, *args: str):
        self.proc = subprocess.Popen(
            [*AGENTSVC, "serve", "--port", "0", *args],
            cwd=cwd,
            stderr=subprocess.PIPE,
            text=True,
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
        ({"AGENTSVC_SERVER_PROT": "1"}, "server.prot: unknown key"),
    ],
)
def test_bad_configuration_stops_startup(tmp_path, env, named):
    result = run(["serve"], tmp_path, **env)
    assert result.returncode == 1
    assert named in result.stderr
    assert not (tmp_path / "data").exists()
