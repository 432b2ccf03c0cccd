"""Starting a chat turn: check and load everything, store the user's message.

Everything that can fail with a clear HTTP error happens here, before the stream opens;
`services.chat.turn` then runs the turn itself.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import astuple, dataclass, replace

from agentsvc.db import Database, Tx
from agentsvc.errors import NotFound, ValidationFailed
from agentsvc.ids import new_id, now_iso
from agentsvc.language import DEFAULT_LANGUAGE
from agentsvc.llm.base import BUILTIN, Message, ModelProvider, ProviderError, Providers
from agentsvc.llm.builtin import parse_tool_command
from agentsvc.services.agents import experiments, versions
from agentsvc.services.agents import registry as agents_service
from agentsvc.services.answers.matching import CuratedMatch
from agentsvc.services.chat.conversations import assignee_of, caller_may_use
from agentsvc.services.chat.messages import ConversationLog, StatusChange
from agentsvc.services.chat.turn import HeldTurn, Turn, TurnDeps
from agentsvc.services.desk.visitor_context import VisitorContext
from agentsvc.services.events import payloads
from agentsvc.services.events.emitter import Emission
from agentsvc.services.guardrails import hooks as guardrails
from agentsvc.services.knowledge.retrieval import Passage, retrieve
from agentsvc.services.tools.mcp import offered
from agentsvc.services.usage import budgets
from agentsvc.store import analytics as analytics_store
from agentsvc.store import attachments as attachments_store
from agentsvc.store import conversations as conv_store
from agentsvc.store import documents as documents_store
from agentsvc.store import tools as tools_store
from agentsvc.store.agents import Agent
from agentsvc.store.attachments import Attachment, KeptFile
from agentsvc.store.conversations import Conversation, StoredMessage
from agentsvc.store.tools import Tool
from agentsvc.store.usage import Spending

TITLE_LENGTH = 80
# What the model reads of a stored conversation before the visitor's new message: its
# newest messages, at most this many and this many characters (about 25,000 tokens). A
# channel's conversation with one person goes on for months: read whole, every turn would
# cost more and at last pass the model's context window (the provider then refuses it).
HISTORY_MESSAGES = 100
HISTORY_CHARACTERS = 100_000


@dataclass(frozen=True, slots=True)
class ChatInput:
    """A turn's inputs, whatever the door (`/chat`, MCP `ask`, a channel): the agent, the
    messages, the conversation to continue, and who is writing (session, end user, team)."""

    agent_id: str
    messages: tuple[tuple[str, str], ...]  # (role, content)
    conversation_id: str | None
    session_id: str | None
    user: dict[str, str | None] | None  # id, email, name, verified_by (services.agents.identity)
    team_id: str | None  # set when a Bearer key (or session) authenticated the call
    # The widget trigger the visitor's chat started from (kept on a new conversation when
    # it is one of the agent's triggers; ignored otherwise).
    trigger_id: str | None = None
    # What the widget tells of the visitor: kept on a new conversation (the page), and the
    # latest attributes on any.
    visitor: VisitorContext | None = None
    # The channel the message came through ("web": the widget, /chat, MCP), kept on a new
    # conversation with the channel's id.
    channel: str = "web"
    channel_id: str | None = None
    # Where a channel's reply goes when not to the user (a Telegram group, a Slack thread,
    # an e-mail's address) and the platform's id of the message it answers: a turn paused
    # for an approval sends its answer there too.
    reply_address: str | None = None
    reply_in_reply_to: str | None = None
    # The files the message came with (an e-mail's attachments, already on disk), listed
    # on the stored message.
    attachments: tuple[KeptFile, ...] = ()
    # A channel's message without a thread: the writer's newest conversation on the
    # channel, or a new one (found with the turn's other reads, not in a read of its own).
    latest_of_user: bool = False
    # The team's preview: the agent's draft ("draft") or an earlier version's number.
    version: int | str | None = None


def make_title(text: str) -> str:
    """A conversation title: the first user message, whitespace collapsed, at most 80 chars."""
    title = " ".join(text.split())
    if len(title) > TITLE_LENGTH:
        title = title[: TITLE_LENGTH - 1].rstrip() + "…"
    return title


def _channel_user(chat: ChatInput) -> tuple[str, str] | None:
    """(channel id, user reference) when the turn continues the user's latest conversation."""
    if chat.latest_of_user and chat.channel_id is not None and chat.user is not None:
        return chat.channel_id, str(chat.user["id"])
    return None


