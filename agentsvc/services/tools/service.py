"""The tools feature as the API uses it: an agent's tools (HTTP, mock, form, MCP), with the
plan's tool limit, and the team's secrets their headers draw on."""

from __future__ import annotations

from typing import Any

from agentsvc.config import Settings
from agentsvc.db import Database
from agentsvc.mcp_client import McpClient
from agentsvc.secretbox import SecretBox
from agentsvc.services.audit import Actor
from agentsvc.services.tools import definitions
from agentsvc.services.tools.definitions import TeamPlan, ToolDeps, ToolLimits
from agentsvc.store.tools import Tool


class ToolsService:
    """Create, change, list an MCP server of, and delete a team's tools."""

    def __init__(self, db: Database, box: SecretBox, mcp: McpClient, settings: Settings):
        self._db = db
        self._box = box
        self._plans = settings.plans
        self._deps = ToolDeps(db, box, mcp, settings.outbound.allow_private)

    def _plan(self, team_id: str, plan_id: str) -> TeamPlan:
        return TeamPlan(team_id, plan_id, self._plans.limits(plan_id).tool_limit)

    def webhook_secret(self, tool: Tool) -> str | None:
        """The clear `whsec_...` signing secret of a form tool (shown to its team)."""
        return definitions.webhook_secret(self._box, tool)

    async def list_tools(self, team_id: str, agent_id: str) -> list[Tool]:
        """Return an agent's tools, oldest first."""
        return await definitions.list_tools(self._db, team_id, agent_id)

    async def limits(self, team_id: str, plan_id: str, agent_id: str) -> ToolLimits:
        """How many tools the agent has against the plan's per-agent limit."""
        return await definitions.tool_limits(self._db, self._plan(team_id, plan_id), agent_id)

    async def get(self, team_id: str, tool_id: str) -> Tool:
        """Return the team's tool or raise NotFound."""
        return await definitions.get_tool(self._db, team_id, tool_id)

    async def create(
        self, actor: Actor, plan_id: str, agent_id: str, given: dict[str, Any]
    ) -> Tool:
        """Create a tool for the actor team's agent, within the plan's tool limit."""
        plan = self._plan(actor.team_id, plan_id)
        return await definitions.create_tool(self._deps, plan, agent_id, given, actor)

    async def update(self, actor: Actor, plan_id: str, tool_id: str, given: dict[str, Any]) -> Tool:
        """Apply a partial update, checked as a whole."""
        plan = self._plan(actor.team_id, plan_id)
        return await definitions.update_tool(self._deps, plan, tool_id, given, actor)

    async def refresh(self, actor: Actor, plan_id: str, tool_id: str) -> Tool:
        """List an mcp tool's server again and store what it now exposes."""
        plan = self._plan(actor.team_id, plan_id)
        return await definitions.refresh_tool(self._deps, plan, tool_id, actor)

    async def preview(
        self, team_id: str, url: str, headers: dict[str, str] | None, prefix: str | None
    ) -> list[dict[str, Any]]:
        """An MCP server's tools as the tool editor's checklist shows them (nothing stored)."""
        return await definitions.preview_server(self._deps, team_id, url, headers, prefix)

    async def delete(self, actor: Actor, tool_id: str) -> None:
        """Delete the actor team's tool or raise NotFound."""
        await definitions.delete_tool(self._db, actor.team_id, tool_id, actor)
