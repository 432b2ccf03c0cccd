"""Tools: create, update, delete, list, and the plan's tool limit per agent."""

from __future__ import annotations

import base64
import secrets
from dataclasses import dataclass, replace
from typing import Any

from agentsvc import cpu
from agentsvc.db import ConstraintViolation, Database, Tx
from agentsvc.errors import Conflict, DuplicateName, NotFound, ToolLimitReached, ValidationFailed
from agentsvc.ids import new_id, now_iso
from agentsvc.mcp_client import McpClient
from agentsvc.secretbox import SecretBox
from agentsvc.services import audit
from agentsvc.services.agents import versions
from agentsvc.services.audit import Actor
from agentsvc.services.tools import mcp as mcp_service
from agentsvc.services.tools import rules as tool_rules
from agentsvc.services.tools.secrets import SecretsService
from agentsvc.store import agents as agents_store
from agentsvc.store import tools as tools_store
from agentsvc.store.tools import Tool

# Fields a client may set (Python names); the rest are the service's.
CLIENT_FIELDS = (
    "name",
    "description",
    "execution_type",
    "input_schema",
    "is_enabled",
    "display_config",
    "requires_approval",
    "approval_timeout_seconds",
    *(f for fields in tool_rules.TYPE_FIELDS.values() for f in fields),
)


@dataclass(frozen=True, slots=True)
class ToolDeps:
    """What saving a tool uses: the database, the secret box (webhook secrets, and the
    team's secrets in an MCP server's headers), the MCP client (to list a server) and
    whether tools may target private addresses (`[outbound] allow_private`)."""

    db: Database
    box: SecretBox
    mcp: McpClient | None = None
    allow_private: bool = False

    @property
    def secrets(self) -> SecretsService:
        return SecretsService(self.db, self.box)


@dataclass(frozen=True, slots=True)
class TeamPlan:
    """The calling team, its plan and the plan's per-agent tool limit (None: no limit)."""

    team_id: str
    plan_id: str
    limit: int | None = None


@dataclass(frozen=True, slots=True)
class ToolLimits:
    current: int
    limit: int | None
    plan_id: str
    can_create: bool


def new_webhook_secret() -> str:
    """A Standard Webhooks signing secret: `whsec_` + base64 of 32 random bytes."""
    return "whsec_" + base64.b64encode(secrets.token_bytes(32)).decode("ascii")


def _secret_context(tool_id: str) -> str:
    return f"tool-webhook:{tool_id}"


def webhook_secret(box: SecretBox, tool: Tool) -> str | None:
    """The clear `whsec_...` signing secret of a form tool (for its team, and for signing)."""
    if tool.form_webhook_secret is None:
        return None
    return box.open(tool.form_webhook_secret, _secret_context(tool.id))


def canonical_fields(given: dict[str, Any]) -> dict[str, Any]:
    """Fold the `type: "form"` + `formFieldsSchema` spelling into executionType/formSchema."""
    fields = dict(given)
    spelled_type = fields.pop("type", None)
    if spelled_type is not None:
        if spelled_type != "form":
            raise ValidationFailed('type: only "form" is accepted here; use executionType')
        if fields.get("execution_type") not in (None, "form"):
            raise ValidationFailed('type: "form" contradicts executionType')
        fields["execution_type"] = "form"
    if "form_fields_schema" in fields:
        field_list = fields.pop("form_fields_schema")
        if "form_schema" in fields:
            raise ValidationFailed("formFieldsSchema: give it or formSchema, not both")
        if not isinstance(field_list, list):
            raise ValidationFailed("formFieldsSchema: must be a list of fields")
        fields["form_schema"] = {"fields": field_list}
    return fields


def _check(tool: dict[str, Any], given: dict[str, Any], *, allow_private: bool) -> dict[str, Any]:
    """check_tool, its messages naming the fields as the caller spelled them."""
    try:
        return tool_rules.check_tool(tool, allow_private=allow_private)
    except ValidationFailed as exc:
        if "form_fields_schema" in given and exc.message.startswith("formSchema.fields"):
            spelled = "formFieldsSchema" + exc.message.removeprefix("formSchema.fields")
            raise ValidationFailed(spelled) from exc
        raise


