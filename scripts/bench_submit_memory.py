"""Memory under large public submits: RSS of `agentsvc serve` before and after concurrent
big bodies to POST /form-submissions/submit.

Starts the service in a subprocess on a temporary data directory, reads its resident
memory (VmRSS of /proc/PID/status), sends `--concurrency` bodies of `--mb` MB at once (a
form with a base64 file, to a tool id that does not exist), and reads it again, with the
peak (VmHWM, reset before the burst when the kernel allows it). Prints the figures and the
status codes the requests got. Linux only (/proc).

With `--form`, the bodies go to a real form tool instead (three files of about 5 MB each,
decoded to disk, no webhook), and every answer should be 200.

Usage: python scripts/bench_submit_memory.py [--concurrency 12] [--mb 24] [--form]
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import os
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import aiohttp

sys.path.insert(0, str(Path(__file__).resolve().parent))
import benchlib  # noqa: E402


@dataclass
class MemoryResult:
    rss_before_mb: float
    rss_after_mb: float
    peak_mb: float  # highest RSS seen during the burst
    statuses: Counter
    seconds: float

    @property
    def growth_mb(self) -> float:
        """How far RSS rose above its level before the burst, at its peak."""
        return max(self.peak_mb, self.rss_after_mb) - self.rss_before_mb


def _status_kb(pid: int, field: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise RuntimeError(f"{field} missing from /proc/{pid}/status")


def _reset_peak(pid: int) -> bool:
    """Reset VmHWM to the current RSS (Linux >= 4.0); False when not allowed."""
    try:
        Path(f"/proc/{pid}/clear_refs").write_text("5")
        return True
    except OSError:
        return False


def big_body(mb: float, tool_id: str = "tool_does_not_exist") -> bytes:
    """A submit body of about `mb` MB: one base64 data URL in formData."""
    head = (
        f'{{"toolId":"{tool_id}","fieldsCompleted":["cv"],'
        '"formData":{"cv":"data:application/pdf;base64,'
    )
    tail = '"}}'
    size = int(mb * 2**20) - len(head) - len(tail)
    return (head + "A" * (size - size % 4) + tail).encode()


FILE_FIELDS = ("a", "b", "c")


def form_body(tool_id: str) -> bytes:
    """A valid submit body of about 20 MB: three files of 5 MB (decoded) each."""
    payload = base64.b64encode(os.urandom(5 * 2**20 - 16)).decode()
    files = {name: f"data:application/pdf;base64,{payload}" for name in FILE_FIELDS}
    body = {"toolId": tool_id, "formData": files, "fieldsCompleted": list(FILE_FIELDS)}
    return json.dumps(body).encode()


async def make_form_tool(base: str, key: str) -> str:
    """An agent with a form tool of three file fields and no webhook; return the tool id."""
    auth = {"Authorization": f"Bearer {key}"}
    fields = [{"name": n, "label": n.upper(), "type": "file"} for n in FILE_FIELDS]
    async with aiohttp.ClientSession(headers=auth) as http:
        async with http.post(f"{base}/api/v1/agents", json={"name": "Bench"}) as resp:
            agent_id = (await resp.json())["data"]["id"]
        tool = {
            "agentId": agent_id,
            "name": "upload",
            "description": "Files",
            "executionType": "form",
            "inputSchema": {"type": "object", "properties": {}},
            "formSchema": {"fields": fields},
            "formExecutionMode": "client",
            "formClientHandler": "h",
        }
        async with http.post(f"{base}/api/v1/tools", json=tool) as resp:
            assert resp.status == 201, await resp.text()
            return (await resp.json())["id"]


async def burst(
    base: str, pid: int, concurrency: int, mb: float, body: bytes | None = None
) -> MemoryResult:
    """Send the bodies at once and sample RSS while they are handled."""
    body = body or big_body(mb)
    before = _status_kb(pid, "VmRSS")
    hwm_ok = _reset_peak(pid)
    peak = before
    done = False

    async def sample() -> None:
        nonlocal peak
        while not done:
            peak = max(peak, _status_kb(pid, "VmRSS"))
            await asyncio.sleep(0.005)

    sampler = asyncio.ensure_future(sample())
    statuses: Counter = Counter()
    started = time.monotonic()
    timeout = aiohttp.ClientTimeout(total=120)
    connector = aiohttp.TCPConnector(limit=concurrency)
    async with aiohttp.ClientSession(timeout=timeout, connector=connector) as http:

        async def one() -> None:
            try:
                async with http.post(
                    f"{base}/api/v1/form-submissions/submit",
                    data=body,
                    headers={"Content-Type": "application/json"},
                ) as resp:
                    await resp.read()
                    statuses[resp.status] += 1
            except aiohttp.ClientError as exc:
                statuses[type(exc).__name__] += 1

        await asyncio.gather(*(one() for _ in range(concurrency)))
    seconds = time.monotonic() - started
    done = True
    await sampler
    await asyncio.sleep(0.2)  # let freed memory go back before the last reading
    after = _status_kb(pid, "VmRSS")
    if hwm_ok:
        peak = max(peak, _status_kb(pid, "VmHWM"))
    return MemoryResult(before / 1024, after / 1024, peak / 1024, statuses, seconds)


def start_server(data_dir: Path, extra_env: dict[str, str] | None = None):
    """`agentsvc serve` on a free port; returns (process, base URL)."""
    port = benchlib.free_port()
    env = {**os.environ, "AGENTSVC_LOG_LEVEL": "WARNING", **(extra_env or {})}
    env.pop("AGENTSVC_CONFIG", None)
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "agentsvc",
            "serve",
            "--port",
            str(port),
            "--data-dir",
            str(data_dir),
        ],
        env=env,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        benchlib.wait_http(base + "/healthz")
    except BaseException:
        proc.kill()
        proc.wait(30)
        raise
    return proc, base


def measure(
    concurrency: int = 12, mb: float = 24, extra_env: dict | None = None, form: bool = False
) -> MemoryResult:
    """Start a server, warm it up with one small request, and measure one burst."""
    with tempfile.TemporaryDirectory() as tmp:
        data_dir = Path(tmp) / "data"
        proc, base = start_server(data_dir, extra_env)
        try:
            body = None
            if form:
                key = subprocess.run(
                    [sys.executable, "-m", "agentsvc", "apikey", "create", "--email",
                     "bench@example.com", "--data-dir", str(data_dir)],
                    capture_output=True, text=True, check=True,
                ).stdout.strip()  # fmt: skip
                body = form_body(asyncio.run(make_form_tool(base, key)))
            asyncio.run(burst(base, proc.pid, 1, 0.01))  # warm-up: imports, first connections
            return asyncio.run(burst(base, proc.pid, concurrency, mb, body))
        finally:
            proc.terminate()
            proc.wait(30)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--concurrency", type=int, default=12)
    parser.add_argument("--mb", type=float, default=24)
    parser.add_argument("--form", action="store_true", help="valid bodies with 3 x 5 MB files")
    args = parser.parse_args()
    result = measure(args.concurrency, args.mb, form=args.form)
    what = (
        "~20 MB bodies (3 x 5 MB files) to a form"
        if args.form
        else (f"{args.mb:g} MB submit bodies to an unknown tool")
    )
    print(f"{args.concurrency} concurrent {what}")
    print(f"  RSS before   {result.rss_before_mb:8.1f} MB")
    print(f"  RSS peak     {result.peak_mb:8.1f} MB")
    print(f"  RSS after    {result.rss_after_mb:8.1f} MB")
    print(f"  growth       {result.growth_mb:8.1f} MB (peak over before)")
    print(f"  took         {result.seconds:8.2f} s")
    print(f"  statuses     {dict(result.statuses)}")


if __name__ == "__main__":
    main()
