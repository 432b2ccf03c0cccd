"""Three `agentsvc serve` processes behind nginx on one PostgreSQL and one Redis act as one
service: limits are shared, every accepted submission is delivered (one process killed
with SIGKILL mid-delivery), a revoked key is refused by every process within 1 s, and so
are a SCIM deactivation and a role given by a SCIM group (issue 35).

Runs on the PostgreSQL side of the suite (scripts/test.sh starts the servers); nginx is
Debian's, with scripts/nginx_cluster.conf as docs/operators/growing.md shows it, on free ports.
"""

from __future__ import annotations

import asyncio
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import aiohttp
import pytest

from tests.support import pg
from tests.support.fakes.webhook_receiver import WebhookReceiver
from tests.support.scim import BASE, okta_user, scim_headers
from tests.support.sso import oidc_body, provider_for_module

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
from benchlib import ServerProcess, api_key, free_port, wait_http  # noqa: E402

from tests.support.cli import run  # noqa: E402
from tests.support.warm import popen  # noqa: E402

REDIS_URL = pg.REDIS_URL  # this test process's Redis database
NGINX = shutil.which("nginx") or ("/usr/sbin/nginx" if Path("/usr/sbin/nginx").exists() else "")
NGINX_CONF = Path(__file__).resolve().parents[1] / "scripts" / "nginx_cluster.conf"
PLAN_PER_MINUTE = 30
LEASE_SECONDS = 4
POLL_SECONDS = 0.5

pytestmark = pytest.mark.skipif(
    not (pg.SERVER_URL and REDIS_URL and NGINX),
    reason="needs PostgreSQL, Redis and nginx (bash scripts/test.sh starts them)",
)


class Cluster:
    def __init__(self, tmp_path: Path):
        self.tmp = tmp_path
        self.url = pg.fresh_database_url()
        self.ports = [free_port() for _ in range(3)]
        self.lb_port = free_port()
        self.base = f"http://127.0.0.1:{self.lb_port}"
        self.servers: list[ServerProcess] = []
        self.nginx: subprocess.Popen | None = None

    def config(self, index: int) -> Path:
        path = self.tmp / f"process{index}.toml"
        path.write_text(
            f"""
[server]
port = {self.ports[index]}
data_dir = "{self.tmp / f"data{index}"}"
public_url = "{self.base}"
secret_key = "one key for the whole cluster"
trusted_proxies = ["127.0.0.1"]
[database]
url = "{self.url}"
pool_size = 4
[ratelimit]
redis_url = "{REDIS_URL}"
[outbound]
allow_private = true
[webhooks]
retry_schedule_seconds = [0, 1, 1, 1, 1]
timeout_seconds = 3
lease_seconds = {LEASE_SECONDS}
poll_seconds = {POLL_SECONDS}
[plans.limited]
requests_per_minute = {PLAN_PER_MINUTE}
""",
            encoding="utf-8",
        )
        return path

    def start(self) -> None:
        for index, port in enumerate(self.ports):
            server = ServerProcess(self.config(index), port, spawn=popen)  # forked warm
            server.start()
            self.servers.append(server)
        conf = NGINX_CONF.read_text(encoding="utf-8")
        for n, port in enumerate(self.ports, start=1):
            conf = conf.replace(f"127.0.0.1:808{n}", f"127.0.0.1:{port}")
        conf = conf.replace("listen 127.0.0.1:8080;", f"listen 127.0.0.1:{self.lb_port};")
        (self.tmp / "nginx.conf").write_text(conf, encoding="utf-8")
        globals_ = f"daemon off; pid {self.tmp}/nginx.pid; error_log {self.tmp}/nginx.log;"
        self.nginx = subprocess.Popen(
            [NGINX, "-c", str(self.tmp / "nginx.conf"), "-p", str(self.tmp), "-g", globals_]
        )
        wait_http(f"{self.base}/healthz", 15)

    def stop(self) -> None:
        if self.nginx is not None:
            self.nginx.terminate()
            self.nginx.wait(10)
        for server in self.servers:
            server.stop()

    def key(self, email: str) -> str:
        return api_key(self.config(0), email, popen)

    def cli(self, *args: str, stdin: str | None = None) -> None:
        done = run(list(args), self.tmp, stdin, AGENTSVC_CONFIG=str(self.config(0)))
        assert done.returncode == 0, done.stderr


@pytest.fixture
def cluster(tmp_path):
    running = Cluster(tmp_path)
    try:
        running.start()
        yield running
    finally:
        running.stop()


def bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