def _apply_defaults(tool: dict[str, Any]) -> None:
    kind = tool.get("execution_type")
    if kind == "http" and tool.get("http_method") is None:
        tool["http_method"] = "GET"
    if kind == "http" and isinstance(tool.get("http_method"), str):
        tool["http_method"] = tool["http_method"].upper()
    if kind == "form":
        if tool.get("form_execution_mode") is None:
            tool["form_execution_mode"] = default_form_mode(tool)
        if tool.get("input_schema") is None:
            # The form spelling carries no inputSchema: the model calls the form with nothing.
            tool["input_schema"] = dict(tool_rules.EMPTY_INPUT_SCHEMA)
    if kind == "mcp" and tool.get("input_schema") is None:
        # The server's tools bring their own schemas (mcpServerTools).
        tool["input_schema"] = dict(tool_rules.EMPTY_INPUT_SCHEMA)
    tool["requires_approval"] = bool(tool.get("requires_approval"))
    if tool["requires_approval"] and tool.get("approval_timeout_seconds") is None:
        tool["approval_timeout_seconds"] = tool_rules.DEFAULT_APPROVAL_TIMEOUT_SECONDS


def default_form_mode(tool: dict[str, Any]) -> str:
    """The mode of a form tool that names none: `webhook` when it has an address, else
    `client` (its handler runs in the page; without one, submissions are only stored)."""
    return "webhook" if tool.get("form_webhook_url") is not None else "client"


def _stores_only(tool: Tool) -> bool:
    return (
        tool.execution_type == "form"
        and tool.form_execution_mode == "client"
        and tool.form_client_handler is None
    )


async def _require_agent(tx: Any, team_id: str, agent_id: str) -> None:
    if await agents_store.get(tx, team_id, agent_id) is None:
        raise NotFound("Agent not found")


async def list_tools(db: Database, team_id: str, agent_id: str) -> list[Tool]:
    """Return an agent's tools, oldest first; NotFound for another team's agent."""
    await _require_agent(db.reader, team_id, agent_id)
    return await tools_store.list_for_agent(db.reader, team_id, agent_id)


async def get_tool(db: Database, team_id: str, tool_id: str) -> Tool:
    """Return the team's tool or raise NotFound."""
    tool = await tools_store.get(db.reader, team_id, tool_id)
    if tool is None:
        raise NotFound("Tool not found")
    return tool


def _limits(current: int, limit: int | None, plan_id: str) -> ToolLimits:
    return ToolLimits(current, limit, plan_id, limit is None or current < limit)


async def tool_limits(db: Database, plan: TeamPlan, agent_id: str) -> ToolLimits:
    """How many tools the agent has against the plan's per-agent limit."""
    await _require_agent(db.reader, plan.team_id, agent_id)
    current = await tools_store.count_for_agent(db.reader, agent_id)
    return _limits(current, plan.limit, plan.plan_id)


async def _checked(
    tool: dict[str, Any], given: dict[str, Any], *, allow_private: bool
) -> dict[str, Any]:
    """_check in a low-priority worker thread (agentsvc/cpu.py): an inputSchema is checked
    against the metaschema within the work budget of one tool input (up to ~0.5 s)."""
    return await cpu.run(_check, tool, given, allow_private=allow_private)


def _check_limit(plan: TeamPlan, others: int, adding: int, mcp: bool) -> None:
    """TOOL_LIMIT_REACHED when `adding` tools beside `others` pass the plan's limit."""
    if plan.limit is None or others + adding <= plan.limit:
        return
    message = f"Tool limit reached: the {plan.plan_id} plan allows {plan.limit} tools per agent"
    if mcp:
        message += (
            f"; this MCP server would expose {adding} and the agent's other tools count"
            f" {others} (choose fewer with mcpTools)"
        )
    raise ToolLimitReached(message)


async def _offered_elsewhere(tx: Tx, team_id: str, agent_id: str, except_id: str | None):
    """Every name the model is offered for the agent's other tools -> the tool offering it."""
    names: dict[str, str] = {}
    for tool in await tools_store.list_for_agent(tx, team_id, agent_id):
        if tool.id == except_id:
            continue
        if tool.execution_type == "mcp":
            for function in tool.mcp_server_tools or ():
                names[function["name"]] = tool.name
        else:
            names[tool.name] = tool.name
    return names


