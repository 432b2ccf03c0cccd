"""An agent's MCP server endpoint as one object: which agent a caller may speak MCP with,
and the SDK server of that agent (services/agents/mcp_server.py).

The SDK is loaded on the first MCP request, not at start-up (it takes about as long to
import as the rest of the service): this module stays light and imports it lazily.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from agentsvc import cpu
from agentsvc.db import Database
from agentsvc.errors import NotFound
from agentsvc.services.agents import registry as agents_service
from agentsvc.services.agents.registry import AgentCache
from agentsvc.services.chat.turns import ChatTurns
from agentsvc.services.knowledge.vectors import Semantic

if TYPE_CHECKING:
    from mcp.server import Server


# The SDK's server side, as the first MCP request uses it (mcp_server, and the transport
# that api/mcp.py runs it in).
_SDK = ("agentsvc.services.agents.mcp_server", "mcp.server.streamable_http_manager")


@dataclass(frozen=True, slots=True)
class AgentServerDeps:
    """What the MCP tools of an agent run on."""

    db: Database
    turns: ChatTurns  # `ask` is a chat turn like any other door's
    semantic: Semantic | None
    top_k: int
    turn_seconds: float


class McpServerService:
    """The agents' MCP servers (one instance for the app; one SDK server per request)."""

    def __init__(self, deps: AgentServerDeps, agents: AgentCache):
        self._deps = deps
        self._agents = agents

    async def server_for(self, team_id: str, agent_id: str) -> Server:
        """The MCP server of the team's agent, or NotFound (another team's agent too)."""
        agents = self._agents
        agent = agents.get(agent_id) or await agents_service.find_agent(
            self._deps.db, agents, agent_id
        )
        if agent is None or agent.team_id != team_id:
            raise NotFound("Agent not found")
        await cpu.load_modules(*_SDK)  # off the event loop, on the first request
        from agentsvc.services.agents import mcp_server

        return mcp_server.agent_server(self._deps, agent, team_id)
