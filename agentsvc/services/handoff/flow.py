"""A conversation passing between the agent and the team: bot → waiting → human → bot or
closed, and members' replies.

Each change writes the conversation, its event (the live streams read the log) and its
webhook event in one transaction, and is announced after the commit so every process's
followers hear of it: `ConversationLog` (services/chat/messages.py) writes them, as it
writes the chat turns' messages.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from agentsvc.db import Database, Tx
from agentsvc.errors import Forbidden, NotFound, ValidationFailed
from agentsvc.ids import new_id, now_iso, parse_iso
from agentsvc.services.agents import registry as agents_service
from agentsvc.services.agents.registry import AgentCache
from agentsvc.services.channels.replies import Reply, ReplyQueue
from agentsvc.services.chat.messages import ConversationLog, StatusChange
from agentsvc.services.events.emitter import Emission
from agentsvc.services.handoff.notify import Notifier
from agentsvc.services.handoff.settings import is_online, settings_of
from agentsvc.store import accounts as accounts_store
from agentsvc.store import agents as agents_store
from agentsvc.store import conversations as conv_store
from agentsvc.store import team as team_store
from agentsvc.store.agents import Agent
from agentsvc.store.conversations import Conversation, StoredMessage
from agentsvc.store.team import Member

# A visitor whose event stream was seen within this many keep-alives is still there.
PRESENCE_KEEPALIVES = 2.5


@dataclass(frozen=True, slots=True)
class HandoffState:
    """Where a conversation stands, as the visitor and the team see it."""

    conversation_id: str
    status: str
    assignee: dict[str, str] | None
    online: bool = True
    offline_message: str | None = None

    def json(self) -> dict[str, Any]:
        return {
            "conversationId": self.conversation_id,
            "status": self.status,
            "assignee": self.assignee,
            "online": self.online,
            "offlineMessage": self.offline_message,
        }


@dataclass(frozen=True, slots=True)
class HandoffDeps:
    """What the handoff flow runs on (built once for the app in runtime.py)."""

    log: ConversationLog  # the database, and every change written through it
    agents: AgentCache
    notifier: Notifier
    # The visitors' event streams' keep-alive: how recently a present visitor was seen.
    keepalive_seconds: float
    # Sends a member's reply out on the channel a conversation came through (None: never).
    replies: ReplyQueue | None = None


async def shown_name_of(db: Database, team_id: str, member_name: str) -> str:
    """The name a visitor sees for a member: their display name, else the team's name;
    never their e-mail address."""
    if member_name.strip():
        return member_name.strip()
    team = await accounts_store.get_team(db.reader, team_id)
    return team.name if team is not None else ""


async def for_visitor(db: Database, conversation_id: str, session_id: str | None) -> Conversation:
    """The conversation of this widget session, or NotFound (also without a session)."""
    conv = await conv_store.get_public(db.reader, conversation_id)
    if conv is None or not session_id or conv.session_id != session_id:
        raise NotFound("Conversation not found")
    return conv


async def for_team(db: Database, team_id: str, conversation_id: str) -> Conversation:
    """The team's conversation, or NotFound."""
    conv = await conv_store.get(db.reader, team_id, conversation_id)
    if conv is None:
        raise NotFound("Conversation not found")
    return conv


async def _agent(db: Database, agents: AgentCache, conv: Conversation) -> Agent:
    agent = await agents_service.find_agent(db, agents, conv.agent_id)
    if agent is None:
        raise NotFound("Conversation not found")
    return agent


async def _set_status(
    log: ConversationLog,
    conv: Conversation,
    fields: dict[str, Any],
    assignee: tuple[str, str] | None,
) -> None:
    """Write the status change, its event (and a webhook event), then announce it."""
    await log.change_status(conv, StatusChange(fields["status"], assignee, now_iso(), fields))


