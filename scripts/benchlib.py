"""Shared pieces of the benchmarks: start the service and a raw aiohttp hello-world, drive
them with wrk (or a bounded asyncio client when wrk is missing), and print one table."""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

# `bench_all.py --database URL` (or BENCH_DATABASE_URL): services run on PostgreSQL, each
# in a fresh schema of that database; the secret key comes from AGENTSVC_SERVER_SECRET_KEY.
DATABASE_URL = os.environ.get("BENCH_DATABASE_URL", "")
# `bench_all.py --redis URL` (or BENCH_REDIS_URL): rate limits shared through that Redis.
REDIS_URL = os.environ.get("BENCH_REDIS_URL", "")


def _in_table(config_text: str, table: str, lines: str) -> str:
    """`lines` added to `[table]` of the TOML (the table appended when it has none)."""
    header = f"[{table}]\n"
    if header in config_text:
        return config_text.replace(header, header + lines, 1)
    return config_text + "\n" + header + lines


def with_redis(config_text: str) -> str:
    """The service's TOML with `[ratelimit] redis_url` when BENCH_REDIS_URL is set."""
    if not REDIS_URL:
        return config_text
    return _in_table(config_text, "ratelimit", f'redis_url = "{REDIS_URL}"\n')


def with_database(config_text: str) -> str:
    """The service's TOML with `[database] url` (a fresh schema) when BENCH_DATABASE_URL is set."""
    if not DATABASE_URL:
        return config_text
    lines = f'url = "{fresh_schema_url(DATABASE_URL)}"\npool_size = 20\n'
    return _in_table(config_text, "database", lines)


def database_toml() -> str:
    """The `[database]` table of a benchmark's service ('' on SQLite, the default)."""
    if not DATABASE_URL:
        return ""
    return f'\n[database]\nurl = "{fresh_schema_url(DATABASE_URL)}"\npool_size = 20\n'


def fresh_schema_url(url: str) -> str:
    """A URL whose connections see only a new, empty schema of the database at `url`."""
    return asyncio.run(fresh_schema_url_async(url))


async def fresh_schema_url_async(url: str) -> str:
    import asyncpg

    name = f"bench_{os.getpid()}_{time.monotonic_ns()}"
    conn = await asyncpg.connect(url)
    try:
        await conn.execute(f"CREATE SCHEMA {name}")
    finally:
        await conn.close()
    joiner = "&" if "?" in url else "?"
    return f"{url}{joiner}search_path={name}"


class BenchDatabase:
    """Plain SQL on a benchmark service's database (SQLite file or PostgreSQL URL), for
    checks outside the service (how many deliveries are still pending...)."""

    def __init__(self, data_dir: Path, config_text: str):
        found = re.search(r'^url = "(postgresql://[^"]+)"', config_text, re.MULTILINE)
        self.url = found.group(1) if found else ""
        self.path = data_dir / "agentsvc.db"

    def execute(self, sql: str) -> list[tuple]:
        if not self.url:
            import sqlite3

            conn = sqlite3.connect(self.path)
            try:
                with conn:
                    return conn.execute(sql).fetchall()
            finally:
                conn.close()
        import asyncpg

        async def run() -> list[tuple]:
            conn = await asyncpg.connect(self.url)
            try:
                return [tuple(r) for r in await conn.fetch(sql)]
            finally:
                await conn.close()

        return asyncio.run(run())