async def _check_offered_names(
    tx: Tx, team_id: str, agent_id: str, names: list[str], except_id: str | None = None
) -> None:
    """The names a tool offers the model must be the agent's only ones."""
    taken = await _offered_elsewhere(tx, team_id, agent_id, except_id)
    for name in names:
        if name in taken:
            raise DuplicateName(
                f"name: {name} is already offered to the model by this agent's tool {taken[name]!r}"
            )


def _mcp_key(tool: Any) -> tuple:
    """What a listing depends on: the server, the headers, the selection."""
    get = tool.get if isinstance(tool, dict) else lambda f: getattr(tool, f)
    return (get("mcp_url"), get("mcp_headers"), get("mcp_tools"))


def _needs_listing(current: Tool | None, tool: dict[str, Any]) -> bool:
    return current is None or current.execution_type != "mcp" or _mcp_key(current) != _mcp_key(tool)


def _renamed(functions: list[dict], prefix: str) -> list[dict]:
    """The stored functions under a new tool name (no listing needed)."""
    names = mcp_service.exposed_names(prefix, [f["serverName"] for f in functions])
    return [{**f, "name": names[f["serverName"]]} for f in functions]


async def _listed_functions(
    deps: ToolDeps, team_id: str, checked: dict[str, Any], *, strict: bool
) -> list[dict]:
    """The functions an mcp tool exposes, from its server's listing (network, worker
    thread: call it before a write transaction)."""
    assert deps.mcp is not None, "an MCP client is needed to list an mcp tool's server"
    listed = await mcp_service.list_server(
        deps.secrets, deps.mcp, team_id, checked["mcp_url"] or "", checked["mcp_headers"]
    )
    return await mcp_service.checked_functions(
        listed, checked["mcp_tools"], checked["name"], strict=strict
    )


async def create_tool(
    deps: ToolDeps,
    plan: TeamPlan,
    agent_id: str,
    given: dict[str, Any],
    actor: Actor | None = None,
) -> Tool:
    """Create a tool for the team's agent after checking it, its names' uniqueness and the
    plan's limit; an mcp tool lists its server's tools first (outside the write
    transaction)."""
    team_id = plan.team_id
    db, box = deps.db, deps.box
    fields = canonical_fields(given)
    draft = {name: fields.get(name) for name in CLIENT_FIELDS}
    draft["is_enabled"] = True if draft["is_enabled"] is None else draft["is_enabled"]
    _apply_defaults(draft)
    if draft["input_schema"] is None:
        raise ValidationFailed("inputSchema: is required")
    await _require_agent(db.reader, team_id, agent_id)
    checked = await _checked(draft, given, allow_private=deps.allow_private)
    functions: list[dict] | None = None
    if checked["execution_type"] == "mcp":
        functions = await _listed_functions(deps, team_id, checked, strict=True)
    adding = 1 if functions is None else max(1, len(functions))
    tool_id = new_id("tool")
    sealed = None
    if checked["execution_type"] == "form":
        sealed = box.seal(new_webhook_secret(), _secret_context(tool_id))
    async with db.write() as tx:
        await _require_agent(tx, team_id, agent_id)
        if await tools_store.name_taken(tx, agent_id, checked["name"]):
            raise DuplicateName(f"name: this agent already has a tool named {checked['name']!r}")
        offered = [checked["name"]] if functions is None else [f["name"] for f in functions]
        await _check_offered_names(tx, team_id, agent_id, offered)
        current = await tools_store.count_for_agent(tx, agent_id)
        _check_limit(plan, current, adding, functions is not None)
        now = now_iso()
        tool = Tool(
            id=tool_id,
            agent_id=agent_id,
            team_id=team_id,
            form_webhook_secret=sealed,
            created_at=now,
            updated_at=now,
            mcp_server_tools=functions,
            mcp_listed_at=now if functions is not None else None,
            counts_as=adding,
            **checked,
        )
        await tools_store.insert(tx, tool)
        if actor is not None:
            await versions.tools_changed_in(tx, actor, agent_id)
        await audit.record_in(
            tx,
            actor,
            "tool.created",
            target_type="tool",
            target_id=tool.id,
            label=tool.name,
            details={"agentId": agent_id, "executionType": tool.execution_type},
        )
    return tool


