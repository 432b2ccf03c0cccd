"""A paused turn as it is kept (`paused_turns.state`, JSON): everything another process
needs to take the turn up where it stopped, and back again.

What the agent said and did before the pause, the context the model reads (with the
model's message and its calls), the passages and curated answer it was given, and the
agent as this turn knew it (a version, a variant or the draft: its prompt, model and
settings), so the turn goes on with what it began with.
"""

from __future__ import annotations

from dataclasses import asdict, replace
from typing import Any

from agentsvc.llm.base import Message, ToolCall
from agentsvc.services.agents import versions
from agentsvc.services.answers.matching import CuratedMatch
from agentsvc.services.chat.pause import PausePoint, Produced
from agentsvc.services.knowledge.retrieval import Passage
from agentsvc.store.agents import Agent

VERSION = 1  # of this shape


def _call(call: ToolCall) -> dict[str, Any]:
    return {"id": call.id, "name": call.name, "input": call.input, "raw": call.raw_arguments}


def call_of(data: dict[str, Any]) -> ToolCall:
    return ToolCall(data["id"], data["name"], data["input"], data.get("raw", ""))


def _message(m: Message) -> dict[str, Any]:
    return {
        "role": m.role,
        "content": m.content,
        "toolCalls": [_call(c) for c in m.tool_calls],
        "toolUseId": m.tool_use_id,
        "toolName": m.tool_name,
        "isError": m.is_error,
    }


def _message_of(data: dict[str, Any]) -> Message:
    return Message(
        data["role"],
        data["content"],
        tuple(call_of(c) for c in data["toolCalls"]),
        data["toolUseId"],
        data["toolName"],
        data["isError"],
    )


def encode(point: PausePoint) -> dict[str, Any]:
    """The pause point as kept (`results` fills in as the calls not held end)."""
    turn = point.turn
    produced = point.produced
    return {
        "v": VERSION,
        "agentId": turn.agent.id,
        "version": turn.agent.version,
        "agent": {field: getattr(turn.agent, col) for field, col in versions.DRAFTED.items()},
        "question": turn.question,
        "channel": turn.channel,
        "replyAddress": turn.reply_address,
        "replyInReplyTo": turn.reply_in_reply_to,
        "offerHandoff": turn.offer_handoff,
        "knowledge": turn.knowledge,
        "passages": [asdict(p) for p in turn.passages],
        "curated": asdict(turn.curated) if turn.curated is not None else None,
        "step": point.step,
        "context": [_message(m) for m in point.context],
        "calls": [_call(c) for c in point.calls],
        "results": {},
        "produced": {
            "texts": list(produced.texts),
            "toolCalls": list(produced.tool_calls),
            "usage": produced.usage,
            "block": produced.block,
        },
    }


def agent_as_paused(live: Agent, state: dict[str, Any]) -> Agent:
    """The agent as the paused turn knew it, from the live one."""
    return replace(live, **versions.columns_of(state["agent"]), version=state["version"])


def passages(state: dict[str, Any]) -> list[Passage]:
    return [Passage(**p) for p in state["passages"]]


def curated(state: dict[str, Any]) -> CuratedMatch | None:
    return CuratedMatch(**state["curated"]) if state["curated"] is not None else None


def context(state: dict[str, Any]) -> tuple[Message, ...]:
    return tuple(_message_of(m) for m in state["context"])


def calls(state: dict[str, Any]) -> tuple[ToolCall, ...]:
    return tuple(call_of(c) for c in state["calls"])


def produced(state: dict[str, Any]) -> Produced:
    made = state["produced"]
    return Produced(tuple(made["texts"]), tuple(made["toolCalls"]), made["usage"], made["block"])
