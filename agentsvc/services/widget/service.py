"""The widget feature as the API uses it: an agent's public configuration (look, texts,
starters) and what the demo page embeds."""

from __future__ import annotations

from agentsvc.db import Database
from agentsvc.errors import NotFound
from agentsvc.services.agents import registry
from agentsvc.services.agents.registry import AgentCache
from agentsvc.services.widget import public
from agentsvc.services.widget.public import RenderedConfig, WidgetConfigCache
from agentsvc.store.agents import Agent


class WidgetService:
    """What any visitor's widget reads, through the agent and rendered-config caches."""

    def __init__(
        self, db: Database, agents: AgentCache, configs: WidgetConfigCache, public_url: str
    ):
        self._db = db
        self._agents = agents
        self._configs = configs
        # The configured address, never a Host header: a forged Host must not put another
        # site's script into a page served from this origin.
        self.public_url = public_url.rstrip("/")

    async def config(self, agent_id: str) -> RenderedConfig:
        """The agent's rendered public config, or NotFound."""
        return await public.widget_config(self._db, self._agents, self._configs, agent_id)

    async def agent(self, agent_id: str) -> Agent:
        """The agent with this id, whatever its team (public pages), or NotFound."""
        agent = await registry.find_agent(self._db, self._agents, agent_id)
        if agent is None:
            raise NotFound("Agent not found")
        return agent
