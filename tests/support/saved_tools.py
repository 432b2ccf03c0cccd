"""Tools saved while `[outbound] allow_private` was on, for a server where it is now off."""

from __future__ import annotations

from aiohttp.test_utils import TestClient

from agentsvc.api import app_keys
from agentsvc.api.tools import ToolCreate
from agentsvc.services.tools import definitions as tool_service
from agentsvc.store.tools import Tool


async def save_tool_as_if_private_allowed(client: TestClient, team_id: str, body: dict) -> Tool:
    """Create a tool from its JSON body with the save-time private-address check off.

    The API refuses literal private addresses when allow_private is false; a tool saved
    before the setting was turned off still exists, and must still be stopped when it sends.
    """
    given = ToolCreate.model_validate(body).given()
    agent_id = given.pop("agent_id")
    deps = tool_service.ToolDeps(
        client.app[app_keys.db_key], client.app[app_keys.secret_box_key], allow_private=True
    )
    return await tool_service.create_tool(
        deps, tool_service.TeamPlan(team_id, "pro"), agent_id, given
    )
