"""Changes that caches must hear of, in every process that serves the same database.

A service that changes what a cache holds announces a topic through the database
(`db.announce`); every process's caches follow the topics (`follow`). On SQLite that is a
call in this process; on PostgreSQL a NOTIFY reaches every process within milliseconds.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from agentsvc.db import RESYNC, Database

if TYPE_CHECKING:
    from agentsvc.services.agents.registry import AgentCache
    from agentsvc.services.answers.matching import CuratedAnswers
    from agentsvc.services.channels.cache import ChannelCache
    from agentsvc.services.events.emitter import Emitter
    from agentsvc.services.knowledge.vectors import VectorIndex
    from agentsvc.services.team.access import KeyResolver
    from agentsvc.services.widget.public import WidgetConfigCache

PRINCIPALS = "principals"  # keys, sessions, members or a team's plan changed
_AGENT = "agent:"
_VECTORS = "vectors:"
_CONVERSATION = "conversation:"
_WEBHOOKS = "webhooks:"
_ANSWERS = "answers:"
_CHANNEL = "channel:"


def agent(agent_id: str) -> str:
    """An agent's settings changed (or it was deleted)."""
    return _AGENT + agent_id


def vectors(agent_id: str) -> str:
    """An agent's documents or passage embeddings changed."""
    return _VECTORS + agent_id


def webhooks(team_id: str) -> str:
    """A team's event webhooks changed (created or deleted)."""
    return _WEBHOOKS + team_id


def answers(agent_id: str) -> str:
    """An agent's curated answers changed."""
    return _ANSWERS + agent_id


def channel(channel_id: str) -> str:
    """A channel's settings changed (or it was deleted)."""
    return _CHANNEL + channel_id


def conversation(team_id: str, conversation_id: str) -> str:
    """A conversation has new events in the log (services/handoff/live.py reads them)."""
    return f"{_CONVERSATION}{team_id}:{conversation_id}"


def parse_conversation(topic: str) -> tuple[str, str] | None:
    """(team id, conversation id) of a `conversation` topic, or None for another topic."""
    if not topic.startswith(_CONVERSATION):
        return None
    team_id, _, conversation_id = topic[len(_CONVERSATION) :].partition(":")
    return team_id, conversation_id


@dataclass(frozen=True)
class Caches:
    """The caches a process keeps of what other writers change (any may be left out)."""

    resolver: KeyResolver | None = None
    agents: AgentCache | None = None
    vector_index: VectorIndex | None = None
    widget_configs: WidgetConfigCache | None = None
    emitter: Emitter | None = None
    curated: CuratedAnswers | None = None
    channels: ChannelCache | None = None


def follow(db: Database, caches: Caches) -> None:
    """Keep these caches in step with the announced changes."""
    resolver, agents, vector_index = caches.resolver, caches.agents, caches.vector_index
    widget_configs, emitter, curated = caches.widget_configs, caches.emitter, caches.curated
    channels = caches.channels

    def on_change(topic: str) -> None:
        if topic == RESYNC:
            if channels is not None:
                channels.clear()
            if resolver is not None:
                resolver.invalidate()
            if agents is not None:
                agents.clear()
            if curated is not None:
                curated.clear()
            if vector_index is not None:
                vector_index.invalidate_all()
            if widget_configs is not None:
                widget_configs.clear()
            if emitter is not None:
                emitter.clear()
        elif topic == PRINCIPALS:
            if resolver is not None:
                resolver.invalidate()
        elif topic.startswith(_AGENT):
            if agents is not None:
                agents.forget(topic[len(_AGENT) :])
            if widget_configs is not None:
                widget_configs.forget(topic[len(_AGENT) :])
            if curated is not None:  # the agent's language, or the agent itself, is gone
                curated.forget(topic[len(_AGENT) :])
            if channels is not None:  # a deleted agent's channels went with it
                channels.forget_agent(topic[len(_AGENT) :])
        elif topic.startswith(_CHANNEL):
            if channels is not None:
                channels.forget(topic[len(_CHANNEL) :])
        elif topic.startswith(_ANSWERS):
            if curated is not None:
                curated.forget(topic[len(_ANSWERS) :])
        elif topic.startswith(_VECTORS) and vector_index is not None:
            vector_index.invalidate(topic[len(_VECTORS) :])
        elif topic.startswith(_WEBHOOKS) and emitter is not None:
            emitter.forget(topic[len(_WEBHOOKS) :])

    db.subscribe(on_change)
