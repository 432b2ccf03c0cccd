"""A cluster of hosts for tests/test_hosts.py: PostgreSQL, Redis and three `agentsvc serve`
on hosts of their own (network namespaces on one bridge, netns.py), nginx in front on
127.0.0.1 with scripts/nginx_cluster.conf as docs/operators/growing.md shows it.

Each server is the real one: PostgreSQL from Debian's binaries (run as the `postgres`
user, trusting the bridge's subnet), `redis-server`, `agentsvc serve` forked warm into its
namespace (warm.py), nginx in the root namespace. Everything is stopped by `close()`,
whatever state the test left it in.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from tests.support import netns
from tests.support.warm import popen

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))
from benchlib import ServerProcess, api_key, free_port, wait_http  # noqa: E402

NGINX = shutil.which("nginx") or ("/usr/sbin/nginx" if Path("/usr/sbin/nginx").exists() else "")
NGINX_CONF = Path(__file__).resolve().parents[2] / "scripts" / "nginx_cluster.conf"
APPS = ("app1", "app2", "app3")
APP_PORT = 8080
PG_PORT = 5432
REDIS_PORT = 6379


def pg_bin() -> Path | None:
    found = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"))
    return found[-1].parent if found else None


def unavailable() -> str | None:
    """Why this machine cannot build the cluster, or None."""
    missing = [
        name
        for name, found in (
            ("nginx", NGINX),
            ("redis-server", shutil.which("redis-server")),
            ("PostgreSQL's binaries", pg_bin()),
            ("runuser", shutil.which("runuser")),
        )
        if not found
    ]
    if missing:
        return "missing: " + ", ".join(missing)
    return netns.unavailable()


def wait_until(check, what: str, timeout: float, every: float = 0.05) -> float:
    """Call `check()` until true; the seconds it took, or AssertionError naming `what`."""
    started = time.monotonic()
    while not check():
        assert time.monotonic() - started < timeout, f"{what}: not within {timeout} s"
        time.sleep(every)
    return time.monotonic() - started


def http_status(url: str, timeout: float = 2.0) -> int | None:
    """The status of GET `url`, or None when nothing answers."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as resp:
            return resp.status
    except urllib.error.HTTPError as exc:
        return exc.code
    except OSError:
        return None


class PostgresHost:
    """PostgreSQL on its host, listening on the host's address (trusting the subnet)."""

    def __init__(self, hosts: netns.Hosts):
        self.hosts = hosts
        self.address = hosts.address("pg")
        self.bin = pg_bin()
        self.dir = Path(tempfile.mkdtemp(prefix="agentsvc-hosts-pg-"))
        self.dir.chmod(0o755)
        shutil.chown(self.dir, "postgres")
        self.data = self.dir / "data"
        self.url = f"postgresql://postgres@{self.address}:{PG_PORT}/postgres"

    def _pg_ctl(self) -> list[str]:
        return ["runuser", "-u", "postgres", "--", str(self.bin / "pg_ctl"), "-D", str(self.data)]

    def start(self) -> None:
        subprocess.run(
            ["runuser", "-u", "postgres", "--", str(self.bin / "initdb"), "-D", str(self.data)]
            + ["-A", "trust", "-U", "postgres", "-E", "UTF8", "--locale=C.UTF-8"],
            check=True,
            capture_output=True,
        )
        with open(self.data / "pg_hba.conf", "a", encoding="utf-8") as hba:
            hba.write(f"host all all 10.{self.hosts.octet}.0.0/24 trust\n")
        options = (
            f"-p {PG_PORT} -k {self.dir} -c listen_addresses={self.address}"
            " -c max_connections=200 -c fsync=off -c synchronous_commit=off"
            " -c full_page_writes=off"
        )
        self.hosts.run(
            "pg",
            self._pg_ctl()
            + ["-l", str(self.dir / "server.log"), "-w", "-t", "30"]
            + ["start", "-o", options],
        )

    def restart(self) -> None:
        """`pg_ctl restart -m fast`: every connection is ended; back when it accepts."""
        log = ["-l", str(self.dir / "server.log")]  # not this process's pipe: it ends
        self.hosts.run("pg", self._pg_ctl() + log + ["-w", "-t", "30", "-m", "fast", "restart"])

    def close(self) -> None:
        if self.data.is_dir():
            self.hosts.run("pg", self._pg_ctl() + ["-m", "immediate", "stop"], timeout=30)
        shutil.rmtree(self.dir, ignore_errors=True)


class RedisHost:
    """Redis on its host (no persistence: a restart empties it, as a fresh one would be)."""

    def __init__(self, hosts: netns.Hosts):
        self.hosts = hosts
        self.address = hosts.address("redis")
        self.url = f"redis://{self.address}:{REDIS_PORT}/0"
        self.process: subprocess.Popen | None = None

    def start(self) -> None:
        argv = ["redis-server", "--port", str(REDIS_PORT), "--bind", self.address]
        argv += ["--save", "", "--appendonly", "no", "--protected-mode", "no"]
        argv += ["--dir", tempfile.gettempdir()]
        self.process = self.hosts.popen("redis", argv, stdout=subprocess.DEVNULL)
        wait_until(self._answers, "Redis starts", 10)

    def _answers(self) -> bool:
        ping = subprocess.run(
            ["redis-cli", "-h", self.address, "-p", str(REDIS_PORT), "ping"],
            capture_output=True,
            text=True,
        )
        return ping.stdout.strip() == "PONG"

    def stop(self) -> None:
        if self.process is not None:
            self.process.terminate()
            self.process.wait(10)
            self.process = None