def _state(conv: Conversation, agent: Agent, status: str, assignee) -> HandoffState:
    settings = settings_of(agent.handoff)
    online = is_online(settings, datetime.now(UTC))
    return HandoffState(
        conv.id,
        status,
        {"id": assignee[0], "name": assignee[1]} if assignee else None,
        online,
        None if online else settings["offlineMessage"],
    )


async def widget_handoff(db: Database, agents: AgentCache, agent_id: str) -> dict[str, Any]:
    """What the widget needs to offer a person: enabled, in business hours, the message."""
    agent = await agents_service.find_agent(db, agents, agent_id)
    if agent is None:
        raise NotFound("Agent not found")
    settings = settings_of(agent.handoff)
    online = is_online(settings, datetime.now(UTC))
    return {
        "enabled": bool(settings["enabled"]),
        "online": online,
        "offlineMessage": None if online else settings["offlineMessage"],
    }


async def request_human(deps: HandoffDeps, conv: Conversation, *, by_visitor: bool) -> HandoffState:
    """Ask for a person: `bot` (or `closed`) → `waiting`, and tell the team. A conversation
    already waiting or with a member stays as it is."""
    agent = await _agent(deps.log.db, deps.agents, conv)
    settings = settings_of(agent.handoff)
    if by_visitor and not settings["enabled"]:
        raise Forbidden("This agent does not hand conversations to people")
    current = (conv.assignee_id, conv.assignee_name or "") if conv.assignee_id else None
    if conv.status in ("waiting", "human"):
        return _state(conv, agent, conv.status, current)
    fields: dict[str, Any] = {"status": "waiting", "assignee_id": None}
    if conv.handoff_at is None:
        fields["handoff_at"] = now_iso()
    await _set_status(deps.log, conv, fields, None)
    state = _state(conv, agent, "waiting", None)
    deps.notifier.handoff_requested(agent, conv, settings, state.online)
    return state


async def assign(
    deps: HandoffDeps, team_id: str, conv: Conversation, member_ref: str
) -> HandoffState:
    """A member takes the conversation: → `human` with them as the assignee."""
    db = deps.log.db
    member = await team_store.find_member(db.reader, team_id, member_ref)
    if member is None:
        raise ValidationFailed("memberId: no member of this team has that id")
    agent = await _agent(db, deps.agents, conv)
    assignee = (member.user_id, await shown_name_of(db, team_id, member.name))
    fields = {"status": "human", "assignee_id": member.user_id}
    await _set_status(deps.log, conv, fields, assignee)
    return _state(conv, agent, "human", assignee)


async def release(deps: HandoffDeps, conv: Conversation) -> HandoffState:
    """Hand the conversation back to the agent: → `bot`."""
    agent = await _agent(deps.log.db, deps.agents, conv)
    await _set_status(deps.log, conv, {"status": "bot", "assignee_id": None}, None)
    return _state(conv, agent, "bot", None)


async def close(deps: HandoffDeps, conv: Conversation) -> HandoffState:
    """Close the conversation: → `closed` (a visitor's next message reopens it)."""
    agent = await _agent(deps.log.db, deps.agents, conv)
    current = (conv.assignee_id, conv.assignee_name or "") if conv.assignee_id else None
    await _set_status(deps.log, conv, {"status": "closed"}, current)
    return _state(conv, agent, "closed", current)


def _visitor_present(conv: Conversation, keepalive_seconds: float) -> bool:
    if conv.visitor_seen_at is None:
        return False
    age = (datetime.now(UTC) - parse_iso(conv.visitor_seen_at)).total_seconds()
    return age < keepalive_seconds * PRESENCE_KEEPALIVES


def _fields_on_reply(conv: Conversation, user_id: str, now: str) -> dict[str, Any]:
    """What a member's reply changes: the conversation goes to a person (the member, when
    it had no assignee), and the first reply's wait is kept once."""
    fields: dict[str, Any] = {}
    if conv.status != "human" or conv.assignee_id is None:
        fields["status"] = "human"
        if conv.assignee_id is None:
            fields["assignee_id"] = user_id
    if conv.handoff_at is not None and conv.first_reply_seconds is None:
        waited = (parse_iso(now) - parse_iso(conv.handoff_at)).total_seconds()
        fields["first_reply_seconds"] = max(0.0, waited)
    return fields


