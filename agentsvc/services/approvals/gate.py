"""The gate a tool call passes when its tool requires a person's approval.

When the model calls such tools, the turn pauses (`hold`): the pause and one approval per
held call are stored, the stream hears `approval_pending`, and the team sees the calls in
its inbox. On the web (the visitor's open stream) the turn waits for each decision and goes
on in the same stream; its process holds the pause with a lease renewed while the turn
runs. Elsewhere (a channel, whose reply cannot wait) the turn is left paused at once and
taken up by `Resumer` when every call is decided. Either way an approved call's tool runs
once: `ran_at` is set before it runs, and a call found begun but without an output is
never run again.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from typing import Any

from agentsvc.config import ApprovalSettings
from agentsvc.db import Database
from agentsvc.ids import iso, new_id, now_iso, parse_iso
from agentsvc.llm.base import ToolCall
from agentsvc.services import audit
from agentsvc.services.approvals import state
from agentsvc.services.approvals.signals import ApprovalSignals
from agentsvc.services.audit import Actor
from agentsvc.services.chat.pause import PausePoint, Result, Resume, TurnParked
from agentsvc.services.chat.turn import ClientGone, EventSink, ToolRunnerLike
from agentsvc.services.tools.mcp import offered
from agentsvc.services.tools.rules import DEFAULT_APPROVAL_TIMEOUT_SECONDS
from agentsvc.store import approvals as store
from agentsvc.store import tools as tools_store
from agentsvc.store.approvals import Approval, PausedTurn
from agentsvc.store.tools import Tool

log = logging.getLogger(__name__)

INTERRUPTED = (
    "The call was interrupted when the service stopped; it is not run again, in case it"
    " had already done its work"
)
# What a held call's place holds while the turn is left paused (never read by the model).
_LEFT: Result = ("", True, None)


def duration(seconds: float) -> str:
    """A duration in words: "45 seconds", "15 minutes", "1 hour", "2 days"."""
    for unit, size in (("day", 86400), ("hour", 3600), ("minute", 60)):
        if seconds >= size and seconds % size == 0 or seconds >= 2 * size:
            count = round(seconds / size)
            return f"{count} {unit}{'s' if count != 1 else ''}"
    count = max(1, round(seconds))
    return f"{count} second{'s' if count != 1 else ''}"


def expiry_reason(approval: Approval) -> str:
    waited = (parse_iso(approval.expires_at) - parse_iso(approval.created_at)).total_seconds()
    return f"No one from the team decided within {duration(waited)}"


def refusal(approval: Approval) -> str:
    """What the model reads for a call that did not run."""
    if approval.status == "denied":
        return f"A person from the team did not approve this call. Their reason: {approval.reason}"
    return f"This call was not run: {approval.reason}."


def pending_event(approval: Approval) -> dict[str, Any]:
    return {
        "type": "approval_pending",
        "approvalId": approval.id,
        "toolUseId": approval.tool_use_id,
        "toolName": approval.tool_name,
        "input": approval.input,
        "expiresAt": approval.expires_at,
    }


def decided_event(approval: Approval) -> dict[str, Any]:
    return {
        "type": "approval_decided",
        "approvalId": approval.id,
        "toolUseId": approval.tool_use_id,
        "toolName": approval.tool_name,
        "status": approval.status,
        "input": ran_input(approval),
        "reason": approval.reason,
    }


def ran_input(approval: Approval) -> dict[str, Any]:
    """The input the call runs with: a member's edit, else the model's."""
    return approval.edited_input if approval.edited_input is not None else approval.input


def _later(seconds: float) -> str:
    return iso(datetime.now(UTC) + timedelta(seconds=seconds))


def new_holder() -> str:
    """A random token naming whoever holds a pause (a stream, a process taking it up)."""
    return secrets.token_urlsafe(12)


@dataclass(frozen=True, slots=True)
class GateDeps:
    db: Database
    runner: ToolRunnerLike  # runs an approved call's tool
    signals: ApprovalSignals
    settings: ApprovalSettings


class Gate:
    """Pauses turns at tools that require approval, and runs approved calls once."""

    def __init__(self, deps: GateDeps):
        self._deps = deps
        self._db = deps.db
        self.signals = deps.signals
        self._holding: set[asyncio.Task[None]] = set()
        self._releasing: set[asyncio.Task[None]] = set()
        # Approved calls whose tool runs now, by pause: their pause is let go after them.
        self._running: dict[str, set[asyncio.Task[Result]]] = {}

    def requires(self, tool: Tool) -> bool:
        """Whether a call of this tool waits for a person (a form never does)."""
        return tool.requires_approval and tool.execution_type != "form"

    async def hold(self, point: PausePoint, sink: EventSink) -> Held | None:
        """Pause the turn for the calls whose tools require approval (None: none do)."""
        turn = point.turn
        tools = [(c, turn.tools.get(c.name)) for c in point.calls if c.input is not None]
        held = [(c, t) for c, t in tools if t is not None and self.requires(t)]
        if not held:
            return None
        waits = turn.channel == "web"  # a channel's reply cannot wait: left paused
        holder = new_holder() if waits else None
        now = datetime.now(UTC)
        pause = PausedTurn(
            id=new_id("paused_turn"),
            conversation_id=turn.conversation.id,
            team_id=turn.conversation.team_id,
            message_id=turn.message_id,
            state=state.encode(point),
            status="waiting",
            holder=holder,
            lease_until=_later(self._deps.settings.lease_seconds) if waits else None,
            created_at=iso(now),
        )
        approvals = [_approval(pause, turn.agent.id, call, tool, now) for call, tool in held]
        async with self._db.write() as tx:
            await store.supersede(tx, pause.message_id, pause.id)  # a turn paused before
            await store.insert_pause(tx, pause, approvals)
        await self._deps.signals.changed(pause.team_id)
        task = asyncio.current_task()
        if holder is not None and task is not None:
            self.keep(pause.id, holder, task)
        # A visitor gone meanwhile is noticed at the turn's next write: the pause stands.
        with contextlib.suppress(ClientGone):
            for approval in approvals:
                await sink.event("approval_pending", pending_event(approval))
        return Held(self, pause, approvals, sink, waits=waits)

    # ── leases ──────────────────────────────────────────────────────────────────────────

    def keep(self, pause_id: str, holder: str, task: asyncio.Task[Any]) -> None:
        """Hold the pause while `task` (the turn) runs: its lease renewed, then let go."""
        keeping = asyncio.ensure_future(self._hold(pause_id, holder, task))
        self._holding.add(keeping)
        keeping.add_done_callback(self._holding.discard)

    async def _hold(self, pause_id: str, holder: str, task: asyncio.Task[Any]) -> None:
        lease = self._deps.settings.lease_seconds
        try:
            while True:
                await asyncio.wait({task}, timeout=lease / 3)
                if task.done() or not await self.renew(pause_id, holder):
                    return
        finally:
            release = asyncio.ensure_future(self._release(pause_id, holder))
            self._releasing.add(release)
            release.add_done_callback(self._releasing.discard)
            await asyncio.shield(release)

    def run_once(self, pause_id: str, approval: Approval) -> asyncio.Task:
        """`execute` in a task of its own: a tool that began runs to its end (and its output
        is kept) even when the turn stops meanwhile; its pause is let go after it."""
        running = asyncio.ensure_future(self.execute(approval))
        tasks = self._running.setdefault(pause_id, set())
        tasks.add(running)

        def done(_: asyncio.Task) -> None:
            tasks.discard(running)
            if not tasks and self._running.get(pause_id) is tasks:
                del self._running[pause_id]

        running.add_done_callback(done)
        return running

    async def renew(self, pause_id: str, holder: str) -> bool:
        """Extend the holder's lease; False when the pause is no longer theirs."""
        async with self._db.write() as tx:
            return await store.renew(
                tx, pause_id, holder, _later(self._deps.settings.lease_seconds)
            )

    async def _release(self, pause_id: str, holder: str) -> None:
        running = self._running.get(pause_id)
        if running:  # bounded: at shutdown, a slow tool's output is then not known
            await asyncio.wait(set(running), timeout=self._deps.settings.lease_seconds)
        try:
            async with self._db.write() as tx:
                await store.release(tx, pause_id, holder)
        except Exception:  # noqa: BLE001 (the lease runs out by itself)
            log.warning("could not let go of paused turn %s", pause_id, exc_info=True)

    async def close(self) -> None:
        """Stop holding (at shutdown): each pause is let go, or left to its lease."""
        for task in list(self._holding):
            task.cancel()
        await asyncio.gather(*self._holding, return_exceptions=True)
        # A holder cancelled while letting go: its write ends before the database closes.
        await asyncio.gather(*self._releasing, return_exceptions=True)

    # ── decisions ───────────────────────────────────────────────────────────────────────

    async def decision(self, approval: Approval) -> Approval:
        """Wait until a person decides the call (or its time runs out)."""
        poll = self._deps.settings.lease_seconds / 3
        with self._deps.signals.listen(approval.team_id) as changed:
            while True:
                changed.clear()
                found = await store.get(self._db.reader, approval.team_id, approval.id)
                if found is None:
                    raise TurnParked()  # the conversation was deleted meanwhile
                if found.status != "pending":
                    return found
                left = (parse_iso(found.expires_at) - datetime.now(UTC)).total_seconds()
                if left <= 0:
                    await self.expire([found])
                    continue
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(min(left, poll)):
                        await changed.wait()

    async def expire(self, due: list[Approval]) -> None:
        """Deny the calls whose time to be approved ran out, each with its reason."""
        now = now_iso()
        teams = set()
        async with self._db.write() as tx:
            for approval in due:
                reason = expiry_reason(approval)
                fields = {"status": "expired", "reason": reason, "decided_at": now}
                if await store.decide(tx, approval.id, fields):
                    teams.add(approval.team_id)
                    await audit.record_in(
                        tx,
                        Actor(user_id=None, team_id=approval.team_id),
                        "approval.expired",
                        target_type="approval",
                        target_id=approval.id,
                        label=approval.tool_name,
                        details={"conversationId": approval.conversation_id, "reason": reason},
                    )
        for team_id in teams:
            await self._deps.signals.changed(team_id)

    async def expire_due(self, batch: int = 200) -> None:
        """Deny every call whose time ran out (the sweep: nobody may be waiting for it)."""
        due = await store.due(self._db.reader, now_iso(), batch)
        if due:
            await self.expire(due)

    # ── running ─────────────────────────────────────────────────────────────────────────

    async def execute(self, approval: Approval) -> Result:
        """The decided call's result: its tool (as it is now) run once when approved, else
        why not."""
        if approval.status != "approved":
            return refusal(approval), True, None
        tool = await tool_of(self._db, approval)
        if tool is None:
            return (
                f"The tool {approval.tool_name} is no longer available; it was not run",
                True,
                None,
            )
        async with self._db.write() as tx:
            started = await store.start_run(tx, approval.id, now_iso())
        if not started:  # begun before: its output, or it stopped half-way
            again = await store.get(self._db.reader, approval.team_id, approval.id)
            if again is not None and again.output is not None:
                return again.output, bool(again.is_error), None
            return INTERRUPTED, True, None
        try:
            result = await self._deps.runner.run(tool, ran_input(approval))
            output, is_error = result.output, bool(result.is_error)
        except Exception:  # noqa: BLE001 (a tool's failure is the model's to read)
            log.exception("tool %s failed", tool.id)
            output, is_error = f"Tool {tool.name} failed unexpectedly", True
        async with self._db.write() as tx:
            await store.set_output(tx, approval.id, output, is_error)
        return output, is_error, None

    async def keep_results(self, pause: PausedTurn, results: dict[str, list[Any]]) -> None:
        """Keep the results of the response's other calls with the pause."""
        if results:
            kept = {**pause.state, "results": results}
            async with self._db.write() as tx:
                await store.set_state(tx, pause.id, kept)

    async def resume_of(self, pause: PausedTurn) -> Resume:
        """Every call's result for a decided pause taken up (approved calls run once)."""
        kept = pause.state
        decided = {a.tool_use_id: a for a in await store.of_pause(self._db.reader, pause.id)}
        calls, results = [], []
        for call in state.calls(kept):
            approval = decided.get(call.id)
            if approval is None:
                found = kept["results"].get(call.id)
                results.append((found[0], found[1], None) if found else (INTERRUPTED, True, None))
            else:
                results.append(await self.execute(approval))
                call = replace(call, input=ran_input(approval))
            calls.append(call)
        return Resume(
            kept["step"], state.context(kept), tuple(calls), tuple(results), state.produced(kept)
        )


