"""What a chat turn's span says, in the GenAI semantic conventions (`invoke_agent`).

Its model calls, tool calls and retrieval are spans of their own, made by
`agentsvc.telemetry`'s hooks; this names the turn around them. Nothing here is a visitor's
words: the agent's name and ids, the model and the conversation's id.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from agentsvc.llm.base import BUILTIN, split_model_id

if TYPE_CHECKING:
    from agentsvc.services.chat.turn import TurnRunner


def invoke_agent(runner: TurnRunner) -> tuple[str, dict[str, Any]]:
    """The span name and attributes of the turn a runner plays."""
    turn = runner._turn  # noqa: SLF001 - the runner's own turn, read at its start
    agent = turn.agent
    provider, model = (
        ("agentsvc.builtin", BUILTIN) if agent.model == BUILTIN else split_model_id(agent.model)
    )
    attributes: dict[str, Any] = {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.provider.name": provider,
        "gen_ai.agent.id": agent.id,
        "gen_ai.agent.name": agent.name,
        "gen_ai.conversation.id": turn.conversation.id,
        "gen_ai.request.model": model,
        "agentsvc.channel": turn.channel,
    }
    if agent.version:
        attributes["gen_ai.agent.version"] = str(agent.version)
    return f"invoke_agent {agent.name}", attributes
