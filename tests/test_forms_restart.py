"""A restart loses no form submission: an `agentsvc serve` killed with SIGKILL delivers
everything once started again."""

from __future__ import annotations

import asyncio
import os
import re
import signal
import subprocess
import threading

import aiohttp
import pytest

from tests.support.accounts import bearer
from tests.support.cli import run
from tests.support.fakes.webhook_receiver import WebhookReceiver, free_port
from tests.support.warm import WarmProcess


class ServeProcess:
    """`agentsvc serve` in a process of its own on a free port, on a given data directory
    (forked with the package loaded: tests/support/warm.py)."""

    def __init__(self, proc: WarmProcess, url: str):
        self.proc = proc
        self.url = url

    @classmethod
    async def start(cls, data_dir, env: dict[str, str]) -> ServeProcess:
        proc = WarmProcess(
            ["serve", "--port", "0", "--data-dir", str(data_dir)],
            cwd=data_dir.parent,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, **env},
        )
        log = []
        async with asyncio.timeout(30):
            while True:
                line = await asyncio.to_thread(proc.stderr.readline)
                assert line, "server did not start: " + "".join(log)
                log.append(line)
                match = re.search(r"listening on (http://\S+)", line)
                if match:
                    break
        # Keep draining the log so the server never blocks on a full pipe.
        threading.Thread(target=proc.stderr.read, daemon=True).start()
        return cls(proc, match.group(1))

    async def wait(self, timeout: float = 30) -> int:
        return await asyncio.to_thread(self.proc.wait, timeout)


async def test_restart_after_sigkill_delivers_everything(tmp_path, aiohttp_client):
    data_dir = tmp_path / "data"
    env = {
        "AGENTSVC_OUTBOUND_ALLOW_PRIVATE": "true",
        "AGENTSVC_WEBHOOKS_RETRY_SCHEDULE_SECONDS": "[0, 2, 2]",
        "AGENTSVC_WEBHOOKS_TIMEOUT_SECONDS": "20",
    }
    down_port = free_port()
    slow = await WebhookReceiver(slow_seconds=60).start()
    first = await ServeProcess.start(data_dir, env)
    created = await asyncio.to_thread(
        run,
        ["apikey", "create", "--email", "o@example.com", "--data-dir", str(data_dir)],
        tmp_path,
        **env,
    )
    key = created.stdout.strip()
    auth = bearer(key)
    down = WebhookReceiver()
    try:
        async with aiohttp.ClientSession(first.url) as http:
            resp = await http.post("/api/v1/agents", json={"name": "A"}, headers=auth)
            agent_id = (await resp.json())["data"]["id"]
            tools = {}
            for name, url in (
                ("down", f"http://127.0.0.1:{down_port}/ok"),
                ("hang", slow.url("/slow")),
            ):
                body = {
                    "agentId": agent_id,
                    "name": name,
                    "description": "d",
                    "executionType": "form",
                    "inputSchema": {"type": "object", "properties": {}},
                    "formSchema": {"fields": [{"name": "n", "label": "N", "type": "number"}]},
                    "formWebhookUrl": url,
                }
                resp = await http.post("/api/v1/tools", json=body, headers=auth)
                assert resp.status == 201, await resp.text()
                tools[name] = (await resp.json())["id"]
            sent = []
            for n in range(5):
                resp = await http.post(
                    "/api/v1/form-submissions/submit",
                    json={"toolId": tools["down"], "formData": {"n": n}, "fieldsCompleted": ["n"]},
                )
                result = await resp.json()
                assert result["webhookResult"]["success"] is False, result
                sent.append(result["submissionId"])
            # One attempt is in flight (the receiver hangs) when the server is killed.
            hanging = asyncio.ensure_future(
                http.post(
                    "/api/v1/form-submissions/submit",
                    json={"toolId": tools["hang"], "formData": {"n": 9}, "fieldsCompleted": ["n"]},
                )
            )
            await slow.wait_for(1, "/slow")
            first.proc.send_signal(signal.SIGKILL)
            await first.wait()
            with pytest.raises(aiohttp.ClientError):
                await hanging

        # The receivers come back; a new process starts on the same database.
        slow.slow_seconds = 0
        await down.start(down_port)
        second = await ServeProcess.start(data_dir, env)
        try:
            await down.wait_for(5, "/ok", timeout=15)
            await slow.wait_for(2, "/slow", timeout=15)
            assert sorted(h.json["submissionId"] for h in down.at("/ok")) == sorted(sent)
            interrupted = slow.at("/slow")
            assert interrupted[0].headers["webhook-id"] == interrupted[1].headers["webhook-id"]
            async with aiohttp.ClientSession(second.url) as http:
                deadline = asyncio.get_running_loop().time() + 10
                while True:
                    resp = await http.get("/api/v1/form-submissions?limit=100", headers=auth)
                    listed = (await resp.json())["submissions"]
                    if {s["status"] for s in listed} == {"webhook_success"}:
                        break
                    assert asyncio.get_running_loop().time() < deadline, listed
                    await asyncio.sleep(0.1)
                assert len(listed) == 6
        finally:
            second.proc.send_signal(signal.SIGTERM)
            assert await second.wait(30) == 0
    finally:
        if first.proc.returncode is None:
            first.proc.kill()
            await first.wait()
        await down.close()
        await slow.close()