async def tool_of(db: Database, approval: Approval) -> Tool | None:
    """The call's tool as the agent offers it now (None: deleted or disabled since)."""
    tools = await tools_store.list_enabled_for_agent(db.reader, approval.agent_id)
    return next((t for t in offered(tools) if t.name == approval.tool_name), None)


def _approval(pause: PausedTurn, agent_id: str, call: ToolCall, tool: Tool, now: datetime):
    timeout = tool.approval_timeout_seconds or DEFAULT_APPROVAL_TIMEOUT_SECONDS
    return Approval(
        id=new_id("approval"),
        pause_id=pause.id,
        conversation_id=pause.conversation_id,
        team_id=pause.team_id,
        agent_id=agent_id,
        tool_id=tool.id,
        tool_name=call.name,
        tool_use_id=call.id,
        input=call.input or {},
        edited_input=None,
        status="pending",
        reason=None,
        decided_by=None,
        decided_by_name=None,
        decided_at=None,
        expires_at=iso(now + timedelta(seconds=timeout)),
        ran_at=None,
        output=None,
        is_error=None,
        created_at=iso(now),
    )


class Held:
    """The held calls of one model response, for the turn that paused on them."""

    def __init__(
        self,
        gate: Gate,
        pause: PausedTurn,
        approvals: list[Approval],
        sink: EventSink,
        *,
        waits: bool,
    ):
        self._gate = gate
        self._pause = pause
        self._approvals = {a.tool_use_id: a for a in approvals}
        self._decided: dict[str, Approval] = {}
        self._sink = sink
        self._waits = waits

    def holds(self, call: ToolCall) -> bool:
        return call.id in self._approvals

    async def run(self, call: ToolCall) -> Result:
        """Wait for the call's decision, then run its tool once (or say why not)."""
        if not self._waits:
            return _LEFT
        decided = await self._gate.decision(self._approvals[call.id])
        self._decided[call.id] = decided
        await self._sink.event("approval_decided", decided_event(decided))
        running = self._gate.run_once(self._pause.id, decided)
        return await asyncio.shield(running)

    async def settled(self, calls: list[ToolCall], results: list[Result]) -> list[ToolCall]:
        """Keep the other calls' results, then go on (the calls as they ran), or leave the
        turn paused (TurnParked) when it cannot wait or is no longer this stream's."""
        others = {
            c.id: [r[0], r[1]]
            for c, r in zip(calls, results, strict=True)
            if c.id not in self._approvals
        }
        await self._gate.keep_results(self._pause, others)
        holder = self._pause.holder
        if not self._waits or holder is None or not await self._gate.renew(self._pause.id, holder):
            raise TurnParked()
        return [
            replace(c, input=ran_input(self._decided[c.id])) if c.id in self._decided else c
            for c in calls
        ]
