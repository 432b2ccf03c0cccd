"""What a channel receives: each platform message recorded once (its id is a key of the
database, so a retry of the platform makes no second turn), answered by a chat turn of the
channel's agent through `ChatTurns` (the one turn every door runs), in the conversation of
that platform user on that channel, and the reply written to the outbox.

The platform is answered as soon as the message is recorded; the turn runs in a task of
this process. One platform user's messages are answered one after the other, in order. A
message is kept until its turn starts: one whose process stopped first is answered at the
next start (`resume`); with several processes, by any process still running (runtime.py
calls `resume` every `[webhooks] poll_seconds`), once it has waited `[channels]
resume_after_seconds` (a minute), so a turn another process is about to start is left to
it (and if both start it, the database lets one take it).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, TypeVar

from agentsvc.db import Database, Tx
from agentsvc.errors import DomainError
from agentsvc.ids import iso, now_iso
from agentsvc.services.channels import email_files, email_send
from agentsvc.services.channels.buttons import Button, from_tool_result
from agentsvc.services.channels.replies import Reply, ReplyQueue
from agentsvc.services.chat.start import ChatInput
from agentsvc.services.chat.turn import HeldTurn
from agentsvc.services.chat.turns import ChatTurns
from agentsvc.storage import FileStore
from agentsvc.store import channels as store
from agentsvc.store.channels import Channel
from agentsvc.store.conversations import Conversation

log = logging.getLogger(__name__)

RESUME_BATCH = 500
# The types whose conversations are threads (the message's address names the thread):
# whoever writes in a Slack thread; one sender's e-mail thread (e-mail's From is not
# verified: a thread's id alone never joins someone else's conversation).
THREADED = ("slack", "email")

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Inbound:
    """A platform message, checked: who sent it (the platform's user id), the text, the
    platform's id of the message, and where the reply goes when that is not the user (a
    Telegram chat)."""

    user_id: str
    text: str
    message_id: str
    address: str | None = None


def user_ref(channel: Channel, platform_user_id: str) -> str:
    """The end user's reference (`/end-users/:ref`): the channel's type and the platform's
    id of the user, `api:u-42`."""
    return f"{channel.type}:{platform_user_id}"


def _thread(kind: str, address: str | None) -> str | None:
    """The thread a message is in (its conversation's session id), for threaded types."""
    if kind == "email":
        return email_send.thread_of(address)
    return address if kind in THREADED else None


# What a channel's person reads when the agent handed them to a person without a word of
# its own (the widget shows its waiting screen instead): the team is there, or away.
HANDED_OVER = {
    True: "A person from the team will answer you here shortly.",
    False: "Our team is away right now; a person will answer you here when they are back.",
}

# What a channel's person reads when the agent's answer waits for a person's approval of a
# tool call (services.approvals): the answer follows as another reply once it is decided.
APPROVAL_PENDING = "A person from the team must approve this first; the answer will follow here."


class _Reply:
    """A turn's stream, kept instead of sent: the text blocks, the quick replies of its
    last tool that shows buttons, whether it handed over to a person (the team online or
    not), and the error, if any."""

    def __init__(self) -> None:
        self.blocks: dict[int, list[str]] = {}
        self.error: dict[str, str] | None = None
        self.buttons: tuple[Button, ...] = ()
        self.handed_over: bool | None = None
        self.awaiting_approval = False

    async def event(self, name: str, data: dict[str, Any]) -> None:
        if name == "error":
            self.error = data["error"]
        elif name == "tool_result":
            self.buttons = from_tool_result(data) or self.buttons
        elif name == "handoff":
            self.handed_over = bool(data.get("online", True))
        elif name == "answer_replaced":  # a guardrail replaced what was said: only this
            self.blocks = {0: [data["text"]]}
        elif name == "approval_pending":
            self.awaiting_approval = True

    async def delta(self, index: int, text: str) -> None:
        self.blocks.setdefault(index, []).append(text)

    async def keepalive(self) -> None:
        return None

    @property
    def text(self) -> str:
        said = "\n\n".join("".join(parts) for _, parts in sorted(self.blocks.items()))
        if not said.strip() and self.handed_over is not None:
            return HANDED_OVER[self.handed_over]
        if self.awaiting_approval:
            return f"{said}\n\n{APPROVAL_PENDING}" if said.strip() else APPROVAL_PENDING
        return said


@dataclass(frozen=True, slots=True)
class InboxConfig:
    turn_seconds: float  # the longest a turn may take ([chat] max_stream_seconds)
    close_grace_seconds: float = 5.0  # at shutdown, how long turns under way may finish
    # With several processes: how long a message waits before another process answers it.
    resume_after_seconds: float = 60.0  # [channels] resume_after_seconds
    files: FileStore | None = None  # where e-mails' attachments are kept


class ChannelInbox:
    """Records received messages and answers them (one instance for the app)."""

    def __init__(
        self,
        db: Database,
        turns: ChatTurns,
        replies: ReplyQueue,
        config: InboxConfig,
    ):
        self._db = db
        self._turns = turns
        self._replies = replies
        self._config = config
        self._tasks: set[asyncio.Task] = set()
        # (channel, platform user) -> their lock and how many of their turns wait on it
        self._users: dict[tuple[str, str], tuple[asyncio.Lock, int]] = {}

    async def receive(self, channel: Channel, message: Inbound) -> bool:
        """Record a message and start its turn; False when it was received before."""
        waiting = store.Waiting(
            channel.id, message.message_id, message.user_id, message.text, message.address
        )
        fresh = await self._write(lambda tx: store.receive(tx, channel.id, waiting, now_iso()))
        if fresh:
            self._start(channel, message)
        return fresh

    async def _write(self, unit: Callable[[Tx], Awaitable[T]]) -> T:
        """One small write, one statement: in one process's database, batched with the
        other writes of the moment (messages arrive in floods; one commit for many of them
        about doubled the messages a process takes per second); in a shared one, alone,
        since two processes taking the same retried message in batches of different orders
        would deadlock (`write_statement`)."""
        return await self._db.write_statement(unit)

    def _start(self, channel: Channel, message: Inbound) -> None:
        task = asyncio.create_task(self._answer(channel, message), name="channel-turn")
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def resume(self) -> int:
        """Answer the received messages whose turn never started (their process stopped
        first); return how many. At start-up, and with several processes periodically."""
        cutoff = datetime.now(UTC)
        if self._db.shared:
            cutoff -= timedelta(seconds=self._config.resume_after_seconds)
        found = await store.waiting(self._db.reader, iso(cutoff), RESUME_BATCH)
        started = 0
        for item in found:
            channel = await store.get_any(self._db.reader, item.channel_id)
            if channel is None or not channel.enabled:
                continue  # a disabled channel's messages wait for it to be enabled
            message = Inbound(item.user_id, item.text, item.external_id, item.address)
            self._start(channel, message)
            started += 1
        return started

    async def _answer(self, channel: Channel, message: Inbound) -> None:
        """Run the message's turn, one at a time per platform user, and queue the reply."""
        key = (channel.id, message.user_id)
        lock, waiting = self._users.get(key, (asyncio.Lock(), 0))
        self._users[key] = (lock, waiting + 1)
        try:
            async with lock:
                await self._turn(channel, message)
        except Exception:
            log.exception(
                "channel %s: the turn of message %s failed", channel.id, message.message_id
            )
        finally:
            lock, waiting = self._users[key]
            if waiting == 1:
                del self._users[key]
            else:
                self._users[key] = (lock, waiting - 1)

    async def _turn(self, channel: Channel, message: Inbound) -> None:
        started = await self._write(
            lambda tx: store.start_turn(tx, channel.id, message.message_id, now_iso())
        )
        if not started:
            return  # another process's turn has it
        ref = user_ref(channel, message.user_id)
        thread = _thread(channel.type, message.address)
        conversation_id = None  # without a thread: the user's latest, read by the turn
        if thread is not None:  # a conversation per thread
            writer = ref if channel.type == "email" else None
            conversation_id = await store.thread_conversation(
                self._db.reader, channel.id, thread, writer
            )
        files = ()
        if channel.type == "email" and self._config.files is not None:
            # What the message was read with (by whichever process read it).
            files = await email_files.kept(self._config.files, channel.id, message.message_id)
        chat = ChatInput(
            agent_id=channel.agent_id,
            messages=(("user", message.text),),
            conversation_id=conversation_id,
            session_id=thread,
            user={"id": ref, "email": None, "name": None, "verified_by": None},
            team_id=channel.team_id,
            channel=channel.type,
            channel_id=channel.id,
            reply_address=message.address,
            reply_in_reply_to=message.message_id,
            attachments=files,
            latest_of_user=thread is None,
        )
        sink = _Reply()
        try:
            async with asyncio.timeout(self._config.turn_seconds):
                # The agent may hand over to a person (when the agent's handoff is on):
                # the person then answers from the inbox, on the channel.
                turn = await self._turns.run(chat, sink, people_can_answer=True)
        except DomainError as exc:
            log.warning(
                "channel %s: message %s not answered: %s",
                channel.id,
                message.message_id,
                exc.message,
            )
            return
        if isinstance(turn, HeldTurn):
            return  # a person has the conversation: the message waits for them
        if sink.error is not None and not sink.text:
            log.warning(
                "channel %s: the agent could not answer: %s", channel.id, sink.error.get("message")
            )
            return
        reply = Reply(
            turn.message_id,
            sink.text,
            {"type": "ai"},
            message.message_id,
            message.address,
            sink.buttons,
        )
        await self._queue_reply(turn.conversation, reply)

    async def _queue_reply(self, conv: Conversation, reply: Reply) -> None:
        """Write the reply's outbox row and wake the worker."""
        queued = await self._write(lambda tx: self._replies.queue(tx, conv, reply, now_iso()))
        if queued:
            self._replies.sent()

    async def idle(self) -> None:
        """Wait until every turn under way has ended (tests, shutdown)."""
        while self._tasks:
            await asyncio.wait(set(self._tasks))

    async def close(self) -> None:
        """Give turns under way a moment, then cancel them."""
        tasks = set(self._tasks)
        if not tasks:
            return
        _, pending = await asyncio.wait(tasks, timeout=self._config.close_grace_seconds)
        for task in pending:
            task.cancel()
        if pending:
            await asyncio.wait(pending)
