"""Tool endpoints: list by agent, get, limits, create, partial update, delete (bare bodies)."""

from __future__ import annotations

from typing import Annotated, Any, ClassVar

from pydantic import Field
from pydantic.json_schema import SkipJsonSchema

from agentsvc.api import app_keys
from agentsvc.api.audit import actor_of
from agentsvc.api.models import QueryModel, RequestModel, ResponseModel
from agentsvc.api.routing import Call, RouteTable, json_response
from agentsvc.services.tools import rules
from agentsvc.services.tools.service import ToolsService
from agentsvc.store.tools import Tool

routes = RouteTable("tools")


def _tools(call: Call) -> ToolsService:
    return call.app[app_keys.tools_key]


# Ids carry their prefix, so /tools/limits is never read as a tool id (nor its Allow merged).
TOOL_PATH = "/tools/{id:tool_[A-Za-z0-9_-]+}"

JsonObject = dict[str, Any]

_NULLABLE = frozenset(
    {
        "displayConfig",
        "httpHeaders",
        "formWebhookUrl",
        "formClientHandler",
        "formPostActions",
        "mcpHeaders",
        "mcpTools",
        "approvalTimeoutSeconds",
    }
)


def _doc(**schema: Any) -> Any:
    # Documented bounds that tool_rules enforces with its own field-naming messages: the
    # schema says what is accepted, the service says why something was not.
    return Field(None, json_schema_extra=schema)


_URL = {"minLength": 1, "maxLength": rules.MAX_URL_CHARS}


class _ToolFields(RequestModel):
    """Fields shared by create and update; nested shapes are checked by tool_rules."""

    nullable: ClassVar[frozenset[str]] = _NULLABLE

    name: str | SkipJsonSchema[None] = _doc(pattern=rules.NAME_PATTERN)
    description: str | SkipJsonSchema[None] = _doc(**rules.DESCRIPTION_SCHEMA)
    execution_type: str | SkipJsonSchema[None] = _doc(enum=list(rules.EXECUTION_TYPES))
    type: str | SkipJsonSchema[None] = _doc(enum=["form"], description='"form": synonym spelling')
    input_schema: JsonObject | SkipJsonSchema[None] = None
    is_enabled: bool | SkipJsonSchema[None] = None
    display_config: JsonObject | None = None
    requires_approval: bool | SkipJsonSchema[None] = Field(
        None,
        description="a person from the team approves each call before it runs (not for forms)",
    )
    approval_timeout_seconds: (
        Annotated[int, Field(ge=1, le=rules.MAX_APPROVAL_TIMEOUT_SECONDS)] | None
    ) = Field(
        None,
        description="how long a call waits for approval before it is denied (default"
        f" {rules.DEFAULT_APPROVAL_TIMEOUT_SECONDS}; null: the default)",
    )
    mock_response: str | SkipJsonSchema[None] = _doc(maxLength=rules.MAX_MOCK_RESPONSE_CHARS)
    http_url: str | SkipJsonSchema[None] = _doc(**_URL)
    http_method: str | SkipJsonSchema[None] = _doc(enum=list(rules.HTTP_METHODS))
    http_headers: dict[str, str] | None = _doc(maxProperties=rules.MAX_HEADERS)
    form_schema: JsonObject | SkipJsonSchema[None] = None
    form_fields_schema: list[JsonObject] | SkipJsonSchema[None] = _doc(
        minItems=1, maxItems=rules.MAX_FIELDS
    )
    form_execution_mode: str | SkipJsonSchema[None] = _doc(enum=list(rules.EXECUTION_MODES))
    form_webhook_url: str | None = _doc(**_URL)
    form_client_handler: str | None = _doc(**rules.CLIENT_HANDLER_SCHEMA)
    form_post_actions: list[JsonObject] | None = _doc(maxItems=rules.MAX_POST_ACTIONS)
    mcp_url: str | SkipJsonSchema[None] = _doc(**_URL)
    mcp_headers: dict[str, str] | None = _doc(maxProperties=rules.MAX_HEADERS)
    mcp_tools: list[str] | None = _doc(
        minItems=1,
        maxItems=rules.MAX_MCP_TOOL_NAMES,
        uniqueItems=True,
        items={"type": "string", "minLength": 1, "maxLength": rules.MAX_MCP_TOOL_NAME_CHARS},
    )


class ToolCreate(_ToolFields):
    agent_id: str = Field(min_length=1, max_length=100)
    name: str = Field(json_schema_extra={"pattern": rules.NAME_PATTERN})
    description: str = Field(json_schema_extra=rules.DESCRIPTION_SCHEMA)


class ToolUpdate(_ToolFields):
    pass


class McpPreviewBody(RequestModel):
    """An MCP server to list the tools of (nothing is stored)."""

    nullable: ClassVar[frozenset[str]] = frozenset({"mcpHeaders"})

    mcp_url: str = Field(json_schema_extra=_URL)
    mcp_headers: dict[str, str] | None = _doc(maxProperties=rules.MAX_HEADERS)
    name: str | SkipJsonSchema[None] = _doc(
        pattern=rules.NAME_PATTERN, description="the tool's name: the prefix of exposedName"
    )


class McpServerToolOut(ResponseModel):
    name: str
    description: str
    input_schema: Any
    exposed_name: str | None
    problem: str | None


class AgentQuery(QueryModel):
    agent_id: str = Field(min_length=1, max_length=100)