async def _latest_messages(db: Database, chat: ChatInput) -> list[StoredMessage] | None:
    """A channel user's latest conversation's messages, read with the turn's other reads
    (None: not such a turn; `_history` checks them against the conversation read beside)."""
    found = _channel_user(chat)
    if found is None:
        return None
    return await conv_store.latest_messages_of_channel_user(db.reader, *found, HISTORY_MESSAGES)


async def _load_conversation(db: Database, chat: ChatInput) -> Conversation | None:
    found = _channel_user(chat)
    if found is not None:
        conv = await conv_store.latest_of_channel_user(db.reader, *found)
        if conv is None:
            return None
    elif chat.conversation_id is None:
        return None
    else:
        conv = await conv_store.get_for_agent(db.reader, chat.agent_id, chat.conversation_id)
    if conv is None or conv.agent_id != chat.agent_id:
        raise NotFound("Conversation not found")
    if not caller_may_use(conv, chat.team_id, chat.session_id):
        raise NotFound("Conversation not found")
    return conv


def _history_from_store(messages: list[StoredMessage]) -> list[Message]:
    """The newest messages within HISTORY_CHARACTERS (the newest one whatever its length)."""
    history: list[Message] = []
    left = HISTORY_CHARACTERS
    for m in reversed(messages):
        if m.role == "assistant" and not m.content:
            continue  # a turn that produced only tool calls or nothing adds no context
        if history and len(m.content) > left:
            break
        left -= len(m.content)
        history.append(Message(m.role, m.content))  # type: ignore[arg-type]
    history.reverse()
    return history


async def _no_match() -> CuratedMatch | None:
    return None


async def _spending(deps: TurnDeps, agent: Agent | None) -> Spending | None:
    """The budgets of the agent and its team and this month's spending (None: not kept)."""
    if deps.usage is None or agent is None:
        return None
    return await deps.usage.spending(deps.log.db, agent)


@dataclass(frozen=True, slots=True)
class _Loaded:
    """What a turn reads before anything is stored."""

    agent: Agent | None
    conversation: Conversation | None
    tools: list[Tool]
    passages: list[Passage]
    match: CuratedMatch | None
    messages: list[StoredMessage] | None = None  # the conversation's, when read with it
    spending: Spending | None = None


def _check_messages(chat: ChatInput) -> None:
    if chat.messages[-1][0] != "user":
        raise ValidationFailed("messages: the last message must have role 'user'")
    if not chat.messages[-1][1].strip():
        raise ValidationFailed("messages: the last message must not be empty")


async def _load(deps: TurnDeps, chat: ChatInput) -> _Loaded:
    """The agent, the conversation, the agent's tools, the passages and the curated answer
    for the question."""
    db, agents, curated = deps.log.db, deps.agents, deps.sources.curated
    # The agent usually comes from the in-process cache; it is read first (once per agent
    # after a start) because retrieval needs its language. The other reads, queued
    # together, cost one wake-up of the reader thread, not three.
    agent = agents.get(chat.agent_id) or await agents_service.find_agent(db, agents, chat.agent_id)
    if agent is not None and chat.version is not None and agent.team_id == chat.team_id:
        agent = await versions.at_version(db, agent, chat.version)
    language = agent.language if agent is not None else DEFAULT_LANGUAGE
    question = chat.messages[-1][1]
    top_k = deps.providers.settings.knowledge.top_k
    conv, tools, passages, match, stored, spending = await asyncio.gather(
        _load_conversation(db, chat),
        tools_store.list_enabled_for_agent(db.reader, chat.agent_id),
        retrieve(db, chat.agent_id, question, top_k, deps.sources.semantic, language),
        curated.match(db, chat.agent_id, question, language) if curated else _no_match(),
        _latest_messages(db, chat),
        _spending(deps, agent),
    )
    return _Loaded(agent, conv, tools, passages, match, stored, spending)


def _variant(
    agent: Agent, conversation: Conversation | None, chat: ChatInput
) -> tuple[str | None, int | None]:
    """The agent's running experiment and the variant this turn gets (None, None: live).

    A conversation keeps the variant it began with; one that began before the experiment
    stays live. A new one is given the variant of its visitor: the signed end user, else
    the session, else drawn by weight. A team's preview of a version is in no experiment.
    """
    running = agent.experiment
    if running is None or chat.version is not None:
        return None, None
    if conversation is not None:
        if conversation.experiment_id == running["id"]:
            return conversation.experiment_id, conversation.variant
        return None, None
    user = chat.user or {}
    visitor = user.get("id") if user.get("verified_by") else chat.session_id
    return running["id"], experiments.assign(running, visitor)


