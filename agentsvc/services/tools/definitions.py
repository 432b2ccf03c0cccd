"""Tools: create, update, delete, list, and the plan's tool limit per agent."""

from __future__ import annotations

import asyncio
import base64
import secrets
from dataclasses import dataclass, replace
from typing import Any

from agentsvc.db import ConstraintViolation, Database
from agentsvc.errors import DuplicateName, NotFound, ToolLimitReached, ValidationFailed
from agentsvc.ids import new_id, now_iso
from agentsvc.secretbox import SecretBox
from agentsvc.services import audit
from agentsvc.services.audit import Actor
from agentsvc.services.tools import rules as tool_rules
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
    *(f for fields in tool_rules.TYPE_FIELDS.values() for f in fields),
)


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


async def tool_limits(
    db: Database, team_id: str, agent_id: str, plan_id: str, limit: int | None
) -> ToolLimits:
    """How many tools the agent has against the plan's per-agent limit."""
    await _require_agent(db.reader, team_id, agent_id)
    return _limits(await tools_store.count_for_agent(db.reader, agent_id), limit, plan_id)


async def _checked(
    tool: dict[str, Any], given: dict[str, Any], *, allow_private: bool
) -> dict[str, Any]:
    """_check in a worker thread: a 64 KB inputSchema takes ~0.1 s against the metaschema."""
    return await asyncio.to_thread(_check, tool, given, allow_private=allow_private)


async def create_tool(
    db: Database,
    box: SecretBox,
    *,
    team_id: str,
    agent_id: str,
    plan_id: str,
    limit: int | None,
    given: dict[str, Any],
    allow_private: bool = False,
    actor: Actor | None = None,
) -> Tool:
    """Create a tool after checking it, its name's uniqueness and the plan's limit."""
    fields = canonical_fields(given)
    async with db.write() as tx:
        await _require_agent(tx, team_id, agent_id)
        draft = {name: fields.get(name) for name in CLIENT_FIELDS}
        draft["is_enabled"] = True if draft["is_enabled"] is None else draft["is_enabled"]
        _apply_defaults(draft)
        if draft["input_schema"] is None:
            raise ValidationFailed("inputSchema: is required")
        checked = await _checked(draft, given, allow_private=allow_private)
        if await tools_store.name_taken(tx, agent_id, checked["name"]):
            raise DuplicateName(f"name: this agent already has a tool named {checked['name']!r}")
        limits = _limits(await tools_store.count_for_agent(tx, agent_id), limit, plan_id)
        if not limits.can_create:
            raise ToolLimitReached(
                f"Tool limit reached: the {plan_id} plan allows {limit} tools per agent"
            )
        now = now_iso()
        tool_id = new_id("tool")
        sealed = None
        if checked["execution_type"] == "form":
            sealed = box.seal(new_webhook_secret(), _secret_context(tool_id))
        tool = Tool(
            id=tool_id,
            agent_id=agent_id,
            team_id=team_id,
            form_webhook_secret=sealed,
            created_at=now,
            updated_at=now,
            **checked,
        )
        await tools_store.insert(tx, tool)
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


async def update_tool(
    db: Database,
    box: SecretBox,
    team_id: str,
    tool_id: str,
    given: dict[str, Any],
    *,
    allow_private: bool = False,
) -> Tool:
    """Apply a partial update; the result is checked as a whole before it is saved."""
    fields = canonical_fields(given)
    async with db.write() as tx:
        current = await tools_store.get(tx, team_id, tool_id)
        if current is None:
            raise NotFound("Tool not found")
        merged = {name: getattr(current, name) for name in CLIENT_FIELDS}
        new_kind = fields.get("execution_type", current.execution_type)
        if new_kind != current.execution_type:
            # Switching type drops the settings of the old type that were not resent.
            for field in tool_rules.TYPE_FIELDS.get(current.execution_type, ()):
                merged[field] = None
        merged.update(fields)
        if "form_execution_mode" not in fields and _stores_only(current):
            # A form that only stores its submissions takes the mode its new settings
            # call for: a webhook address added later is then used, not silently ignored.
            merged["form_execution_mode"] = None
        _apply_defaults(merged)
        checked = await _checked(merged, given, allow_private=allow_private)
        if await tools_store.name_taken(tx, current.agent_id, checked["name"], tool_id):
            raise DuplicateName(f"name: this agent already has a tool named {checked['name']!r}")
        sealed = current.form_webhook_secret
        if checked["execution_type"] != "form":
            sealed = None
        elif sealed is None:
            sealed = box.seal(new_webhook_secret(), _secret_context(tool_id))
        changes = {k: v for k, v in checked.items() if v != getattr(current, k)}
        if sealed != current.form_webhook_secret:
            changes["form_webhook_secret"] = sealed
        now = now_iso()
        try:
            await tools_store.update(tx, team_id, tool_id, changes, now)
        except ConstraintViolation as exc:
            raise DuplicateName("name: this agent already has a tool with that name") from exc
    return replace(current, **changes, updated_at=now)


async def delete_tool(db: Database, team_id: str, tool_id: str, actor: Actor | None = None) -> None:
    """Delete the team's tool or raise NotFound."""
    async with db.write() as tx:
        tool = await tools_store.get(tx, team_id, tool_id)
        if tool is None or not await tools_store.delete(tx, team_id, tool_id):
            raise NotFound("Tool not found")
        await audit.record_in(
            tx,
            actor,
            "tool.deleted",
            target_type="tool",
            target_id=tool_id,
            label=tool.name,
            details={"agentId": tool.agent_id},
        )