class McpFunctionOut(ResponseModel):
    name: str
    server_name: str
    description: str
    input_schema: JsonObject


class ToolOut(ResponseModel):
    id: str
    agent_id: str
    name: str
    description: str
    execution_type: str
    input_schema: JsonObject
    is_enabled: bool
    display_config: JsonObject | None
    requires_approval: bool
    approval_timeout_seconds: int | None
    mock_response: str | None
    http_url: str | None
    http_method: str | None
    http_headers: dict[str, str] | None
    form_schema: JsonObject | None
    form_execution_mode: str | None
    form_webhook_url: str | None
    form_client_handler: str | None
    form_post_actions: list[JsonObject] | None
    form_webhook_secret: str | None
    mcp_url: str | None
    mcp_headers: dict[str, str] | None
    mcp_tools: list[str] | None
    mcp_server_tools: list[McpFunctionOut] | None
    mcp_listed_at: str | None
    created_at: str
    updated_at: str


class ToolLimitsOut(ResponseModel):
    current: int
    limit: int | None
    plan_id: str
    can_create: bool


class Success(ResponseModel):
    success: bool


def tool_json(call: Call, tool: Tool) -> dict:
    """A tool as its team sees it, including a form tool's webhook signing secret."""
    return {
        "id": tool.id,
        "agentId": tool.agent_id,
        "name": tool.name,
        "description": tool.description,
        "executionType": tool.execution_type,
        "inputSchema": tool.input_schema,
        "isEnabled": tool.is_enabled,
        "displayConfig": tool.display_config,
        "requiresApproval": tool.requires_approval,
        "approvalTimeoutSeconds": tool.approval_timeout_seconds,
        "mockResponse": tool.mock_response,
        "httpUrl": tool.http_url,
        "httpMethod": tool.http_method,
        "httpHeaders": tool.http_headers,
        "formSchema": tool.form_schema,
        "formExecutionMode": tool.form_execution_mode,
        "formWebhookUrl": tool.form_webhook_url,
        "formClientHandler": tool.form_client_handler,
        "formPostActions": tool.form_post_actions,
        "formWebhookSecret": _tools(call).webhook_secret(tool),
        "mcpUrl": tool.mcp_url,
        "mcpHeaders": tool.mcp_headers,
        "mcpTools": tool.mcp_tools,
        "mcpServerTools": tool.mcp_server_tools,
        "mcpListedAt": tool.mcp_listed_at,
        "createdAt": tool.created_at,
        "updatedAt": tool.updated_at,
    }


def _plan(call: Call) -> str:
    assert call.principal is not None
    return call.principal.plan


@routes.get("/tools", query=AgentQuery, response=list[ToolOut], errors=(404,))
async def list_tools(call: Call):
    """List an agent's tools, oldest first."""
    tools = await _tools(call).list_tools(call.team_id, call.query.agent_id)
    return json_response([tool_json(call, t) for t in tools])


@routes.get("/tools/limits", query=AgentQuery, response=ToolLimitsOut, errors=(404,))
async def get_tool_limits(call: Call):
    """Report the agent's tool count against the plan's per-agent tool limit."""
    limits = await _tools(call).limits(call.team_id, _plan(call), call.query.agent_id)
    return json_response(
        {
            "current": limits.current,
            "limit": limits.limit,
            "planId": limits.plan_id,
            "canCreate": limits.can_create,
        }
    )


@routes.get(TOOL_PATH, response=ToolOut, errors=(404,))
async def get_tool(call: Call):
    """Get one tool."""
    tool = await _tools(call).get(call.team_id, call.params["id"])
    return json_response(tool_json(call, tool))


@routes.post("/tools", body=ToolCreate, response=ToolOut, status=201, errors=(403, 404))
async def post_tool(call: Call):
    """Create a tool for an agent (403 TOOL_LIMIT_REACHED beyond the plan's limit)."""
    body: ToolCreate = call.body
    given = body.given()
    given.pop("agent_id")
    tool = await _tools(call).create(actor_of(call), _plan(call), body.agent_id, given)
    return json_response(tool_json(call, tool), status=201)


@routes.put(TOOL_PATH, body=ToolUpdate, response=ToolOut, errors=(403, 404, 409))
async def put_tool(call: Call):
    """Update some fields of a tool; the result is checked as a whole."""
    tool = await _tools(call).update(
        actor_of(call), _plan(call), call.params["id"], call.body.given()
    )
    return json_response(tool_json(call, tool))


@routes.post(TOOL_PATH + "/refresh", response=ToolOut, errors=(403, 404, 409))
async def refresh_tool(call: Call):
    """List an mcp tool's server again and store the tools it now exposes."""
    tool = await _tools(call).refresh(actor_of(call), _plan(call), call.params["id"])
    return json_response(tool_json(call, tool))


@routes.post("/tools/mcp-preview", body=McpPreviewBody, response=list[McpServerToolOut])
async def preview_mcp_tools(call: Call):
    """List an MCP server's tools without saving anything (the tool editor's checklist)."""
    body: McpPreviewBody = call.body
    tools = await _tools(call).preview(call.team_id, body.mcp_url, body.mcp_headers, body.name)
    return json_response(tools)


@routes.delete(TOOL_PATH, response=Success, errors=(404,))
async def delete_tool(call: Call):
    """Delete a tool."""
    await _tools(call).delete(actor_of(call), call.params["id"])
    return json_response({"success": True})
