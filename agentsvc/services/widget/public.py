"""The public widget config of an agent, rendered once and kept until the agent changes.

`GET /widget/config/:agentId` is read by every page view of every site: it is answered
from bytes rendered once per agent version. An entry is dropped when the agent changes
(`changes.follow`, in every process), and is only used for the very agent object the
agent cache holds, so a render of an older version is never served after a change.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import orjson

from agentsvc.db import Database
from agentsvc.errors import NotFound
from agentsvc.services.agents import registry as agent_service
from agentsvc.services.agents.registry import AgentCache
from agentsvc.services.widget.look import public_config
from agentsvc.store.agents import Agent


@dataclass(frozen=True, slots=True)
class RenderedConfig:
    """The config as JSON bytes, with a digest of them (the HTTP layer's strong ETag)."""

    agent: Agent
    body: bytes
    digest: str


class WidgetConfigCache:
    """Rendered configs by agent id; bounded, emptied when full like the agent cache."""

    def __init__(self, max_entries: int = 10_000):
        self._by_id: dict[str, RenderedConfig] = {}
        self._max_entries = max_entries

    def get(self, agent: Agent) -> RenderedConfig | None:
        found = self._by_id.get(agent.id)
        return found if found is not None and found.agent is agent else None

    def put(self, rendered: RenderedConfig) -> None:
        if len(self._by_id) >= self._max_entries:
            self._by_id.clear()
        self._by_id[rendered.agent.id] = rendered

    def forget(self, agent_id: str) -> None:
        self._by_id.pop(agent_id, None)

    def clear(self) -> None:
        self._by_id.clear()


def render(agent: Agent) -> RenderedConfig:
    """Render an agent's public config."""
    body = orjson.dumps(public_config(agent))
    return RenderedConfig(agent, body, hashlib.sha256(body).hexdigest()[:32])


async def widget_config(
    db: Database, agents: AgentCache, configs: WidgetConfigCache, agent_id: str
) -> RenderedConfig:
    """The agent's rendered public config, or NotFound."""
    agent = await agent_service.find_agent(db, agents, agent_id)
    if agent is None:
        raise NotFound("Agent not found")
    rendered = configs.get(agent)
    if rendered is None:
        rendered = render(agent)
        configs.put(rendered)
    return rendered