def _merged(current: Tool, fields: dict[str, Any]) -> dict[str, Any]:
    """The tool as a partial update would leave it (defaults applied, not yet checked)."""
    merged = {name: getattr(current, name) for name in CLIENT_FIELDS}
    new_kind = fields.get("execution_type", current.execution_type)
    if new_kind != current.execution_type:
        # Switching type drops the settings of the old type that were not resent.
        for field in tool_rules.TYPE_FIELDS.get(current.execution_type, ()):
            merged[field] = None
        if "mcp" in (new_kind, current.execution_type) and "input_schema" not in fields:
            merged["input_schema"] = None  # an mcp tool's is empty; another's starts so
    merged.update(fields)
    if "form_execution_mode" not in fields and _stores_only(current):
        # A form that only stores its submissions takes the mode its new settings
        # call for: a webhook address added later is then used, not silently ignored.
        merged["form_execution_mode"] = None
    _apply_defaults(merged)
    if merged["input_schema"] is None:
        merged["input_schema"] = dict(tool_rules.EMPTY_INPUT_SCHEMA)
    return merged


# Times an update is checked again when the tool changed while it was being checked.
SAVE_ATTEMPTS = 3


@dataclass(frozen=True, slots=True)
class _Update:
    """An update prepared outside the write transaction, from the tool as it was read."""

    changes: dict[str, Any]
    team_id: str
    agent_id: str
    name: str
    offered: list[str]
    counts_as: int
    grows: bool  # counts more tools against the plan than before
    mcp: bool


async def _prepare_update(
    deps: ToolDeps, before: Tool, fields: dict[str, Any], given: dict[str, Any]
) -> _Update:
    """Check the merged tool and list its MCP server if needed (worker thread, network):
    everything an update needs but SQL, so its write transaction holds only SQL."""
    checked = await _checked(_merged(before, fields), given, allow_private=deps.allow_private)
    service = dict(tool_rules.SERVICE_FIELDS["mcp"])
    offered = [checked["name"]]
    if checked["execution_type"] == "mcp":
        if _needs_listing(before, checked):
            functions = await _listed_functions(deps, before.team_id, checked, strict=True)
            listed_at = now_iso()
        else:
            functions = _renamed(before.mcp_server_tools or [], checked["name"])
            listed_at = before.mcp_listed_at
        service = {
            "mcp_server_tools": functions,
            "mcp_listed_at": listed_at,
            "counts_as": max(1, len(functions)),
        }
        offered = [f["name"] for f in functions]
    sealed = before.form_webhook_secret
    if checked["execution_type"] != "form":
        sealed = None
    elif sealed is None:
        sealed = deps.box.seal(new_webhook_secret(), _secret_context(before.id))
    changes = {k: v for k, v in {**checked, **service}.items() if v != getattr(before, k)}
    if sealed != before.form_webhook_secret:
        changes["form_webhook_secret"] = sealed
    return _Update(
        changes=changes,
        team_id=before.team_id,
        agent_id=before.agent_id,
        name=checked["name"],
        offered=offered,
        counts_as=service["counts_as"],
        grows=service["counts_as"] > before.counts_as,
        mcp=checked["execution_type"] == "mcp",
    )


async def update_tool(
    deps: ToolDeps, plan: TeamPlan, tool_id: str, given: dict[str, Any], actor: Actor
) -> Tool:
    """Apply a partial update; the result is checked as a whole before it is saved. An mcp
    tool whose server, headers or selection change lists its server's tools again.

    Checked (and listed) before the write transaction, from the tool as read; the
    transaction only verifies the tool is still that one (else the update is prepared
    again from the new one) and writes."""
    db, team_id = deps.db, plan.team_id
    fields = canonical_fields(given)
    for _ in range(SAVE_ATTEMPTS):
        before = await tools_store.get(db.reader, team_id, tool_id)
        if before is None:
            raise NotFound("Tool not found")
        update = await _prepare_update(deps, before, fields, given)
        async with db.write() as tx:
            current = await tools_store.get(tx, team_id, tool_id)
            if current is None:
                raise NotFound("Tool not found")
            if current != before:
                continue  # changed while it was checked: prepare it again from the new one
            await _save_update(tx, tool_id, update, plan)
            now = now_iso()
            try:
                await tools_store.update(tx, team_id, tool_id, update.changes, now)
            except ConstraintViolation as exc:
                raise DuplicateName("name: this agent already has a tool with that name") from exc
            await versions.tools_changed_in(tx, actor, current.agent_id)
        return replace(current, **update.changes, updated_at=now)
    raise Conflict("The tool kept changing while it was being saved; try again")


