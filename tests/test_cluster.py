"""Three `agentsvc serve` processes behind nginx on one PostgreSQL and one Redis act as one
service: limits are shared, every accepted submission is delivered (one process killed
with SIGKILL mid-delivery), a revoked key is refused by every process within 1 s, and so
are a SCIM deactivation and a role given by a SCIM group (issue 35); a channel's message
arriving at several processes makes one turn and one reply, and a killed process's replies
and waiting messages are taken over (issue 32); a tool call's approval given through one
process lets the visitor's stream in another go on (issue 36).

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
from collections import Counter
from pathlib import Path

import aiohttp
import orjson
import pytest

from agentsvc.llm.sse import SseParser
from tests.support import pg
from tests.support.channel_platforms import TELEGRAM_TOKEN
from tests.support.channels import message, signed
from tests.support.cluster_http import bearer, contact_form, created
from tests.support.fakes import openai_server as oai
from tests.support.fakes.telegram import FakeTelegram
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
REFUND_A1 = '/tool refund {"order": "A1"}'  # the builtin model calls the tool
LEASE_SECONDS = 4
POLL_SECONDS = 0.5

pytestmark = pytest.mark.skipif(
    not (pg.SERVER_URL and REDIS_URL and NGINX),
    reason="needs PostgreSQL, Redis and nginx (bash scripts/test.sh starts them)",
)


class Cluster:
    def __init__(self, tmp_path: Path, extra: str = ""):
        self.tmp = tmp_path
        self.extra = extra  # more TOML for every process (sections the config lacks)
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
{self.extra}""",
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


def _running(cluster: Cluster):
    try:
        cluster.start()
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture
def cluster(tmp_path):
    yield from _running(Cluster(tmp_path))


async def test_three_processes_act_as_one(cluster, idp):
    limited = cluster.key("limited@example.com")
    cluster.cli("team", "set-plan", "--email", "limited@example.com", "--plan", "limited")
    revoked, admin = cluster.key("keys@example.com"), cluster.key("keys@example.com")
    forms = cluster.key("forms@example.com")
    approver = cluster.key("approvals@example.com")
    async with aiohttp.ClientSession() as http:
        await an_approval_in_one_process_reaches_a_stream_in_another(cluster, http, approver)
        await plan_limit_holds_across_processes(cluster, http, limited)
        await revoked_key_is_refused_everywhere_within_a_second(cluster, http, revoked, admin)
        await scim_changes_reach_every_process_within_a_second(cluster, idp)
        await deliveries_survive_a_killed_process(cluster, http, forms)


async def an_approval_in_one_process_reaches_a_stream_in_another(cluster, http, key) -> None:
    """Issue 36: a visitor's stream waits in process 0 for a tool call's approval; a member
    approves it through process 2; the stream goes on with the tool's result and the
    answer, and nginx's view of the approval says it was decided."""
    auth = bearer(key)
    first, third = (f"http://127.0.0.1:{port}/api/v1" for port in cluster.ports[::2])
    agents = f"{cluster.base}/api/v1/agents"
    agent_id = (await created(http, agents, {"name": "Refunds"}, key))["data"]["id"]
    tool = {
        "agentId": agent_id,
        "name": "refund",
        "description": "Refund an order",
        "executionType": "mock",
        "mockResponse": '{"refunded": true}',
        "inputSchema": {"type": "object", "properties": {"order": {"type": "string"}}},
        "requiresApproval": True,
    }
    await created(http, f"{cluster.base}/api/v1/tools", tool, key)
    ask = {"agentId": agent_id, "messages": [{"role": "user", "content": REFUND_A1}]}
    async with http.post(f"{first}/chat", json=ask, headers=auth) as stream:
        events = SseEvents(stream)
        pending = await events.until("approval_pending")
        approve = f"{third}/approvals/{pending['approvalId']}/approve"
        async with http.post(approve, json={}, headers=auth) as decided:
            assert decided.status == 200, await decided.text()
        await events.until("message_stop")
    names = [name for name, _ in events.seen]
    assert names.index("approval_pending") < names.index("approval_decided")
    assert "error" not in names
    [result] = [data for name, data in events.seen if name == "tool_result"]
    assert "refunded" in orjson.dumps(result).decode()
    url = f"{cluster.base}/api/v1/approvals/{pending['approvalId']}"
    async with http.get(url, headers=auth) as resp:
        assert (await resp.json())["data"]["status"] == "approved"


class SseEvents:
    """The events of an open aiohttp response, read as far as asked."""

    def __init__(self, resp) -> None:
        self.resp, self.parser, self.seen = resp, SseParser(), []

    async def until(self, name: str) -> dict:
        async with asyncio.timeout(20):
            while True:
                for seen_name, data in self.seen:
                    if seen_name == name:
                        return data
                chunk = await self.resp.content.readany()
                assert chunk, self.seen
                self.seen += [(e.event, orjson.loads(e.data)) for e in self.parser.feed(chunk)]


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
        agents = f"{cluster.base}/api/v1/agents"
        agent_id = (await created(http, agents, {"name": "Shop"}, key))["data"]["id"]
        tool_body = contact_form(agent_id, receiver.url("/slow"))
        tool_id = (await created(http, f"{cluster.base}/api/v1/tools", tool_body, key))["id"]

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


