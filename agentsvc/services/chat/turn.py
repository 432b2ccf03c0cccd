"""Running one chat turn: the model and tool loop, streamed to a sink, then stored.

The loop calls the model at most `MAX_MODEL_CALLS` times (the last call offers no tools),
runs the tools of one model response concurrently and feeds their results back in call
order, and ends the turn at a form tool the widget shows (off the web, on a channel, the
model fills the form in the conversation and the turn goes on). Whatever happens, the
assistant message is stored with what was produced before the client hears `message_stop`
or `error`.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

import orjson

from agentsvc import telemetry
from agentsvc.db import ConstraintViolation, Tx
from agentsvc.ids import now_iso
from agentsvc.llm.base import (
    BUILTIN,
    Message,
    ModelProvider,
    ModelRequest,
    ProviderError,
    Providers,
    TextDelta,
    ToolCall,
    ToolSpec,
    Usage,
)
from agentsvc.llm.builtin import NOTHING_FOUND
from agentsvc.services.agents.registry import AgentCache
from agentsvc.services.answers.matching import CuratedAnswers, CuratedMatch, question_key
from agentsvc.services.chat import tracing
from agentsvc.services.chat.messages import ConversationLog
from agentsvc.services.chat.pause import ApprovalGate, PausePoint, Produced, Resume, TurnParked
from agentsvc.services.events.emitter import Emission
from agentsvc.services.guardrails import hooks as guardrails
from agentsvc.services.handoff.settings import settings_of as handoff_settings_of
from agentsvc.services.knowledge import prompt
from agentsvc.services.knowledge.retrieval import Passage
from agentsvc.services.knowledge.vectors import Semantic
from agentsvc.services.tenant_input.schemas import MAX_INPUT_DEPTH
from agentsvc.services.usage import meter as usage_meter
from agentsvc.services.usage.alerts import BudgetAlert
from agentsvc.services.usage.meter import MAX_TOKENS, UsageMeter, token_count
from agentsvc.store import analytics as analytics_store
from agentsvc.store import conversations as conv_store
from agentsvc.store.agents import Agent
from agentsvc.store.conversations import Conversation, StoredMessage
from agentsvc.store.tools import Tool
from agentsvc.store.usage import Spending

log = logging.getLogger(__name__)

MAX_MODEL_CALLS = 8
QUESTION_CHARS = 300  # of an unanswered question, kept for the analytics
UNSTORED_REPLY = "The reply could not be saved; please send your message again"

# The reserved tool offered when the agent hands conversations to people.
REQUEST_HUMAN = "request_human"
REQUEST_HUMAN_SPEC = ToolSpec(
    REQUEST_HUMAN,
    "Ask for a person from the team to take over this conversation. Call it when the user"
    " asks to talk to a human, or when you cannot help and a person could.",
    {
        "type": "object",
        "properties": {"reason": {"type": "string", "description": "Why, in a few words"}},
    },
)


def _encodable(call: ToolCall) -> ToolCall:
    """The call, or without its input when JSON cannot encode it (nested over 255 levels).

    Such an input could be neither shown, stored nor validated; the tool run refuses it.
    Deeper than MAX_INPUT_DEPTH but encodable is refused by the validation, off the loop.
    """
    try:
        orjson.dumps(call.input)
    except TypeError:
        return replace(call, input=None, raw_arguments=call.raw_arguments[:200])
    return call


class ClientGone(Exception):
    """The client closed the stream; the turn stops and keeps what it produced."""


class EventSink(Protocol):
    """Where a turn sends its stream events (the SSE response in the API layer)."""

    async def event(self, name: str, data: dict[str, Any]) -> None: ...

    async def delta(self, index: int, text: str) -> None: ...

    async def keepalive(self) -> None: ...


class ToolRunnerLike(Protocol):
    async def run(self, tool: Tool, tool_input: dict) -> Any: ...


class FormFiller(Protocol):
    """Forms filled in the conversation where no widget shows them (services.forms.
    conversation): the form offered as a function of its fields, and submitted."""

    def spec(self, tool: Tool) -> ToolSpec: ...

    async def fill(self, tool: Tool, conv: Conversation, values: dict) -> tuple[str, bool]: ...


@dataclass(frozen=True, slots=True)
class TurnSources:
    """What a turn answers from besides the model and the agent's prompt: the team's
    curated answers, and semantic search when embeddings are configured."""

    curated: CuratedAnswers | None = None
    semantic: Semantic | None = None


@dataclass(frozen=True, slots=True)
class TurnTools:
    """How a turn runs the agent's tools, and how often the stream hears a keep-alive
    while they run."""

    runner: ToolRunnerLike
    keepalive_seconds: float
    # Off the web (a channel), a form is filled in the conversation; None: never.
    forms: FormFiller | None = None
    # Tools a person approves each call of first (services.approvals); None: none.
    approvals: ApprovalGate | None = None


@dataclass(frozen=True, slots=True)
class TurnDeps:
    """What every turn runs on (built once for the app in runtime.py)."""

    log: ConversationLog  # the database, and every message appended through it
    agents: AgentCache
    providers: Providers
    sources: TurnSources
    tools: TurnTools
    # Prices and counts each answer's usage, and keeps the budgets (None: nothing counted).
    usage: UsageMeter | None = None


@dataclass(slots=True)
class Turn:
    """Everything a turn needs, loaded before the stream opens."""

    agent: Agent
    conversation: Conversation
    message_id: str
    history: list[Message]
    tools: dict[str, Tool]
    provider: ModelProvider
    model_name: str
    # Knowledge passages retrieved for the user's message, best first.
    passages: list[Passage] = field(default_factory=list)
    # Whether the model is offered `request_human` (the agent's handoff is enabled).
    offer_handoff: bool = False
    question: str = ""  # the visitor's message this turn answers
    # The team's curated answer to a question close to this one: the builtin model gives it
    # word for word, other models read it first among the passages.
    curated: CuratedMatch | None = None
    # Whether the agent had anything to answer from (a passage, a curated answer, or any
    # ready document): a provider model's answer without a source then counts as unanswered.
    knowledge: bool = False
    # The door the message came through (ChatInput.channel): off "web", no widget shows a
    # form, and the model fills it in the conversation.
    channel: str = "web"
    # Where a channel's reply goes and what it answers (ChatInput.reply_address, ...).
    reply_address: str | None = None
    reply_in_reply_to: str | None = None
    # The team's and the agent's budgets and this month's spending, read with the turn;
    # at a limit the agent answers with its offline message, without its model.
    spending: Spending | None = None
    budget_reached: bool = False
    # The visitor's message through the agent's guardrails (None: the agent has none).
    screening: guardrails.Screening | None = None
    # A turn taken up again after a person decided its held tool calls (services.approvals).
    resumed: Resume | None = None


@dataclass(frozen=True, slots=True)
class HeldTurn:
    """A visitor's message while a person has the conversation: stored, no model call."""

    conversation: Conversation
    message_id: str
    status: str
    assignee: dict[str, str] | None