async def _save_update(tx: Tx, tool_id: str, update: _Update, plan: TeamPlan) -> None:
    """The checks of an update that need the database as it is now (names, the limit)."""
    if await tools_store.name_taken(tx, update.agent_id, update.name, tool_id):
        raise DuplicateName(f"name: this agent already has a tool named {update.name!r}")
    await _check_offered_names(tx, update.team_id, update.agent_id, update.offered, tool_id)
    if plan.limit is not None and update.grows:
        others = await tools_store.count_for_agent(tx, update.agent_id, tool_id)
        _check_limit(plan, others, update.counts_as, update.mcp)


async def refresh_tool(deps: ToolDeps, plan: TeamPlan, tool_id: str, actor: Actor) -> Tool:
    """List an mcp tool's server again and store what it now exposes; TOOL_LIMIT_REACHED
    (nothing changes) when that would pass the plan's limit. The listing is fetched and
    checked before the write transaction."""
    db, team_id = deps.db, plan.team_id
    before = await tools_store.get(db.reader, team_id, tool_id)
    if before is None:
        raise NotFound("Tool not found")
    if before.execution_type != "mcp":
        raise ValidationFailed(
            f"executionType: only mcp tools can be refreshed (this one is {before.execution_type})"
        )
    stored = {f: getattr(before, f) for f in ("mcp_url", "mcp_headers", "mcp_tools", "name")}
    functions = await _listed_functions(deps, team_id, stored, strict=False)
    counts_as = max(1, len(functions))
    async with db.write() as tx:
        current = await tools_store.get(tx, team_id, tool_id)
        if current is None:
            raise NotFound("Tool not found")
        if (
            current.execution_type != "mcp"
            or _mcp_key(current) != _mcp_key(before)
            or current.name != before.name
        ):
            raise Conflict("The tool changed while it was being refreshed; try again")
        await _check_offered_names(
            tx, team_id, current.agent_id, [f["name"] for f in functions], tool_id
        )
        if plan.limit is not None and counts_as > current.counts_as:
            others = await tools_store.count_for_agent(tx, current.agent_id, tool_id)
            _check_limit(plan, others, counts_as, True)
        now = now_iso()
        changes = {"mcp_server_tools": functions, "mcp_listed_at": now, "counts_as": counts_as}
        await tools_store.update(tx, team_id, tool_id, changes, now)
        await versions.tools_changed_in(tx, actor, current.agent_id)
    return replace(current, **changes, updated_at=now)


async def preview_server(
    deps: ToolDeps,
    team_id: str,
    url: str,
    headers: dict[str, str] | None,
    prefix: str | None,
) -> list[dict[str, Any]]:
    """A server's tools as the tool editor's checklist shows them (nothing is stored)."""
    assert deps.mcp is not None, "an MCP client is needed to list a server"
    tool_rules.check_target_url("mcpUrl", url, allow_private=deps.allow_private)
    if headers is not None:
        tool_rules.check_headers_field("mcpHeaders", headers)
    if prefix is not None:
        tool_rules.check_name(prefix)
    listed = await mcp_service.list_server(deps.secrets, deps.mcp, team_id, url, headers)
    return await cpu.exchange(mcp_service.preview, listed, prefix)


async def delete_tool(db: Database, team_id: str, tool_id: str, actor: Actor | None = None) -> None:
    """Delete the team's tool or raise NotFound."""
    async with db.write() as tx:
        tool = await tools_store.get(tx, team_id, tool_id)
        if tool is None or not await tools_store.delete(tx, team_id, tool_id):
            raise NotFound("Tool not found")
        if actor is not None:
            await versions.tools_changed_in(tx, actor, tool.agent_id)
        await audit.record_in(
            tx,
            actor,
            "tool.deleted",
            target_type="tool",
            target_id=tool_id,
            label=tool.name,
            details={"agentId": tool.agent_id},
        )