# ── channels on several processes (issue 32) ─────────────────────────────────────────────

FRUITS = (
    "apple banana cherry damson elder fig grape hazel iris juniper kiwi lemon mango nectar"
    " olive peach quince rowan sage thyme"
).split()
# The builtin model answers with the sentence that shares the question's words: each
# message has a reply of its own ("Where is the fig?" "Locker 5 holds the fig.").
LOCKERS = " ".join(f"Locker {n} holds the {fruit}." for n, fruit in enumerate(FRUITS))
RESUME_AFTER_SECONDS = 2
SLOW_REPLY_SECONDS = 2.0  # the receiver holds each reply to the `pending` channel this long
MODEL_HOLD_SECONDS = 6.0  # the first turn of the slow agent waits this long on its model


@pytest.fixture
def channel_cluster(tmp_path, openai_fake):
    extra = f"""
[channels]
resume_after_seconds = {RESUME_AFTER_SECONDS}
[providers.oai]
kind = "openai"
base_url = "{openai_fake.base_url}"
api_key = "k"
max_retries = 0
"""
    yield from _running(Cluster(tmp_path, extra))


async def test_channel_messages_are_answered_once_by_the_cluster(channel_cluster, openai_fake):
    """Issue 32: a platform message may reach any process, and again another (a retry):
    it makes one turn and one reply; a process killed with replies under way and messages
    waiting for their turn loses none of them."""
    cluster = channel_cluster
    auth = bearer(cluster.key("channels@example.com"))
    receiver = await WebhookReceiver(slow_seconds=SLOW_REPLY_SECONDS).start()
    telegram = await FakeTelegram(tokens={TELEGRAM_TOKEN}).start()
    try:
        async with aiohttp.ClientSession() as http:
            doors = Doors(cluster, http, auth)
            shop = await doors.agent({"name": "Lockers", "systemPrompt": LOCKERS})
            await every_message_answered_once(doors, shop, receiver, telegram)
            await a_killed_process_loses_no_reply(doors, shop, receiver, openai_fake)
    finally:
        await telegram.close()
        await receiver.close()


class Doors:
    """The cluster's ways in: the API (through the first process) and each channel's
    inbound address, through nginx or one process."""

    def __init__(self, cluster: Cluster, http: aiohttp.ClientSession, auth: dict[str, str]):
        self.cluster = cluster
        self.http = http
        self.auth = auth
        self.processes = [f"http://127.0.0.1:{port}" for port in cluster.ports]

    async def _created(self, path: str, body: dict) -> dict:
        url = f"{self.processes[0]}/api/v1{path}"
        async with self.http.post(url, json=body, headers=self.auth) as resp:
            assert resp.status == 201, await resp.text()
            return (await resp.json())["data"]

    async def agent(self, body: dict) -> str:
        return (await self._created("/agents", body))["id"]

    async def channel(self, agent_id: str, kind: str, config: dict) -> dict:
        return await self._created(f"/agents/{agent_id}/channels", {"type": kind, "config": config})

    async def deliver(self, door: str, channel: dict, body: bytes, headers: dict) -> bool:
        """POST a platform's message to the channel through a door; whether it was a
        duplicate."""
        url = f"{door}/api/v1/channels/{channel['id']}/inbound"
        async with self.http.post(url, data=body, headers=headers) as resp:
            assert resp.status == 202, await resp.text()
            return (await resp.json())["data"]["duplicate"]

    async def api_message(self, door: str, channel: dict, user: str, text: str, id_: str):
        body = message(user, text, id_)
        return await self.deliver(door, channel, body, signed(channel["secret"], body, id_))

    async def channel_view(self, channel: dict) -> dict:
        url = f"{self.processes[0]}/api/v1/channels/{channel['id']}"
        async with self.http.get(url, headers=self.auth) as resp:
            assert resp.status == 200, await resp.text()
            return (await resp.json())["data"]


async def until(done, what: str, seconds: float) -> None:
    """Wait (bounded) until `done()` holds."""
    deadline = time.monotonic() + seconds
    while not done():
        assert time.monotonic() < deadline, f"still waiting: {what}"
        await asyncio.sleep(0.05)


def _locker(n: int) -> str:
    return f"Locker {n} holds the {FRUITS[n]}."


