"""Run every benchmark of the project in one go and print one table of headline figures.

Usage: python scripts/bench_all.py [--quick] [--database postgresql://...] [--redis redis://...]

With --database every service runs on PostgreSQL (a fresh schema of that database each;
the secret key every process needs is set for them), and the same table is printed; with
--redis too, rate limits are shared through that Redis, as in a cluster.

Each benchmark starts its own servers (the service and, where it compares, a raw aiohttp
hello-world on the same pinned core) and prints its full report; the table at the end
collects the figures each one records with `benchlib.record`. Ratios are against the
hello-world measured in the same run, so they hold on a busy machine where absolute req/s
does not.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent

# (script, arguments, arguments with --quick)
BENCHMARKS = [
    ("bench_api.py", ["--seconds", "4", "--cycles", "5"], ["--seconds", "2", "--cycles", "2"]),
    (
        "bench_events.py",
        ["--seconds", "4", "--cycles", "5"],
        ["--seconds", "2", "--cycles", "2", "--exact-events", "1000"],
    ),
    (
        "bench_sessions.py",
        ["--seconds", "4", "--cycles", "5", "--burst", "32"],
        ["--seconds", "2", "--cycles", "2", "--burst", "16"],
    ),
    ("bench_chat.py", [], ["--streams", "500", "--ramp-seconds", "3"]),
    ("bench_forms.py", ["--seconds", "4"], ["--seconds", "2", "--backlog", "300"]),
    ("bench_knowledge.py", [], ["--queries", "500"]),
    ("bench_write_hold.py", [], ["--chats", "100"]),
    ("bench_handoff.py", [], ["--visitors", "300", "--members", "20", "--replies", "100"]),
    ("bench_inbox.py", [], ["--conversations", "2000", "--samples", "20"]),
    ("bench_widget.py", [], ["--runs", "3"]),
    ("bench_export.py", [], ["--messages", "20000", "--runs", "1", "--samples", "10"]),
    (
        "bench_webhooks.py",
        ["--seconds", "4", "--cycles", "5"],
        ["--seconds", "2", "--cycles", "2", "--turns", "20000"],
    ),
    ("bench_channels.py", [], ["--samples", "100", "--burst", "1000"]),
    ("bench_versions.py", [], ["--pairs", "100", "--turns", "40"]),
    ("bench_sources.py", [], ["--pages", "300"]),
    ("bench_guardrails.py", [], ["--messages", "1000", "--turns", "100"]),
    ("bench_telemetry.py", [], ["--seconds", "2", "--cycles", "2"]),
    ("bench_mcp.py", ["--calls", "200"], ["--calls", "50"]),
]


def machine() -> str:
    cpu = "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    load = " ".join(f"{x:.1f}" for x in os.getloadavg())
    return (
        f"{platform.system()} {platform.machine()}, {os.cpu_count()} cores ({cpu}), "
        f"Python {platform.python_version()}, load average {load}"
    )


def verdict(value: float, target: str) -> str:
    if not target:
        return ""
    op, _, number = target.partition(" ")
    if not number:
        return "ok" if value == float(op) else "MISSED"
    limit = float(number.split()[0])  # "50 on SQLite": the number, then its scope
    ok = {">=": value >= limit, "<=": value <= limit, "<": value < limit, ">": value > limit}
    return "ok" if ok.get(op, value == limit) else "MISSED"


def fmt(value: float, unit: str) -> str:
    if unit == "ratio":
        return f"{value:.0%}"
    if unit == "ok":
        return "yes" if value == 1 else "NO"
    return f"{value:,.1f} {unit}" if value < 100 else f"{value:,.0f} {unit}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="shorter runs")
    parser.add_argument("--database", default="", help="postgresql://... (default: SQLite)")
    parser.add_argument("--redis", default="", help="redis://... for shared rate limits")
    args = parser.parse_args()
    with tempfile.NamedTemporaryFile("r", suffix=".jsonl") as summary:
        env = {**os.environ, "BENCH_SUMMARY_FILE": summary.name}
        if args.database:
            env |= {"BENCH_DATABASE_URL": args.database, "AGENTSVC_SERVER_SECRET_KEY": "bench"}
        if args.redis:
            env["BENCH_REDIS_URL"] = args.redis
        failed = []
        for script, full, quick in BENCHMARKS:
            print(f"\n===== {script} =====", flush=True)
            started = time.monotonic()
            result = subprocess.run(
                [sys.executable, str(HERE / script), *(quick if args.quick else full)], env=env
            )
            print(f"({script}: {time.monotonic() - started:.0f} s, exit {result.returncode})")
            if result.returncode:
                failed.append(script)
        rows = [json.loads(line) for line in Path(summary.name).read_text().splitlines()]

    backend = "PostgreSQL" if args.database else "SQLite"
    backend += " + Redis limits" if args.redis else ""
    print(f"\n===== summary: {machine()}, {backend}")
    print(f"{'benchmark':10} {'figure':52} {'value':>16} {'target':>8}  ")
    for row in rows:
        value, unit, target = row["value"], row["unit"], row["target"]
        shown_target = target
        if unit == "ratio" and target:
            op, _, number = target.partition(" ")
            shown_target = f"{op} {float(number):.0%}"
        print(
            f"{row['benchmark']:10} {row['figure']:52} {fmt(value, unit):>16} "
            f"{shown_target:>8}  {verdict(value, target)}"
        )
    if failed:
        print(f"benchmarks that failed: {', '.join(failed)}")
        sys.exit(1)


if __name__ == "__main__":
    main()
