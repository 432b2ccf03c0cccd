"""Steady traffic through a load balancer, every request's outcome kept (tests/test_hosts.py).

A few bounded loops run side by side, each sending one request at a time with a short
pause: chat turns (an API key; the built-in model), form submissions delivered to a
webhook receiver, widget trigger events, and new agents. Each request leaves an `Outcome`:
when it started and ended, its status (None when no answer came: a refused or cut
connection, a timeout, a chat stream that ended before `message_stop`), and the id of what
it wrote when it was answered 2xx, so the test can look every one of them up afterwards.
"""

from __future__ import annotations

import asyncio
import itertools
import re
import time
from collections import Counter
from dataclasses import dataclass, field

import aiohttp
import orjson

PAUSE_SECONDS = 0.05
TIMEOUT = aiohttp.ClientTimeout(total=30)
_CONVERSATION = re.compile(rb'"conversationId":\s*"([^"]+)"')


@dataclass
class Outcome:
    kind: str
    started: float
    ended: float
    status: int | None
    written: str | None = None  # the id of what a 2xx wrote
    detail: str = ""

    @property
    def ok(self) -> bool:
        return self.status is not None and 200 <= self.status < 300


@dataclass
class Target:
    """What the loops talk to: the balancer's base URL and the fixtures they use."""

    base: str
    key: str
    agent_id: str
    tool_id: str
    trigger: dict


@dataclass
class SteadyLoad:
    target: Target
    outcomes: list[Outcome] = field(default_factory=list)
    _stopping: asyncio.Event = field(default_factory=asyncio.Event)
    _numbers: itertools.count = field(default_factory=itertools.count)
    _tasks: list[asyncio.Task] = field(default_factory=list)

    WORKERS = {"chat": 2, "submit": 2, "event": 2, "agent": 1}

    def start(self, http: aiohttp.ClientSession) -> None:
        for kind, workers in self.WORKERS.items():
            send = getattr(self, f"_{kind}")
            for _ in range(workers):
                self._tasks.append(asyncio.ensure_future(self._loop(http, kind, send)))

    async def stop(self) -> None:
        self._stopping.set()
        await asyncio.gather(*self._tasks)

    async def _loop(self, http, kind: str, send) -> None:
        while not self._stopping.is_set():
            started = time.monotonic()
            try:
                status, written, detail = await send(http, next(self._numbers))
            except (aiohttp.ClientError, TimeoutError) as exc:
                status, written, detail = None, None, type(exc).__name__
            self.outcomes.append(Outcome(kind, started, time.monotonic(), status, written, detail))
            await asyncio.sleep(PAUSE_SECONDS)

    def _auth(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.target.key}"}

    async def _chat(self, http, n: int):
        body = {
            "agentId": self.target.agent_id,
            "messages": [{"role": "user", "content": f"Where is parcel {n}?"}],
        }
        url = f"{self.target.base}/api/v1/chat"
        async with http.post(url, json=body, headers=self._auth(), timeout=TIMEOUT) as resp:
            raw = await resp.read()
        if resp.status != 200:
            return resp.status, None, raw[:200].decode(errors="replace")
        found = _CONVERSATION.search(raw)
        if b"event: message_stop" not in raw or found is None:
            return None, None, "the stream ended early"
        return 200, found.group(1).decode(), ""

    async def _submit(self, http, n: int):
        body = {
            "toolId": self.target.tool_id,
            "formData": {"email": f"visitor{n}@example.com"},
            "fieldsCompleted": ["email"],
        }
        url = f"{self.target.base}/api/v1/form-submissions/submit"
        async with http.post(url, json=body, timeout=TIMEOUT) as resp:
            raw = await resp.read()
        if resp.status != 200:
            return resp.status, None, raw[:200].decode(errors="replace")
        return 200, orjson.loads(raw)["submissionId"], ""

    async def _event(self, http, n: int):
        trigger = self.target.trigger
        body = {
            "agentId": self.target.agent_id,
            "triggerId": trigger["id"],
            "triggerName": trigger["name"],
            "triggerType": trigger["triggerType"],
            "actionType": trigger["actionType"],
            "eventType": "fired",
            "sessionId": f"session-{n % 50}",
        }
        url = f"{self.target.base}/api/v1/triggers/event"
        async with http.post(url, json=body, timeout=TIMEOUT) as resp:
            text = await resp.text()
        return resp.status, None, "" if resp.status == 202 else text[:200]

    async def _agent(self, http, n: int):
        url = f"{self.target.base}/api/v1/agents"
        body = {"name": f"Agent {n}"}
        async with http.post(url, json=body, headers=self._auth(), timeout=TIMEOUT) as resp:
            raw = await resp.read()
        if resp.status != 201:
            return resp.status, None, raw[:200].decode(errors="replace")
        return 201, orjson.loads(raw)["data"]["id"], ""

    # ── what happened ───────────────────────────────────────────────────────────────────
    def answered(self, kind: str) -> list[Outcome]:
        return [o for o in self.outcomes if o.kind == kind and o.ok]

    def failed(self) -> list[Outcome]:
        return [o for o in self.outcomes if not o.ok]

    def ok_after(self, moment: float) -> int:
        """Requests started after `moment` and answered 2xx."""
        return sum(1 for o in self.outcomes if o.started > moment and o.ok)

    def summary(self) -> dict[str, dict[str, int]]:
        sent = Counter(o.kind for o in self.outcomes)
        ok = Counter(o.kind for o in self.outcomes if o.ok)
        return {kind: {"sent": sent[kind], "ok": ok[kind]} for kind in sent}
