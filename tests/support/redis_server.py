"""A real `redis-server` (Debian's) on a free port of 127.0.0.1, for the shared limits' tests;
without one the tests fail when TEST_REQUIRE_REDIS is set (as in scripts/test.sh's PostgreSQL
run) and are skipped otherwise."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time

import pytest
import redis

REDIS_SERVER = shutil.which("redis-server") or ""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class RedisServer:
    def __init__(self, tmp_path):
        self.port = free_port()
        self.dir = tmp_path
        self.proc: subprocess.Popen | None = None
        self.url = f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> RedisServer:
        self.proc = subprocess.Popen(
            [
                REDIS_SERVER,
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
                "--dir",
                str(self.dir),
            ],
            stdout=subprocess.DEVNULL,
        )
        client = redis.Redis(port=self.port)
        deadline = time.monotonic() + 10
        while True:
            try:
                client.ping()
                break
            except redis.ConnectionError:
                assert time.monotonic() < deadline, "redis-server did not start"
                time.sleep(0.05)
        client.close()
        return self

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.terminate()
            self.proc.wait(10)
            self.proc = None

    def keys(self) -> list[bytes]:
        client = redis.Redis(port=self.port)
        try:
            return client.keys("*")
        finally:
            client.close()


def started(tmp_path) -> RedisServer:
    """A started server in `tmp_path` (the test fails or skips without redis-server)."""
    if not REDIS_SERVER:
        if os.environ.get("TEST_REQUIRE_REDIS"):
            pytest.fail("redis-server is not installed (apt-get install redis-server)")
        pytest.skip("redis-server is not installed")
    return RedisServer(tmp_path).start()