# Asks for a person for the conversation; returns the handoff state's JSON.
RequestHuman = Callable[[Conversation], Awaitable[dict[str, Any]]]


@dataclass(slots=True)
class _Produced:
    texts: list[str] = field(default_factory=list)
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    input_tokens: int | None = None
    output_tokens: int | None = None

    def add_usage(self, usage: Usage) -> None:
        # A provider's count that is no count (text, negative, absurd) counts nothing.
        added_in, added_out = token_count(usage.input_tokens), token_count(usage.output_tokens)
        if added_in is not None:
            self.input_tokens = min((self.input_tokens or 0) + added_in, MAX_TOKENS)
        if added_out is not None:
            self.output_tokens = min((self.output_tokens or 0) + added_out, MAX_TOKENS)

    @classmethod
    def of(cls, produced: Produced) -> _Produced:
        """What a paused turn had produced, to go on from."""
        usage = produced.usage or {}
        return cls(
            list(produced.texts),
            list(produced.tool_calls),
            usage.get("inputTokens"),
            usage.get("outputTokens"),
        )

    def usage_json(self, meter: UsageMeter | None, model: str) -> dict[str, Any] | None:
        if meter is not None:
            return meter.usage_json(model, self.input_tokens, self.output_tokens)
        return self.raw_usage()

    def raw_usage(self) -> dict[str, int | None] | None:
        if self.input_tokens is None and self.output_tokens is None:
            return None
        return {"inputTokens": self.input_tokens, "outputTokens": self.output_tokens}