async def _in_language_of(
    deps: TurnDeps, chat: ChatInput, agent: Agent, loaded: _Loaded
) -> _Loaded:
    """The passages and curated answer again when a variant's language differs."""
    if loaded.agent is None or loaded.agent.language == agent.language:
        return loaded
    db, curated = deps.log.db, deps.sources.curated
    question = chat.messages[-1][1]
    top_k = deps.providers.settings.knowledge.top_k
    passages = await retrieve(db, agent.id, question, top_k, deps.sources.semantic, agent.language)
    match = await curated.match(db, agent.id, question, agent.language) if curated else None
    return replace(loaded, passages=passages, match=match)


def _agent_of(loaded: _Loaded, chat: ChatInput) -> Agent:
    agent = loaded.agent
    if agent is None or (chat.team_id is not None and agent.team_id != chat.team_id):
        raise NotFound("Agent not found")
    return agent


def _model_of(providers: Providers, agent: Agent) -> tuple[ModelProvider, str]:
    try:
        return providers.resolve(agent.model)
    except ProviderError as exc:
        raise ValidationFailed(f"agentId: the agent's {exc.message}") from exc


async def _has_knowledge(
    db: Database, agent: Agent, passages: list[Passage], match: CuratedMatch | None
) -> bool:
    """Whether the agent has anything to answer from. With nothing retrieved, whether it
    has knowledge at all decides if a provider model's answer counts as unanswered (an
    agent without documents answers from its prompt); the builtin model says so itself."""
    knowledge = bool(passages) or match is not None
    if not knowledge and agent.model != BUILTIN:
        knowledge = await documents_store.has_ready(db.reader, agent.id)
    return knowledge


async def _history(
    db: Database, chat: ChatInput, conv: Conversation | None, stored: list[StoredMessage] | None
) -> list[Message]:
    """The messages the model reads before the visitor's: the stored conversation's (those
    read with it, when they are its), or those the caller sent; then the visitor's."""
    if conv is not None:
        if not stored or any(m.conversation_id != conv.id for m in stored):
            stored = await conv_store.newest_messages(db.reader, conv.id, HISTORY_MESSAGES)
        history = _history_from_store(stored)
    else:
        history = [Message(role, content) for role, content in chat.messages[:-1] if content]  # type: ignore[arg-type]
    history.append(Message("user", chat.messages[-1][1]))
    return history


def _new_conversation(
    agent: Agent, chat: ChatInput, now: str, keep: Callable[[str], str] | None
) -> Conversation:
    first_user = next(content for role, content in chat.messages if role == "user")
    if keep is not None:  # the title as the guardrails store the visitor's words
        first_user = keep(first_user)
    user = chat.user or {}
    return Conversation(
        id=new_id("conversation"),
        agent_id=agent.id,
        team_id=agent.team_id,
        title=make_title(first_user) or "New conversation",
        session_id=chat.session_id,
        user_ref=user.get("id"),
        user_email=user.get("email"),
        user_name=user.get("name"),
        user_verified_by=user.get("verified_by"),
        created_at=now,
        updated_at=now,
        trigger_id=chat.trigger_id,
        channel=chat.channel,
        channel_id=chat.channel_id,
    )


def _visitor_message(conversation_id: str, text: str, now: str) -> StoredMessage:
    return StoredMessage(
        id=new_id("message"),
        conversation_id=conversation_id,
        role="user",
        content=text,
        tool_calls=None,
        usage=None,
        sources=None,
        status="complete",
        model=None,
        rating=None,
        created_at=now,
    )


async def _keep_visitor(tx: Tx, conv_id: str, visitor: VisitorContext | None, new: bool) -> None:
    """The page a new conversation started on, and the visitor's latest attributes."""
    if visitor is None:
        return
    if new and visitor.has_page:
        await conv_store.set_visitor_page(
            tx, conv_id, visitor.page_url, visitor.referrer, visitor.language
        )
    if visitor.attributes is not None:
        await conv_store.set_user_attributes(tx, conv_id, visitor.attributes)