HELLO_WORLD = """
import sys, uvloop
from aiohttp import web
import orjson
async def hello(request):
    return web.Response(body=orjson.dumps({"status": "ok"}), content_type="application/json")
app = web.Application()
app.router.add_get("/", hello)
uvloop.install()
web.run_app(app, host="127.0.0.1", port=int(sys.argv[1]), print=None, access_log=None)
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_http(url: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            urllib.request.urlopen(url, timeout=1).read()
            return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"{url} did not come up")


def _pin(core: int) -> list[str]:
    return ["taskset", "-c", str(core)] if shutil.which("taskset") and os.cpu_count() > 1 else []


@contextmanager
def loopback_fake(module: str, *args: str, what: str = "the fake server"):
    """One of the tests' fake servers (`python -m tests.support.fakes.MODULE PORT ARGS...`)
    in a process of its own on loopback; yields its base URL (`http://127.0.0.1:PORT/v1`)."""
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", f"tests.support.fakes.{module}", str(port), *args],
        cwd=Path(__file__).resolve().parent.parent,
    )
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if time.monotonic() > deadline or proc.poll() is not None:
                    raise RuntimeError(f"{what} did not start") from None
                time.sleep(0.05)
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        proc.terminate()
        proc.wait(10)


@contextmanager
def hello_world(pin: bool = True):
    """A minimal aiohttp + uvloop JSON server, pinned like the service (unless not `pin`)."""
    port = free_port()
    pinned = _pin(0) if pin else []
    proc = subprocess.Popen([*pinned, sys.executable, "-c", HELLO_WORLD, str(port)])
    try:
        wait_http(f"http://127.0.0.1:{port}/")
        yield f"http://127.0.0.1:{port}"
    finally:
        proc.terminate()
        proc.wait(10)


@contextmanager
def service(extra_toml: str = ""):
    """`agentsvc serve` on a temporary data directory; yields (base_url, data_dir, config)."""
    with tempfile.TemporaryDirectory() as tmp:
        port = free_port()
        config = Path(tmp) / "bench.toml"
        config.write_text(
            with_database(
                with_redis(
                    f'[server]\ndata_dir = "{tmp}/data"\nport = {port}\ncpu_affinity = [0]\n'
                    f"{extra_toml}"
                )
            )
        )
        env = {**os.environ, "AGENTSVC_CONFIG": str(config), "AGENTSVC_LOG_LEVEL": "WARNING"}
        proc = subprocess.Popen([sys.executable, "-m", "agentsvc", "serve"], env=env)
        try:
            wait_http(f"http://127.0.0.1:{port}/healthz")
            yield f"http://127.0.0.1:{port}", Path(tmp), config
        finally:
            proc.terminate()
            proc.wait(30)


class ServerProcess:
    """`agentsvc serve` on a fixed config, that can be killed and started again on it."""

    def __init__(self, config: Path, port: int, log_level: str = "WARNING", spawn=None):
        self.config = config
        self.base = f"http://127.0.0.1:{port}"
        self.env = {**os.environ, "AGENTSVC_CONFIG": str(config), "AGENTSVC_LOG_LEVEL": log_level}
        self.proc: subprocess.Popen | None = None
        # How the process starts: subprocess.Popen, or the tests' Popen that forks it from
        # a process with the package loaded (tests/support/warm.py).
        self.spawn = spawn or subprocess.Popen

    def start(self, timeout: float = 30.0) -> float:
        """Start the server and wait for /healthz; return the seconds it took."""
        started = time.monotonic()
        self.proc = self.spawn([sys.executable, "-m", "agentsvc", "serve"], env=self.env)
        wait_http(f"{self.base}/healthz", timeout)
        return time.monotonic() - started

    def kill(self) -> None:
        """SIGKILL: no shutdown handler runs, nothing is flushed."""
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait(30)
            self.proc = None

    def stop(self) -> None:
        """SIGTERM and wait (a clean stop)."""
        if self.proc is not None:
            self.proc.terminate()
            self.proc.wait(30)
            self.proc = None


def api_key(config: Path, email: str = "bench@example.com", spawn=None) -> str:
    env = {**os.environ, "AGENTSVC_CONFIG": str(config)}
    proc = (spawn or subprocess.Popen)(
        [sys.executable, "-m", "agentsvc", "apikey", "create", "--email", email],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    out, err = proc.communicate(timeout=60)
    if proc.returncode != 0:
        raise RuntimeError(f"agentsvc apikey create failed: {err}")
    return out.strip()


@dataclass
class LoadResult:
    rps: float
    p50_ms: float
    p99_ms: float
    errors: int


def _ms(text: str) -> float:
    match = re.match(r"([\d.]+)(\w+)", text)
    if match is None:
        raise RuntimeError(f"cannot parse wrk latency {text!r}")
    value, unit = match.groups()
    return float(value) * {"us": 0.001, "ms": 1.0, "s": 1000.0, "m": 60000.0}[unit]


def run_wrk(
    url: str,
    *,
    seconds: int = 5,
    connections: int = 64,
    headers: dict[str, str] | None = None,
    lua: str | None = None,
) -> LoadResult:
    """Drive a URL with wrk on the other core (closed loop) and parse its report."""
    args = [*_pin(1), "wrk", "-t1", f"-c{connections}", f"-d{seconds}s", "--latency"]
    for name, value in (headers or {}).items():
        args += ["-H", f"{name}: {value}"]
    script = None
    if lua:
        script = tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False)
        script.write(lua)
        script.close()
        args += ["-s", script.name]
    out = subprocess.run([*args, url], capture_output=True, text=True, check=True).stdout
    if script:
        os.unlink(script.name)
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))
    dist = out[out.index("Latency Distribution") :]
    p50 = _ms(re.search(r"50%\s+(\S+)", dist).group(1))
    p99 = _ms(re.search(r"99%\s+(\S+)", dist).group(1))
    bad = re.search(r"Non-2xx or 3xx responses:\s+(\d+)", out)
    sock = re.search(r"Socket errors:.*?(\d+).*?(\d+).*?(\d+).*?(\d+)", out)
    errors = (int(bad.group(1)) if bad else 0) + (sum(map(int, sock.groups())) if sock else 0)
    return LoadResult(rps, p50, p99, errors)


async def _asyncio_load(url, seconds, connections, headers):
    import aiohttp

    latencies: list[float] = []
    errors = 0
    deadline = time.monotonic() + seconds

    async def worker(session):
        nonlocal errors
        while time.monotonic() < deadline:
            start = time.perf_counter()
            async with session.get(url, headers=headers) as resp:
                await resp.read()
                if resp.status >= 400:
                    errors += 1
            latencies.append(time.perf_counter() - start)

    async with aiohttp.ClientSession() as session:
        await asyncio.gather(*(worker(session) for _ in range(connections)))
    latencies.sort()
    n = len(latencies)
    return LoadResult(
        n / seconds, latencies[n // 2] * 1000, latencies[int(n * 0.99)] * 1000, errors
    )


def load(url: str, *, seconds: int = 5, connections: int = 64, headers=None) -> LoadResult:
    """wrk when installed (apt-get install wrk), else a bounded asyncio client."""
    if shutil.which("wrk"):
        return run_wrk(url, seconds=seconds, connections=connections, headers=headers)
    return asyncio.run(_asyncio_load(url, seconds, connections, headers or {}))


def print_table(rows: list[tuple[str, LoadResult, LoadResult]]) -> None:
    """Print name, req/s, p50, p99 and the ratio to the hello-world measured beside it."""
    print(f"{'endpoint':34} {'req/s':>9} {'p50 ms':>8} {'p99 ms':>8} {'errors':>7} {'vs hello':>9}")
    for name, result, baseline in rows:
        ratio = result.rps / baseline.rps if baseline.rps else 0.0
        print(
            f"{name:34} {result.rps:9.0f} {result.p50_ms:8.2f} {result.p99_ms:8.2f} "
            f"{result.errors:7d} {ratio:9.0%}"
        )


def record(benchmark: str, figure: str, value: float, unit: str, target: str = "") -> None:
    """Append one headline figure for scripts/bench_all.py (when it is collecting)."""
    path = os.environ.get("BENCH_SUMMARY_FILE")
    if not path:
        return
    import json

    row = {"benchmark": benchmark, "figure": figure, "value": value, "unit": unit, "target": target}
    with open(path, "a") as f:
        f.write(json.dumps(row) + "\n")


def server_pid(url: str) -> int | None:
    """The pid of the process listening on the URL's port (Linux `ss`), or None."""
    port = url.rstrip("/").rsplit(":", 1)[1]
    if not shutil.which("ss"):
        return None
    out = subprocess.run(["ss", "-ltnpH", f"sport = :{port}"], capture_output=True, text=True)
    match = re.search(r"pid=(\d+)", out.stdout)
    return int(match.group(1)) if match else None