def output_text(output: Any) -> str:
    """A tool's output as the text the model reads."""
    return output if isinstance(output, str) else orjson.dumps(output).decode()


class TurnRunner:
    """Runs one turn against a sink; `run()` never raises except for cancellation."""

    def __init__(
        self,
        deps: TurnDeps,
        turn: Turn,
        sink: EventSink,
        request_human: RequestHuman | None = None,
    ):
        self._request_human = request_human
        self._handoff: dict[str, Any] | None = None
        self._log = deps.log
        self._turn = turn
        self._sink = sink
        self._runner = deps.tools.runner
        self._forms = deps.tools.forms if turn.channel != "web" else None
        self._keepalive = deps.tools.keepalive_seconds
        self._meter = deps.usage
        self._produced = _Produced()
        self._block = 0
        self._guard = guardrails.AnswerGuard(turn.screening)  # mustNotSay, redaction
        self._gate = deps.tools.approvals
        self._step = 0
        # While a person decides a call, the answer is stored by whoever goes on with it.
        self._held = False
        if turn.resumed is not None:
            self._produced = _Produced.of(turn.resumed.produced)
            self._block = turn.resumed.produced.block

    @telemetry.traced(tracing.invoke_agent)
    async def run(self) -> None:
        """Stream the turn; store the assistant message; end with message_stop or error."""
        turn = self._turn
        error: dict[str, str] | None = None
        status = "complete"
        try:
            await self._sink.event(
                "message_start",
                {
                    "type": "message_start",
                    "conversationId": turn.conversation.id,
                    "messageId": turn.message_id,
                },
            )
            await self._loop()
        except ProviderError as exc:
            status, error = "failed", {"code": exc.code, "message": exc.message}
        except TurnParked:
            # A person decides a call first; whoever takes the turn up then answers.
            await self._sink.event("message_stop", {"type": "message_stop", "sources": []})
            return
        except (ClientGone, asyncio.CancelledError):
            # Client gone or server stopping: keep what was produced, then stop.
            if not self._held:
                await self._store_to_the_end("interrupted")
            raise
        except Exception:
            log.exception("chat turn failed for agent %s", turn.agent.id)
            status = "failed"
            error = {"code": "INTERNAL_ERROR", "message": "The reply failed unexpectedly"}
        if not await self._store_to_the_end(status) and error is None:
            # The visitor must not take an answer the conversation lacks for a kept one.
            error = {"code": "INTERNAL_ERROR", "message": UNSTORED_REPLY}
        if self._guard.replaced:  # the visitor's answer ends as the stored one: the fallback
            text = self._guard.fallback
            await self._sink.event("answer_replaced", {"type": "answer_replaced", "text": text})
        if error is not None:
            await self._sink.event("error", {"type": "error", "error": error})
        else:
            await self._sink.event(
                "message_stop", {"type": "message_stop", "sources": self._sources()}
            )

    def _sources(self) -> list[dict[str, str]]:
        """The curated answer (when one matched), then the knowledge documents given; the
        builtin model, answering with the curated answer alone, names only it."""
        turn = self._turn
        if turn.curated is None:
            return prompt.sources(turn.passages)
        first = [{"answerId": turn.curated.answer_id, "title": turn.curated.question}]
        return first if turn.agent.model == BUILTIN else first + prompt.sources(turn.passages)

    async def _loop(self) -> None:
        turn = self._turn
        if turn.budget_reached:
            await self._offline_reply()
            return
        context = list(turn.history)
        specs = tuple(self._spec(t) for t in turn.tools.values())
        if turn.offer_handoff and self._request_human is not None:
            specs += (REQUEST_HUMAN_SPEC,)
        system, texts, curated = prompt.for_model(turn.agent, turn.passages, turn.curated)
        first = 0
        if turn.resumed is not None:  # taken up after a person's decision
            context, first = list(turn.resumed.context), turn.resumed.step + 1
            results = list(turn.resumed.results)
            if await self._finish_tools(list(turn.resumed.calls), results, context):
                return
        for step in range(first, MAX_MODEL_CALLS):
            self._step = step
            offered = specs if step < MAX_MODEL_CALLS - 1 else ()
            request = ModelRequest(
                model=turn.model_name,
                system=system,
                messages=tuple(context),
                tools=offered,
                temperature=turn.agent.temperature,
                knowledge=texts,
                language=turn.agent.language,
                curated_answer=curated,
            )
            text, calls = await self._model_call(request)
            if not calls or not offered or self._guard.hit:
                return
            context.append(Message("assistant", text, tuple(calls)))
            if await self._run_tools(calls, context):
                return  # a form is shown or a person asked for: the turn waits

    async def _offline_reply(self) -> None:
        """At a budget's limit: the agent's offline message, streamed as its answer (the
        visitor may still ask for a person)."""
        text = handoff_settings_of(self._turn.agent.handoff)["offlineMessage"]
        await self._sink.event(
            "content_block_start",
            {
                "type": "content_block_start",
                "index": self._block,
                "content_block": {"type": "text", "text": ""},
            },
        )
        await self._sink.delta(self._block, text)
        await self._sink.event(
            "content_block_stop", {"type": "content_block_stop", "index": self._block}
        )
        self._block += 1
        self._produced.texts.append(text)

    def _spec(self, tool: Tool) -> ToolSpec:
        if self._forms is not None and tool.execution_type == "form":
            return self._forms.spec(tool)
        return ToolSpec(tool.name, tool.description, tool.input_schema)

    async def _model_call(self, request: ModelRequest) -> tuple[str, list[ToolCall]]:
        parts: list[str] = []
        calls: list[ToolCall] = []
        open_block = False
        try:
            stream = self._turn.provider.stream(request)
            async for event in stream:
                if isinstance(event, TextDelta):
                    if not open_block:
                        open_block = True
                        await self._sink.event(
                            "content_block_start",
                            {
                                "type": "content_block_start",
                                "index": self._block,
                                "content_block": {"type": "text", "text": ""},
                            },
                        )
                    parts.append(event.text)
                    if shown := self._guard.feed(event.text):  # held back while checked
                        await self._sink.delta(self._block, shown)
                    if self._guard.hit:  # it must not say that: no more of this answer
                        await guardrails.close(stream)
                        break
                elif isinstance(event, ToolCall):
                    calls.append(_encodable(event))
                elif isinstance(event, Usage):
                    self._produced.add_usage(event)
            if rest := self._guard.flush():
                await self._sink.delta(self._block, rest)
        finally:
            # What streamed before a failure still counts as produced.
            if parts:
                self._produced.texts.append("".join(parts))
        if open_block:
            await self._sink.event(
                "content_block_stop", {"type": "content_block_stop", "index": self._block}
            )
            self._block += 1
        return "".join(parts), calls

    async def _run_tools(self, calls: list[ToolCall], context: list[Message]) -> bool:
        """Run one model call's tools; return True when a form tool or a handoff ends the
        turn."""
        for call in calls:
            await self._sink.event(
                "tool_use_start",
                {
                    "type": "tool_use_start",
                    "toolUseId": call.id,
                    "toolName": call.name,
                    "input": call.input if call.input is not None else call.raw_arguments,
                },
            )
        held = None
        if self._gate is not None and any(self._needs_person(call) for call in calls):
            held = await self._gate.hold(self._pause_point(calls, context), self._sink)
            self._held = held is not None
        tools = self._turn.tools
        gathered = asyncio.gather(
            *(
                telemetry.tool_call(
                    held.run(c) if held and held.holds(c) else self._run_one(c),
                    c,
                    tools.get(c.name),
                )
                for c in calls
            )
        )
        try:
            while True:
                done, _ = await asyncio.wait({gathered}, timeout=self._keepalive)
                if done:
                    break
                await self._sink.keepalive()
        finally:
            if not gathered.done():
                gathered.cancel()
                # Cancelled, it ends with an exception nobody awaits: taken, not logged.
                gathered.add_done_callback(lambda f: f.cancelled() or f.exception())
        results = gathered.result()
        if held is not None:
            calls = await held.settled(calls, results)
            self._held = False
        return await self._finish_tools(calls, results, context)

    def _needs_person(self, call: ToolCall) -> bool:
        tool = self._turn.tools.get(call.name)
        assert self._gate is not None
        return tool is not None and call.input is not None and self._gate.requires(tool)

    def _pause_point(self, calls: list[ToolCall], context: list[Message]) -> PausePoint:
        made = self._produced
        produced = Produced(
            tuple(made.texts), tuple(made.tool_calls), made.raw_usage(), self._block
        )
        return PausePoint(self._turn, self._step, tuple(context), tuple(calls), produced)

    async def _finish_tools(
        self, calls: list[ToolCall], results: list[Any], context: list[Message]
    ) -> bool:
        """Feed the calls' results back and stream them; True when a form tool or a handoff
        ends the turn."""
        form_shown = False
        for call, (output, is_error, form) in zip(calls, results, strict=True):
            tool = self._turn.tools.get(call.name)
            data: dict[str, Any] = {
                "type": "tool_result",
                "toolUseId": call.id,
                "toolName": call.name,
                "output": output,
                "isError": is_error,
                "displayConfig": tool.display_config if tool else None,
            }
            if form is not None:
                data["form"] = form
                form_shown = True
            self._produced.tool_calls.append(
                {
                    "toolUseId": call.id,
                    "toolName": call.name,
                    "input": call.input if call.input is not None else call.raw_arguments,
                    "output": output,
                    "isError": is_error,
                }
            )
            context.append(
                Message(
                    "tool",
                    output_text(output),
                    tool_use_id=call.id,
                    tool_name=call.name,
                    is_error=is_error,
                )
            )
            await self._sink.event("tool_result", data)
        if self._handoff is not None:
            await self._sink.event("handoff", {"type": "handoff", **self._handoff})
            return True
        return form_shown

    async def _run_one(self, call: ToolCall) -> tuple[Any, bool, dict[str, Any] | None]:
        if call.name == REQUEST_HUMAN and self._turn.offer_handoff and self._request_human:
            return await self._ask_for_person()
        tool = self._turn.tools.get(call.name)
        if tool is None:
            known = ", ".join(sorted(self._turn.tools)) or "none"
            return f"Unknown tool {call.name!r}; available tools: {known}", True, None
        if call.input is None:
            return (
                "Invalid input: the arguments must be a JSON object nesting at most "
                f"{MAX_INPUT_DEPTH} levels",
                True,
                None,
            )
        if tool.execution_type == "form" and self._forms is None:
            form = {
                "toolId": tool.id,
                "toolName": tool.name,
                "formSchema": tool.form_schema,
                "executionMode": tool.form_execution_mode or "webhook",
                "clientHandler": tool.form_client_handler,
            }
            return "The form was shown to the user.", False, form
        try:
            if tool.execution_type == "form" and self._forms is not None:
                output, is_error = await self._forms.fill(tool, self._turn.conversation, call.input)
                return output, is_error, None
            result = await self._runner.run(tool, call.input)
        except Exception:
            log.exception("tool %s failed", tool.id)
            return f"Tool {tool.name} failed unexpectedly", True, None
        return result.output, bool(result.is_error), None

    async def _ask_for_person(self) -> tuple[Any, bool, None]:
        if self._handoff is None:
            assert self._request_human is not None
            self._handoff = await self._request_human(self._turn.conversation)
        if self._handoff.get("online", True):
            return (
                "A person from the team was asked to take over; they will answer here.",
                False,
                None,
            )
        if self._turn.channel != "web":  # the channel reaches the person later
            return (
                "The team is away right now; a person will answer the user here when they"
                " are back.",
                False,
                None,
            )
        return (
            "The team is away right now; the user was asked for an e-mail address to be"
            " answered later.",
            False,
            None,
        )

    async def _store_to_the_end(self, status: str) -> bool:
        """Store the message even when cancelled meanwhile, and only then end: the turn's task
        outlives its write, so shutdown (which waits for the turns) never closes the database
        under it. A cancellation that came during the write is raised after it. False when
        the database could not store it."""
        store = asyncio.ensure_future(self._store(status))
        cancelled = False
        while not store.done():
            try:
                await asyncio.shield(store)
            except asyncio.CancelledError:
                cancelled = True
        if cancelled:
            raise asyncio.CancelledError
        return store.result()

    async def _store(self, status: str) -> bool:
        turn = self._turn
        now = now_iso()
        try:
            await self._write(status, now)
        except ConstraintViolation:
            # The conversation was deleted meanwhile: the stream still ends cleanly.
            log.info("assistant message %s: its conversation is gone", turn.message_id)
        except Exception:
            # The database is away (a lost connection, a restart): the reply is not kept.
            log.exception("could not store assistant message %s", turn.message_id)
            return False
        return True

    def _unanswered(self, content: str) -> bool:
        """Whether the answer found nothing: no curated answer, no tool, and the builtin
        model said it found nothing, or a provider model had no passage although the agent
        has knowledge, or nothing was produced at all."""
        turn = self._turn
        if turn.curated is not None or self._produced.tool_calls or turn.budget_reached:
            return False
        if not content.strip():
            return True
        if turn.agent.model == BUILTIN:
            return content.strip() == NOTHING_FOUND
        return not turn.passages and turn.knowledge

    async def _write(self, status: str, now: str) -> None:
        turn = self._turn
        produced = self._produced
        content = "\n\n".join(t for t in produced.texts if t)
        unanswered = self._unanswered(content)
        # The fallback after a mustNotSay hit, redacted for storage; its hits counted below.
        settled = await self._guard.settle(content, produced.tool_calls)
        message = StoredMessage(
            id=turn.message_id,
            conversation_id=turn.conversation.id,
            role="assistant",
            content=settled.content,
            tool_calls=settled.tool_calls or None,
            usage=produced.usage_json(self._meter, turn.agent.model),
            sources=self._sources() or None,
            status=status,
            model=turn.agent.model,
            rating=None,
            created_at=now,
            unanswered=unanswered,
            agent_version=turn.agent.version or None,  # a draft (0) has no number yet
        )

        key = question_key(turn.question) if unanswered else ""

        async def touch(tx: Tx) -> None:
            await conv_store.touch(tx, message.conversation_id, now)

        async def count_unanswered(tx: Tx) -> None:
            # The analytics' most frequent unanswered questions.
            await analytics_store.insert_unanswered(
                tx,
                message.id,
                turn.conversation.agent_id,
                now,
                key,
                " ".join(turn.question.split())[:QUESTION_CHARS],
            )

        alerts: list[BudgetAlert] = []
        await self._log.append_message(
            turn.conversation,
            message,
            before=self._counting(alerts, now),
            update=touch,
            after=guardrails.then_trace(count_unanswered if key else None, turn, settled, now),
        )
        if self._meter is not None:
            self._meter.notify(alerts)

    def _counting(
        self, alerts: list[BudgetAlert], now: str
    ) -> Callable[[Tx, Emission], Awaitable[None]] | None:
        """The answer's usage counted with it (its day's, month's and conversation's
        figures, and its budgets' warnings, added to `alerts`); None: nothing to count."""
        meter, produced, turn = self._meter, self._produced, self._turn
        if meter is None or (produced.input_tokens is None and produced.output_tokens is None):
            return None
        tokens = (produced.input_tokens, produced.output_tokens)
        cost = meter.prices.cost_nanos(turn.agent.model, tokens[0] or 0, tokens[1] or 0)
        used = usage_meter.answered(turn.agent, turn.conversation.id, tokens, cost, now)

        async def count(tx: Tx, emission: Emission) -> None:
            alerts.extend(await meter.record(tx, emission, turn.agent, used, turn.spending))

        return count