async def every_message_answered_once(doors: Doors, shop: str, receiver, telegram) -> None:
    """40 messages from 8 people on an api and a telegram channel, each arriving three
    times at once: through nginx and straight at two processes (a platform's retry that
    lands elsewhere). One of the three is taken, one reply goes out for each."""
    api = await doors.channel(shop, "api", {"outboundUrl": receiver.url("/ok")})
    bot = await doors.channel(
        shop, "telegram", {"botToken": TELEGRAM_TOKEN, "apiBaseUrl": telegram.base_url}
    )
    assert telegram.webhooks[TELEGRAM_TOKEN][0] == bot["inboundUrl"]

    def entrances(n: int) -> list[str]:
        return [doors.cluster.base, doors.processes[n % 3], doors.processes[(n + 1) % 3]]

    async def api_message(n: int) -> list[bool]:
        text, user = f"Where is the {FRUITS[n]}?", f"u-{n % 4}"
        return await asyncio.gather(
            *(doors.api_message(door, api, user, text, f"m-{n}") for door in entrances(n))
        )

    async def telegram_update(n: int) -> list[bool]:
        update = orjson.dumps(telegram.text_update(1001 + n % 4, f"Where is the {FRUITS[n]}?"))
        headers = telegram.headers_for(TELEGRAM_TOKEN)
        return await asyncio.gather(
            *(doors.deliver(door, bot, update, headers) for door in entrances(n))
        )

    count = len(FRUITS)
    arrivals = await asyncio.gather(
        *(api_message(n) for n in range(count)), *(telegram_update(n) for n in range(count))
    )
    assert all(sorted(duplicates) == [False, True, True] for duplicates in arrivals), arrivals

    def answered() -> bool:
        return len(receiver.at("/ok")) >= count and len(telegram.sent(TELEGRAM_TOKEN)) >= count

    await until(answered, "a reply to every message", 20)
    await asyncio.sleep(POLL_SECONDS * 3)  # a second reply of any would have gone by now
    replies = {}
    for hook in receiver.at("/ok"):
        assert hook.json["inReplyTo"] not in replies, f"two replies to {hook.json['inReplyTo']}"
        replies[hook.json["inReplyTo"]] = hook.json["text"]
    assert replies == {f"m-{n}": _locker(n) for n in range(count)}
    sent = Counter((int(p["chat_id"]), p["text"]) for p in telegram.sent(TELEGRAM_TOKEN))
    assert sent == Counter({(1001 + n % 4, _locker(n)) for n in range(count)})


async def a_killed_process_loses_no_reply(doors: Doors, shop: str, receiver, model) -> None:
    """One process received six messages whose replies are being sent (the receiver holds
    each for 2 s) and three of one person that wait behind that person's first, whose turn
    waits on its model; it is killed (SIGKILL). The others take over the replies it was
    sending once their lease ends (sent again with the same webhook-id: one reply each) and
    answer the three messages once they have waited `resume_after_seconds`. The turn under
    way in the killed process is not run again."""
    pending = await doors.channel(shop, "api", {"outboundUrl": receiver.url("/slow")})
    slow_agent = await doors.agent({"name": "Slow", "model": "oai/gpt-4o-mini"})
    waiting = await doors.channel(slow_agent, "api", {"outboundUrl": receiver.url("/ok")})
    model.script(
        oai.stream(oai.text_events(["Held up."]), delay=MODEL_HOLD_SECONDS),
        *(oai.stream(oai.text_events([f"Answer {n}."])) for n in range(3)),
    )
    victim = doors.processes[2]
    assert not await doors.api_message(victim, waiting, "ann", "First", "w-1")
    await until(lambda: len(model.requests) == 1, "the first turn asks its model", 5)
    for n in (2, 3, 4):  # recorded; their turns wait for the first one of ann's
        assert not await doors.api_message(victim, waiting, "ann", f"Message {n}", f"w-{n}")
    for n in range(6):
        text = f"Where is the {FRUITS[n]}?"
        assert not await doors.api_message(victim, pending, f"r-{n}", text, f"r-{n}")
    await until(lambda: len(receiver.at("/slow")) >= 6, "the six replies under way", 10)
    doors.cluster.servers[2].kill()

    def answered() -> set[str]:
        return {h.json["inReplyTo"] for h in receiver.at("/ok")} & {"w-2", "w-3", "w-4"}

    await until(lambda: len(answered()) == 3, "the waiting messages answered", 15)
    await until(lambda: len(receiver.at("/slow")) > 6, "a reply taken over", LEASE_SECONDS + 10)
    # Settled: no attempt for a while (a failed one would be tried again within a second).
    seen, deadline = -1, time.monotonic() + 20
    while seen != len(receiver.at("/slow")):
        assert time.monotonic() < deadline, "the replies are still being sent"
        seen = len(receiver.at("/slow"))
        await asyncio.sleep(SLOW_REPLY_SECONDS + 1.5)
    ids: dict[str, set[str]] = {}
    for hook in receiver.at("/slow"):
        ids.setdefault(hook.json["inReplyTo"], set()).add(hook.headers["webhook-id"])
    assert sorted(ids) == [f"r-{n}" for n in range(6)]
    assert all(len(attempts) == 1 for attempts in ids.values()), ids  # one reply each
    assert len(receiver.at("/slow")) <= 12  # the cut attempt and the one that took it over
    status = (await doors.channel_view(pending))["status"]
    assert status["lastError"] is None and status["lastOutboundAt"] is not None
    waited = Counter(
        h.json["inReplyTo"] for h in receiver.at("/ok") if h.json["inReplyTo"][:2] == "w-"
    )
    assert waited == Counter({"w-2": 1, "w-3": 1, "w-4": 1})  # w-1's turn died with its process
    assert len(model.requests) == 4  # the first turn, then one for each waiting message