async def _store(
    log: ConversationLog,
    conv: Conversation,
    message: StoredMessage,
    *,
    new: bool,
    visitor: VisitorContext | None = None,
    files: tuple[KeptFile, ...] = (),
    trace: guardrails.Trace | None = None,
) -> None:
    """Store the visitor's message with what it does to the conversation: a new one is
    created, a closed one reopens with the agent, any other is marked updated; the files
    it came with, and what the guardrails found in it."""
    now = message.created_at

    async def before(tx: Tx, emission: Emission) -> None:
        if new:
            await _insert_conversation(tx, conv)
            await emission.emit(
                tx,
                "conversation.created",
                lambda: payloads.conversation_created(conv),
                conversation_id=conv.id,
            )
        elif conv.status == "closed":
            await log.write_status(tx, emission, conv, _reopened(now))
        else:
            await conv_store.touch(tx, conv.id, now)
        await _keep_visitor(tx, conv.id, visitor, new)

    async def after(tx: Tx) -> None:
        rows = [
            Attachment(new_id("attachment"), conv.id, message.id, *astuple(f), n, now)
            for n, f in enumerate(files)
        ]
        await attachments_store.insert_many(tx, rows)
        if trace:
            await guardrails.write_in(tx, conv, trace, now)

    await log.append_message(conv, message, before=before, after=after if files or trace else None)


def _reopened(now: str) -> StatusChange:
    """A visitor writing to a closed conversation reopens it with the agent."""
    fields = {"status": "bot", "assignee_id": None}
    return StatusChange("bot", None, now, fields, event_type="conversation.reopened")


async def prepare_turn(deps: TurnDeps, chat: ChatInput) -> Turn | HeldTurn:
    """Validate and load everything, store the user's message, and return the turn; or,
    while a person has the conversation (waiting, human), the held turn: the message is
    stored for the team and the model is not called."""
    _check_messages(chat)
    loaded = await _load(deps, chat)
    agent = _agent_of(loaded, chat)
    experiment_id, variant = _variant(agent, loaded.conversation, chat)
    if variant is not None and variant != agent.version:
        agent = await versions.at_version(deps.log.db, agent, variant)
        loaded = await _in_language_of(deps, chat, agent, loaded)
    provider, model_name = _model_of(deps.providers, agent)
    question = chat.messages[-1][1]
    # Too long: refused (ValidationFailed); a blocked topic: its reply instead of the model.
    screening = await guardrails.screen(deps.log.db, agent, loaded.conversation, question)
    match = loaded.match
    if match is not None and agent.model == BUILTIN and parse_tool_command(question):
        match = None  # the builtin model runs the tool a `/tool` command names
    canned = screening.canned() if screening else None
    if canned is not None:
        provider, match, loaded = canned, None, replace(loaded, passages=[])
    knowledge = canned is None and await _has_knowledge(deps.log.db, agent, loaded.passages, match)
    history = await _history(deps.log.db, chat, loaded.conversation, loaded.messages)
    if screening is not None:
        history = await screening.history_for_model(history)
    now = now_iso()
    conv = loaded.conversation or replace(
        _new_conversation(agent, chat, now, screening.keep if screening else None),
        experiment_id=experiment_id,
        variant=variant,
    )
    message = _visitor_message(conv.id, screening.stored if screening else question, now)
    new = loaded.conversation is None
    await _store(
        deps.log,
        conv,
        message,
        new=new,
        visitor=chat.visitor,
        files=chat.attachments,
        trace=screening.trace if screening else None,
    )
    if conv.status in ("waiting", "human"):
        return HeldTurn(conv, message.id, conv.status, assignee_of(conv))
    return Turn(
        agent=agent,
        conversation=conv,
        message_id=new_id("message"),
        history=history,
        tools={t.name: t for t in offered(loaded.tools)},  # an MCP tool: one per function
        provider=provider,
        model_name=model_name,
        passages=loaded.passages,
        offer_handoff=bool((agent.handoff or {}).get("enabled")),
        question=message.content,
        curated=match,
        knowledge=knowledge,
        channel=chat.channel,
        reply_address=chat.reply_address,
        reply_in_reply_to=chat.reply_in_reply_to,
        spending=loaded.spending,
        budget_reached=budgets.reached(loaded.spending),
        screening=screening,
    )


async def _insert_conversation(tx: Tx, conv: Conversation) -> None:
    """Insert a new conversation; one started from a trigger counts in that trigger's
    figures of the day (a trigger id that is not the agent's is not kept)."""
    trigger_id = conv.trigger_id
    if trigger_id is not None and not await analytics_store.trigger_of_agent(
        tx, conv.agent_id, trigger_id
    ):
        conv, trigger_id = replace(conv, trigger_id=None), None
    await conv_store.insert_conversation(tx, conv)
    if trigger_id is not None:
        day = analytics_store.day_of(conv.created_at)
        await analytics_store.add_trigger_counts(tx, [(conv.agent_id, day, trigger_id, 0, 0, 1, 0)])
