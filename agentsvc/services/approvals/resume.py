"""Taking up paused turns nobody waits for: any process, once every held call is decided.

A pause is taken when its calls are all decided and nobody holds it: the visitor left (or
the turn came through a channel, which never waits), the process that held it stopped, or
the service restarted. `sweep` (every `[approvals] sweep_seconds`, and at start-up) denies
the calls whose time ran out and takes up the decided pauses; a decision made through the
API takes its pause up at once. The turn goes on from where it paused, with no one
listening: its answer is stored in the conversation (the widget shows it when the visitor
is back), and on a channel it is sent as the reply.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from agentsvc.config import ApprovalSettings
from agentsvc.ids import iso, now_iso
from agentsvc.llm.base import ProviderError
from agentsvc.services.agents.registry import find_agent
from agentsvc.services.approvals import state
from agentsvc.services.approvals.gate import Gate, new_holder
from agentsvc.services.channels.buttons import Button, from_tool_result
from agentsvc.services.channels.replies import Reply, ReplyQueue
from agentsvc.services.chat.turn import Turn
from agentsvc.services.chat.turns import ChatTurns
from agentsvc.services.guardrails import hooks as guardrails
from agentsvc.services.tools.mcp import offered
from agentsvc.store import approvals as store
from agentsvc.store import conversations as conv_store
from agentsvc.store import tools as tools_store
from agentsvc.store.approvals import PausedTurn

log = logging.getLogger(__name__)
SWEEP_BATCH = 50


class _Collected:
    """A taken-up turn's stream, kept: its text and the quick replies of its tools."""

    def __init__(self) -> None:
        self.blocks: dict[int, list[str]] = {}
        self.buttons: tuple[Button, ...] = ()

    async def event(self, name: str, data: dict[str, Any]) -> None:
        if name == "tool_result":
            self.buttons = from_tool_result(data) or self.buttons

    async def delta(self, index: int, text: str) -> None:
        self.blocks.setdefault(index, []).append(text)

    async def keepalive(self) -> None:
        return None

    @property
    def text(self) -> str:
        return "\n\n".join("".join(parts) for _, parts in sorted(self.blocks.items()))


@dataclass(frozen=True, slots=True)
class ResumeDeps:
    gate: Gate
    turns: ChatTurns  # the turn goes on as every turn does
    replies: ReplyQueue  # a channel's answer goes out through the outbox
    settings: ApprovalSettings


class Resumer:
    """The paused turns this process takes up: a task each (one instance for the app)."""

    def __init__(self, deps: ResumeDeps):
        self._deps = deps
        self._turn_deps = deps.turns.deps
        self._db = self._turn_deps.log.db
        self._tasks: dict[str, asyncio.Task[None]] = {}

    async def sweep(self) -> None:
        """Deny the calls whose time ran out, then take up every decided pause."""
        await self._deps.gate.expire_due()
        for pause_id in await store.ready(self._db.reader, now_iso(), SWEEP_BATCH):
            self.start(pause_id)

    def start(self, pause_id: str) -> None:
        """Take the pause up when it can be (decided, nobody holding it)."""
        if pause_id in self._tasks:
            return
        task = asyncio.ensure_future(self._run(pause_id))
        self._tasks[pause_id] = task
        task.add_done_callback(lambda _: self._tasks.pop(pause_id, None))

    async def idle(self) -> None:
        """Until the turns taken up in this process have ended (tests)."""
        while self._tasks:
            await asyncio.wait(set(self._tasks.values()))

    async def close(self) -> None:
        """Stop: turns under way are left to their leases (and taken up again)."""
        tasks = list(self._tasks.values())
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    async def _run(self, pause_id: str) -> None:
        holder = new_holder()
        lease = iso(datetime.now(UTC) + timedelta(seconds=self._deps.settings.lease_seconds))
        async with self._db.write() as tx:
            if not await store.claim(tx, pause_id, holder, now_iso(), lease):
                return  # undecided, held by a stream or another process, or over
        task = asyncio.current_task()
        assert task is not None
        self._deps.gate.keep(pause_id, holder, task)  # let go (done) when the turn ends
        pause = await store.get_pause(self._db.reader, pause_id)
        if pause is None or await store.answered(self._db.reader, pause.message_id):
            return  # deleted, or its turn ended before its holder could say so
        try:
            turn = await self._turn_of(pause)
        except Exception:
            log.exception("paused turn %s could not be taken up", pause_id)
            turn = None
        if turn is None:
            async with self._db.write() as tx:
                await store.finish(tx, pause_id)
            return
        sink = _Collected()
        await self._deps.turns.runner(turn, sink, people_can_answer=True).run()
        if turn.conversation.channel != "web" and (sink.text.strip() or sink.buttons):
            await self._reply(turn, sink)

    async def _turn_of(self, pause: PausedTurn) -> Turn | None:
        """The paused turn as it goes on (None: its conversation, agent or model is gone)."""
        kept, deps, db = pause.state, self._turn_deps, self._db
        conv = await conv_store.get(db.reader, pause.team_id, pause.conversation_id)
        live = await find_agent(db, deps.agents, kept["agentId"])
        if conv is None or live is None:
            return None
        agent = state.agent_as_paused(live, kept)
        tools = await tools_store.list_enabled_for_agent(db.reader, agent.id)
        offered_tools = {t.name: t for t in offered(tools)}
        try:
            provider, model_name = deps.providers.resolve(agent.model)
        except ProviderError as exc:
            log.warning("paused turn %s: its model cannot answer: %s", pause.id, exc.message)
            return None
        # Its answer is counted against the budgets and goes through the guardrails like any
        # (an answer under way when a limit is reached finishes, as in an open stream).
        spending = await deps.usage.spending(db, agent) if deps.usage is not None else None
        return Turn(
            agent=agent,
            conversation=conv,
            message_id=pause.message_id,
            history=[],
            tools=offered_tools,
            provider=provider,
            model_name=model_name,
            passages=state.passages(kept),
            offer_handoff=kept["offerHandoff"],
            question=kept["question"],
            curated=state.curated(kept),
            knowledge=kept["knowledge"],
            channel=kept["channel"],
            reply_address=kept.get("replyAddress"),  # pauses kept before these: None
            reply_in_reply_to=kept.get("replyInReplyTo"),
            spending=spending,
            screening=guardrails.for_answer(agent),
            resumed=await self._deps.gate.resume_of(pause),
        )

    async def _reply(self, turn: Turn, sink: _Collected) -> None:
        """A channel's conversation: the answer goes out as the reply, where the message it
        answers came from (a Telegram group, a Slack thread, an e-mail's thread)."""
        reply = Reply(
            turn.message_id,
            sink.text,
            {"type": "ai"},
            turn.reply_in_reply_to,
            turn.reply_address,
            sink.buttons,
        )
        replies = self._deps.replies
        async with self._db.write() as tx:
            queued = await replies.queue(tx, turn.conversation, reply, now_iso())
        if queued:
            replies.sent()
