"""Benchmark 1 and 2 `agentsvc serve` processes behind nginx on PostgreSQL (+ Redis) against
1 and 2 raw aiohttp hello-world processes behind the same nginx, in the same run.

Usage: python scripts/bench_cluster.py --database postgresql://... [--redis redis://...]
       [--seconds 4] [--connections 64]

Measures GET /agents/:id (an API key; the agent cache) and POST /triggers/event (public;
events batched per process) through nginx (scripts/nginx_cluster.conf, with its ports
replaced). Ratios are against the hello-world with as many processes, behind the same
nginx, measured in the same run: on a 2-core machine the processes, nginx, PostgreSQL and
the load generator share the cores, so absolute req/s say little and ratios say more.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import urllib.request
from contextlib import ExitStack, contextmanager
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import benchlib  # noqa: E402
from bench_events import wrk_events  # noqa: E402

NGINX_CONF = Path(__file__).resolve().parent / "nginx_cluster.conf"
EXTRA = (
    '[plans]\ndefault = "bench"\n[plans.bench]\n'
    "[ratelimit]\ntrigger_events_per_minute = 1000000000\n"
)


@contextmanager
def nginx(upstream_ports: list[int], tmp: Path, health: str = "/healthz"):
    """nginx on a free port in front of the given ports; yields its base URL."""
    conf = NGINX_CONF.read_text(encoding="utf-8")
    servers = "\n".join(f"        server 127.0.0.1:{p};" for p in upstream_ports)
    start, end = conf.index("    upstream agentsvc {"), conf.index("        keepalive")
    conf = conf[:start] + "    upstream agentsvc {\n" + servers + "\n" + conf[end:]
    port = benchlib.free_port()
    conf = conf.replace("listen 127.0.0.1:8080;", f"listen 127.0.0.1:{port};")
    path = tmp / f"nginx-{port}.conf"
    path.write_text(conf, encoding="utf-8")
    nginx_bin = shutil.which("nginx") or "/usr/sbin/nginx"
    flags = f"daemon off; pid {tmp}/nginx-{port}.pid; error_log {tmp}/nginx-{port}.log;"
    proc = subprocess.Popen([nginx_bin, "-c", str(path), "-p", str(tmp), "-g", flags])
    try:
        benchlib.wait_http(f"http://127.0.0.1:{port}{health}", 15)
        yield f"http://127.0.0.1:{port}"
    finally:
        proc.terminate()
        proc.wait(10)


@contextmanager
def services(count: int, tmp: Path, database_url: str, redis_url: str):
    """`count` agentsvc processes on one fresh schema; yields (ports, config of the first)."""
    url = benchlib.fresh_schema_url(database_url)
    ports = [benchlib.free_port() for _ in range(count)]
    procs, configs = [], []
    try:
        for i, port in enumerate(ports):
            config = tmp / f"agentsvc-{count}-{i}.toml"
            redis = f'redis_url = "{redis_url}"\n' if redis_url else ""
            config.write_text(
                f'[server]\nport = {port}\ndata_dir = "{tmp}/data-{count}"\n'
                f'secret_key = "bench"\ntrusted_proxies = ["127.0.0.1"]\n'
                f'[database]\nurl = "{url}"\npool_size = 10\n'
                + EXTRA.replace("[ratelimit]\n", f"[ratelimit]\n{redis}"),
                encoding="utf-8",
            )
            env = {**os.environ, "AGENTSVC_CONFIG": str(config), "AGENTSVC_LOG_LEVEL": "WARNING"}
            procs.append(subprocess.Popen([sys.executable, "-m", "agentsvc", "serve"], env=env))
            configs.append(config)
            benchlib.wait_http(f"http://127.0.0.1:{port}/healthz")
        yield ports, configs[0]
    finally:
        for proc in procs:
            proc.terminate()
        for proc in procs:
            proc.wait(30)


@contextmanager
def hello_worlds(count: int):
    with ExitStack() as stack:
        bases = [stack.enter_context(benchlib.hello_world(pin=False)) for _ in range(count)]
        yield [int(b.rsplit(":", 1)[1]) for b in bases]


def call(base: str, method: str, path: str, key: str, body: dict | None = None) -> dict:
    request = urllib.request.Request(
        base + path,
        method=method,
        data=json.dumps(body).encode() if body is not None else None,
        headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request) as resp:
        return json.loads(resp.read())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--database", default=os.environ.get("BENCH_DATABASE_URL", ""))
    parser.add_argument("--redis", default="")
    parser.add_argument("--seconds", type=int, default=4)
    parser.add_argument("--connections", type=int, default=64)
    args = parser.parse_args()
    if not args.database:
        parser.error("--database postgresql://... is required")
    if not shutil.which("wrk"):
        parser.error("needs wrk (apt-get install wrk)")
    opts = {"seconds": args.seconds, "connections": args.connections}
    rows = []
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        for count in (1, 2):
            with hello_worlds(count) as hello_ports, nginx(hello_ports, tmp, "/") as hello:
                hello_rps = benchlib.load(hello + "/", **opts).rps
            with (
                services(count, tmp, args.database, args.redis) as (ports, config),
                nginx(ports, tmp) as base,
            ):
                key = benchlib.api_key(config)
                agent = call(base, "POST", "/api/v1/agents", key, {"name": "Bench"})["data"]
                trigger = call(
                    base,
                    "POST",
                    f"/api/v1/triggers?agentId={agent['id']}",
                    key,
                    {
                        "name": "Bench",
                        "triggerType": "time_on_page",
                        "conditions": {"timeOnPage": 5},
                        "actionType": "open_chat",
                        "actionConfig": {},
                    },
                )
                auth = {"Authorization": f"Bearer {key}"}
                get = benchlib.load(f"{base}/api/v1/agents/{agent['id']}", headers=auth, **opts)
                events, _ = wrk_events(
                    f"{base}/api/v1/triggers/event",
                    agent["id"],
                    trigger["id"],
                    args.seconds,
                    args.connections,
                )
            rows.append((count, hello_rps, get, events))
            for name, result in (("GET /agents/:id", get), ("POST /triggers/event", events)):
                benchlib.record(
                    "cluster",
                    f"{name}, {count} process{'es' if count > 1 else ''}, vs hello",
                    result.rps / hello_rps,
                    "ratio",
                )

    print(
        f"\n{'processes':>9} {'hello req/s':>12} {'GET req/s':>10} {'ratio':>6}"
        f" {'events req/s':>13} {'ratio':>6} {'errors':>7}"
    )
    for count, hello_rps, get, events in rows:
        print(
            f"{count:>9} {hello_rps:>12,.0f} {get.rps:>10,.0f} {get.rps / hello_rps:>6.0%}"
            f" {events.rps:>13,.0f} {events.rps / hello_rps:>6.0%}"
            f" {get.errors + events.errors:>7}"
        )


if __name__ == "__main__":
    main()