def _reply_message(
    conv: Conversation, member: Member, name: str, content: str, now: str
) -> StoredMessage:
    """A member's reply: an assistant message with them as its author (`name`: what the
    visitor's widget shows, stored with the message and its events)."""
    return StoredMessage(
        id=new_id("message"),
        conversation_id=conv.id,
        role="assistant",
        content=content,
        tool_calls=None,
        usage=None,
        sources=None,
        status="complete",
        model=None,
        rating=None,
        created_at=now,
        author_id=member.user_id,
        author_name=name,
        author_avatar_id=member.avatar_id,
    )


async def reply(
    deps: HandoffDeps, team_id: str, conv: Conversation, user_id: str, content: str
) -> StoredMessage:
    """A member's reply, as an assistant message with them as its author. Replying takes a
    conversation that is not yet with a person (→ `human`, assigned to the member when it
    had no assignee); a visitor who left an address and is gone gets the reply by e-mail."""
    log = deps.log
    member = await team_store.find_member(log.db.reader, team_id, user_id)
    if member is None:
        raise NotFound("Conversation not found")
    agent = await _agent(log.db, deps.agents, conv)
    now = now_iso()
    name = await shown_name_of(log.db, team_id, member.name)
    message = _reply_message(conv, member, name, content, now)
    fields = _fields_on_reply(conv, member.user_id, now)
    assignee_id = fields.get("assignee_id", conv.assignee_id)
    assignee = (
        (assignee_id, name if assignee_id == member.user_id else conv.assignee_name or "")
        if assignee_id
        else None
    )

    async def taken(tx: Tx, emission: Emission) -> None:
        # The member takes the conversation, then their message follows.
        await log.write_status(tx, emission, conv, StatusChange("human", assignee, now))

    async def update(tx: Tx) -> None:
        await conv_store.update_handoff(tx, conv.id, fields, now)

    queued = False

    async def on_channel(tx: Tx) -> None:
        nonlocal queued
        if deps.replies is not None:
            reply = Reply(message.id, content, {"type": "human", "name": name})
            queued = await deps.replies.queue(tx, conv, reply, now)

    await log.append_message(
        conv, message, before=taken if "status" in fields else None, update=update, after=on_channel
    )
    if queued and deps.replies is not None:
        deps.replies.sent()  # the member's reply goes out on the conversation's channel
    if conv.contact_email and not _visitor_present(conv, deps.keepalive_seconds):
        deps.notifier.reply_by_mail(agent, conv, name, content)
    return message


async def leave_contact(db: Database, conv: Conversation, email: str) -> None:
    """Keep the address a visitor left, for replies that arrive after they are gone."""
    async with db.write() as tx:
        await conv_store.update_handoff(tx, conv.id, {"contact_email": email}, now_iso())


async def visitor_seen(db: Database, conversation_id: str, present: bool) -> None:
    """Note that the visitor's event stream is open (or has just closed)."""

    async def write(tx: Tx) -> None:
        await conv_store.set_visitor_seen(tx, conversation_id, now_iso() if present else None)

    await db.write_batched(write)


async def stats(db: Database, team_id: str, agent_id: str) -> dict[str, Any]:
    """Per agent: the handoff rate and the median time to the first human reply."""
    if await agents_store.get(db.reader, team_id, agent_id) is None:
        raise NotFound("Agent not found")
    total, handoffs, median = await conv_store.handoff_figures(db.reader, agent_id)
    return {
        "agentId": agent_id,
        "conversations": total,
        "handoffs": handoffs,
        "handoffRate": round(handoffs / total, 4) if total else 0.0,
        "medianFirstReplySeconds": None if median is None else round(median, 1),
    }