def cpu_seconds(pid: int | None) -> float:
    """User + system CPU time of a process, all its threads included (0 when unknown)."""
    if pid is None:
        return 0.0
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def rss_mb(pid: int | None, peak: bool = False) -> float:
    """Resident memory of a process in MB (its peak with `peak=True`); NaN when unknown."""
    if pid is None:
        return float("nan")
    field = "VmHWM:" if peak else "VmRSS:"
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field):
            return int(line.split()[1]) / 1024
    return float("nan")


def percentile(values: list[float], p: float) -> float:
    """The p-th percentile (nearest rank) of a non-empty list."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(p / 100 * (len(ordered) - 1))))]


def median_result(results: list[LoadResult]) -> LoadResult:
    """The median of each figure over interleaved cycles (errors summed)."""
    import statistics

    return LoadResult(
        statistics.median(r.rps for r in results),
        statistics.median(r.p50_ms for r in results),
        statistics.median(r.p99_ms for r in results),
        sum(r.errors for r in results),
    )


def print_report(figures: dict[str, object], violations: list[str], ok_message: str) -> int:
    """Print a check's figures and violations; return the exit status."""
    width = max(map(len, figures))
    for name, value in figures.items():
        print(f"{name:{width}}  {value}")
    if violations:
        print("\nVIOLATIONS:")
        for v in violations:
            print(f"  - {v}")
        return 1
    print(f"\nOK: {ok_message}")
    return 0