class Cluster:
    """The five hosts, nginx in front on 127.0.0.1 (see the module's docstring)."""

    def __init__(self, tmp: Path, extra_toml: str = "", limits_toml: str = ""):
        self.tmp = tmp
        self.extra = extra_toml  # more TOML for every process (sections the config lacks)
        self.limits = limits_toml  # more keys of [ratelimit]
        self.hosts = netns.Hosts(["pg", "redis", *APPS])
        self.pg: PostgresHost | None = None
        self.redis: RedisHost | None = None
        self.apps: dict[str, ServerProcess] = {}
        self.lb_port = free_port()
        self.base = f"http://127.0.0.1:{self.lb_port}"
        self.nginx: subprocess.Popen | None = None

    def app_base(self, host: str) -> str:
        """One app host's own address (reached from the root namespace)."""
        return f"http://{self.hosts.address(host)}:{APP_PORT}"

    def config(self, host: str) -> Path:
        path = self.tmp / f"{host}.toml"
        path.write_text(
            f"""
[server]
host = "{self.hosts.address(host)}"
port = {APP_PORT}
data_dir = "{self.tmp / host}"
public_url = "{self.base}"
secret_key = "one key for the whole cluster"
trusted_proxies = ["{self.hosts.gateway}"]
[database]
url = "{self.pg.url}"
pool_size = 6
[ratelimit]
redis_url = "{self.redis.url}"
{self.limits}
{self.extra}""",
            encoding="utf-8",
        )
        return path

    def start(self) -> None:
        self.hosts.build()
        self.pg = PostgresHost(self.hosts)
        self.pg.start()
        self.redis = RedisHost(self.hosts)
        self.redis.start()
        for host in APPS:
            self.apps[host] = self._app(host)
        for host in APPS:
            self.start_app(host)
        self._start_nginx()

    def _app(self, host: str) -> ServerProcess:
        spawn = functools.partial(popen, netns=self.hosts.netns(host))
        server = ServerProcess(self.config(host), APP_PORT, spawn=spawn)
        server.base = self.app_base(host)
        return server

    def start_app(self, host: str) -> float:
        """Start (or start again) one app host's `agentsvc serve`; seconds to /healthz."""
        return self.apps[host].start()

    def _start_nginx(self) -> None:
        conf = NGINX_CONF.read_text(encoding="utf-8")
        for n, host in enumerate(APPS, start=1):
            conf = conf.replace(f"127.0.0.1:808{n}", f"{self.hosts.address(host)}:{APP_PORT}")
        conf = conf.replace("listen 127.0.0.1:8080;", f"listen 127.0.0.1:{self.lb_port};")
        # Which process answered each request, for the test to see nginx route around.
        conf = conf.replace(
            "http {",
            "http {\n    log_format routed '$request_method $uri $status"
            " $upstream_addr $upstream_status';",
            1,
        )
        conf = conf.replace("access_log off;", f"access_log {self.tmp}/access.log routed;")
        (self.tmp / "nginx.conf").write_text(conf, encoding="utf-8")
        globals_ = f"daemon off; pid {self.tmp}/nginx.pid; error_log {self.tmp}/nginx.log;"
        self.nginx = subprocess.Popen(
            [NGINX, "-c", str(self.tmp / "nginx.conf"), "-p", str(self.tmp), "-g", globals_]
        )
        wait_http(f"{self.base}/healthz", 15)

    def routed(self) -> list[str]:
        """nginx's log lines so far: method, path, status, upstreams tried and statuses."""
        path = self.tmp / "access.log"
        return path.read_text(encoding="utf-8").splitlines() if path.exists() else []

    def key(self, email: str) -> str:
        return api_key(self.config(APPS[0]), email, popen)

    def cli(self, *args: str) -> None:
        """`agentsvc ARGS` on the cluster's database (forked warm, in the root namespace)."""
        env = {**os.environ, "AGENTSVC_CONFIG": str(self.config(APPS[0]))}
        argv = [sys.executable, "-m", "agentsvc", *args]
        proc = popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        _, err = proc.communicate(timeout=60)
        assert proc.returncode == 0, err

    def close(self) -> None:
        """Stop everything; each step runs whatever the ones before it did."""
        steps = [self._stop_nginx]
        steps += [functools.partial(self._stop_app, host) for host in self.apps]
        steps += [self.redis.stop if self.redis else None, self.pg.close if self.pg else None]
        steps.append(self.hosts.close)
        failures = []
        for step in steps:
            if step is None:
                continue
            try:
                step()
            except Exception as exc:  # the next steps still run; reported at the end
                failures.append(exc)
        if failures:
            raise failures[0]

    def _stop_nginx(self) -> None:
        if self.nginx is not None:
            self.nginx.terminate()
            self.nginx.wait(10)

    def _stop_app(self, host: str) -> None:
        server = self.apps[host]
        if server.proc is not None and server.proc.poll() is None:
            server.proc.kill()
            server.proc.wait(10)
            server.proc = None