async def test_three_processes_act_as_one(cluster, idp):
    limited = cluster.key("limited@example.com")
    cluster.cli("team", "set-plan", "--email", "limited@example.com", "--plan", "limited")
    revoked, admin = cluster.key("keys@example.com"), cluster.key("keys@example.com")
    forms = cluster.key("forms@example.com")
    async with aiohttp.ClientSession() as http:
        await plan_limit_holds_across_processes(cluster, http, limited)
        await revoked_key_is_refused_everywhere_within_a_second(cluster, http, revoked, admin)
        await scim_changes_reach_every_process_within_a_second(cluster, idp)
        await deliveries_survive_a_killed_process(cluster, http, forms)


async def plan_limit_holds_across_processes(cluster, http, key: str) -> None:
    started = time.monotonic()
    statuses = []
    for _ in range(3 * PLAN_PER_MINUTE):
        async with http.get(f"{cluster.base}/api/v1/agents", headers=bearer(key)) as resp:
            statuses.append(resp.status)
    elapsed = time.monotonic() - started
    accepted = statuses.count(200)
    # The bucket holds a minute's worth; it refills at the plan's rate meanwhile.
    assert accepted <= PLAN_PER_MINUTE + 1 + int(elapsed * PLAN_PER_MINUTE / 60), statuses
    assert accepted >= PLAN_PER_MINUTE - 1, statuses
    assert set(statuses) == {200, 429}


async def revoked_key_is_refused_everywhere_within_a_second(cluster, http, key, admin) -> None:
    processes = [f"http://127.0.0.1:{port}" for port in cluster.ports]
    for base in processes:  # each process has the key in its cache now
        async with http.get(f"{base}/api/v1/agents", headers=bearer(key)) as resp:
            assert resp.status == 200
    async with http.get(f"{cluster.base}/api/v1/api-keys", headers=bearer(admin)) as resp:
        keys = (await resp.json())["data"]
    target = next(k for k in keys if key.endswith(k["last4"]) and not admin.endswith(k["last4"]))
    revoked_at = time.monotonic()
    url = f"{processes[0]}/api/v1/api-keys/{target['id']}"
    async with http.delete(url, headers=bearer(admin)) as resp:
        assert resp.status == 200, await resp.text()

    async def refused_after(base: str) -> float:
        while True:
            async with http.get(f"{base}/api/v1/agents", headers=bearer(key)) as resp:
                if resp.status == 401:
                    return time.monotonic() - revoked_at
            assert time.monotonic() - revoked_at < 5, f"{base} still accepts the key"
            await asyncio.sleep(0.02)

    delays = await asyncio.gather(*(refused_after(base) for base in processes))
    assert max(delays) < 1.0, delays


async def deliveries_survive_a_killed_process(cluster, http, key: str) -> None:
    receiver = await WebhookReceiver(slow_seconds=2.0).start()
    try:
        async with http.post(
            f"{cluster.base}/api/v1/agents", json={"name": "Shop"}, headers=bearer(key)
        ) as resp:
            agent_id = (await resp.json())["data"]["id"]
        tool_body = {
            "agentId": agent_id,
            "name": "contact",
            "description": "Collect contact details",
            "executionType": "form",
            "inputSchema": {"type": "object", "properties": {}},
            "formSchema": {"fields": [{"name": "email", "label": "E-mail", "type": "email"}]},
            "formExecutionMode": "webhook",
            "formWebhookUrl": receiver.url("/slow"),
        }
        async with http.post(
            f"{cluster.base}/api/v1/tools", json=tool_body, headers=bearer(key)
        ) as r:
            assert r.status == 201, await r.text()
            tool_id = (await r.json())["id"]

        async def submit(n: int) -> str | None:
            body = {
                "toolId": tool_id,
                "formData": {"email": f"v{n}@example.com"},
                "fieldsCompleted": ["email"],
            }
            url = f"{cluster.base}/api/v1/form-submissions/submit"
            async with http.post(url, json=body) as r:
                return (await r.json())["submissionId"] if r.status == 200 else None

        # Nine at once, round robin: three for each process, each first attempt held open
        # by the slow receiver (a submit waits for its first attempt).
        submits = [asyncio.ensure_future(submit(n)) for n in range(9)]
        deadline = time.monotonic() + 10
        while len(receiver.hooks) < len(submits):  # every one is being sent now
            assert time.monotonic() < deadline, len(receiver.hooks)
            await asyncio.sleep(0.02)
        cluster.servers[1].kill()  # SIGKILL while its attempts wait on the slow receiver
        answered = [sub_id for sub_id in await asyncio.gather(*submits) if sub_id]
        # Accepted: stored and being sent (the killed process's submits got no answer, but
        # their rows were committed before their first attempt began).
        submission_ids = sorted({_submission_of(hook) for hook in receiver.hooks})
        assert set(answered) < set(submission_ids)

        deadline = time.monotonic() + LEASE_SECONDS + 20
        pending = set(submission_ids)
        while pending:
            assert time.monotonic() < deadline, f"not delivered: {pending}"
            for sub_id in list(pending):
                url = f"{cluster.base}/api/v1/form-submissions/{sub_id}"
                async with http.get(url, headers=bearer(key)) as r:
                    if r.status == 200 and (await r.json())["status"] == "webhook_success":
                        pending.discard(sub_id)
            await asyncio.sleep(0.2)
        ids_by_submission: dict[str, set[str]] = {}
        for hook in receiver.hooks:
            ids_by_submission.setdefault(_submission_of(hook), set()).add(
                hook.headers["webhook-id"]
            )
        assert set(ids_by_submission) == set(submission_ids)
        # One webhook-id per submission, however many attempts it took.
        assert all(ids == {sub_id} for sub_id, ids in ids_by_submission.items())
        # The killed process's attempts were made again by the others.
        assert len(receiver.hooks) > len(submission_ids)
    finally:
        await receiver.close()


def _submission_of(hook) -> str:
    return re.search(r'"submissionId":\s*"([^"]+)"', hook.body.decode()).group(1)


@pytest.fixture(scope="module")
def idp(tmp_path_factory):
    yield from provider_for_module(tmp_path_factory)


async def scim_changes_reach_every_process_within_a_second(cluster, idp) -> None:
    """Issue 35: a SCIM role change (through a group) and a deactivation are seen by every
    process within a second (each had the member's session in its cache)."""
    owner = bearer(cluster.key("owner@example.com"))
    processes = [f"http://127.0.0.1:{port}" for port in cluster.ports]
    async with aiohttp.ClientSession(cookie_jar=aiohttp.DummyCookieJar()) as http:
        sso = oidc_body(idp.issuer, roleMapping={"support-admins": "admin"})
        async with http.put(f"{cluster.base}/api/v1/team/sso", json=sso, headers=owner) as r:
            assert r.status == 200, await r.text()
        async with http.get(f"{cluster.base}/api/v1/auth/session", headers=owner) as r:
            team_id = (await r.json())["data"]["team"]["id"]
        cluster.cli("team", "verify-domain", "--team", team_id, "example.com")  # as operators do
        async with http.post(f"{cluster.base}/api/v1/team/scim-token", headers=owner) as r:
            scim = scim_headers((await r.json())["token"])
        base = f"{cluster.base}{BASE}"
        async with http.post(
            f"{base}/Users", json=okta_user("lead@example.com"), headers=scim
        ) as r:
            user_id = (await r.json(content_type=None))["id"]
        group = {"displayName": "support-admins", "members": []}
        async with http.post(f"{base}/Groups", json=group, headers=scim) as r:
            group_id = (await r.json(content_type=None))["id"]
        cluster.cli(
            "user",
            "set-password",
            "--email",
            "lead@example.com",
            "--password-stdin",
            stdin="correct horse battery\n",
        )
        sign_in = {"email": "lead@example.com", "password": "correct horse battery"}
        async with http.post(f"{cluster.base}/api/v1/auth/sign-in/email", json=sign_in) as r:
            assert r.status == 200, await r.text()
            lead = {"Cookie": f"agentsvc_session={r.cookies['agentsvc_session'].value}"}

        async def status(url: str) -> int:
            async with http.get(url, headers=lead) as resp:
                return resp.status

        async def everywhere(path: str, expected: int, changed_at: float) -> float:
            async def seen_by(process: str) -> float:
                while await status(f"{process}{path}") != expected:
                    assert time.monotonic() - changed_at < 5, f"{process} did not follow"
                    await asyncio.sleep(0.02)
                return time.monotonic() - changed_at

            return max(await asyncio.gather(*(seen_by(p) for p in processes)))

        for process in processes:  # each caches the session as a member's
            assert await status(f"{process}/api/v1/team/sso") == 403
        add = {"Operations": [{"op": "add", "path": "members", "value": [{"value": user_id}]}]}
        promoted_at = time.monotonic()
        async with http.patch(f"{base}/Groups/{group_id}", json=add, headers=scim) as r:
            assert r.status == 200, await r.text()
        assert await everywhere("/api/v1/team/sso", 200, promoted_at) < 1.0
        off = {"Operations": [{"op": "replace", "value": {"active": False}}]}
        deactivated_at = time.monotonic()
        async with http.patch(f"{processes[1]}{BASE}/Users/{user_id}", json=off, headers=scim) as r:
            assert r.status == 200, await r.text()
        assert await everywhere("/api/v1/agents", 401, deactivated_at) < 1.0
