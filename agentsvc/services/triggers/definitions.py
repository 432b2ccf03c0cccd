"""Triggers: validation per trigger type and action, CRUD, toggling, stats and the widget feed."""

from __future__ import annotations

from typing import Any

from agentsvc.db import Database
from agentsvc.errors import NotFound, ValidationFailed
from agentsvc.ids import new_id, now_iso
from agentsvc.services.triggers import rules as trigger_rules
from agentsvc.store import agents as agents_store
from agentsvc.store import triggers as triggers_store
from agentsvc.store.triggers import Trigger

TRIGGER_TYPES = ("time_on_page", "scroll_depth", "exit_intent", "page_view", "custom_event")
ACTION_TYPES = ("open_chat", "show_form", "show_bubble")
MAX_MESSAGE_LENGTH = 2000
MAX_EVENT_NAME_LENGTH = 200
MAX_BUBBLE_SECONDS = 3600


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _only_keys(where: str, value: dict[str, Any], allowed: tuple[str, ...], what: str) -> None:
    for key in value:
        if key not in allowed:
            known = ", ".join(allowed) if allowed else "none (use {})"
            raise ValidationFailed(f"{where}.{key}: not a field of {what}; allowed: {known}")


def _required(where: str, value: dict[str, Any], key: str, what: str) -> Any:
    if key not in value:
        raise ValidationFailed(f"{where}.{key}: is required for {what}")
    return value[key]


def validate_conditions(trigger_type: str, conditions: dict[str, Any]) -> None:
    """Raise VALIDATION_ERROR unless the conditions suit the trigger type."""
    where = "conditions"
    if trigger_type == "time_on_page":
        _only_keys(where, conditions, ("timeOnPage",), trigger_type)
        seconds = _required(where, conditions, "timeOnPage", trigger_type)
        if not _is_number(seconds) or seconds < 0:
            raise ValidationFailed("conditions.timeOnPage: must be a number of seconds >= 0")
    elif trigger_type == "scroll_depth":
        _only_keys(where, conditions, ("scrollDepth",), trigger_type)
        depth = _required(where, conditions, "scrollDepth", trigger_type)
        if not _is_number(depth) or not 0 <= depth <= 100:
            raise ValidationFailed("conditions.scrollDepth: must be a number from 0 to 100")
    elif trigger_type == "exit_intent":
        _only_keys(where, conditions, (), trigger_type)
    elif trigger_type == "page_view":
        _only_keys(where, conditions, ("page",), trigger_type)
        problem = trigger_rules.glob_error(_required(where, conditions, "page", trigger_type))
        if problem:
            raise ValidationFailed(f"conditions.page: {problem}")
    elif trigger_type == "custom_event":
        _only_keys(where, conditions, ("event", "eventData"), trigger_type)
        event = _required(where, conditions, "event", trigger_type)
        if not isinstance(event, str) or not event.strip():
            raise ValidationFailed("conditions.event: must be a non-empty string")
        if len(event) > MAX_EVENT_NAME_LENGTH:
            raise ValidationFailed(
                f"conditions.event: must be at most {MAX_EVENT_NAME_LENGTH} characters"
            )
        if "eventData" in conditions:
            problem = trigger_rules.event_data_error(conditions["eventData"])
            if problem:
                raise ValidationFailed(f"conditions.eventData: {problem}")


def _message(config: dict[str, Any], required: bool, key: str = "message") -> None:
    if key not in config:
        if required:
            raise ValidationFailed(f"actionConfig.{key}: is required for show_bubble")
        return
    message = config[key]
    if not isinstance(message, str) or (required and not message.strip()):
        raise ValidationFailed(f"actionConfig.{key}: must be a non-empty string")
    if len(message) > MAX_MESSAGE_LENGTH:
        raise ValidationFailed(
            f"actionConfig.{key}: must be at most {MAX_MESSAGE_LENGTH} characters"
        )


async def validate_action(
    db: Database, agent_id: str, action_type: str, config: dict[str, Any]
) -> None:
    """Raise VALIDATION_ERROR unless the action config suits the action type."""
    where = "actionConfig"
    if action_type == "open_chat":
        # greeting: shown as the agent's message; message: put in the visitor's text box.
        _only_keys(where, config, ("greeting", "message"), action_type)
        _message(config, required=False)
        _message(config, required=False, key="greeting")
    elif action_type == "show_bubble":
        _only_keys(where, config, ("message", "duration"), action_type)
        _message(config, required=True)
        if "duration" in config:
            duration = config["duration"]
            if not _is_number(duration) or not 0 < duration <= MAX_BUBBLE_SECONDS:
                raise ValidationFailed(
                    f"actionConfig.duration: must be a number of seconds, "
                    f"above 0 and at most {MAX_BUBBLE_SECONDS}"
                )
    elif action_type == "show_form":
        _only_keys(where, config, ("toolId",), action_type)
        tool_id = _required(where, config, "toolId", action_type)
        if not isinstance(tool_id, str) or not tool_id:
            raise ValidationFailed("actionConfig.toolId: must be a tool id")
        if not await triggers_store.is_enabled_form_tool(db.reader, agent_id, tool_id):
            raise ValidationFailed(
                "actionConfig.toolId: must be an enabled form tool of this agent"
            )


async def _agent_of_team(db: Database, team_id: str, agent_id: str) -> None:
    if await agents_store.get(db.reader, team_id, agent_id) is None:
        raise NotFound("Agent not found")


async def create_trigger(db: Database, team_id: str, agent_id: str, fields: dict) -> Trigger:
    """Validate and create a trigger of the team's agent."""
    await _agent_of_team(db, team_id, agent_id)
    validate_conditions(fields["trigger_type"], fields["conditions"])
    await validate_action(db, agent_id, fields["action_type"], fields["action_config"])
    now = now_iso()
    trigger = Trigger(
        id=new_id("trigger"),
        agent_id=agent_id,
        team_id=team_id,
        name=fields["name"],
        description=fields.get("description"),
        trigger_type=fields["trigger_type"],
        conditions=fields["conditions"],
        action_type=fields["action_type"],
        action_config=fields["action_config"],
        trigger_once=fields.get("trigger_once", True),
        is_enabled=fields.get("is_enabled", True),
        priority=fields.get("priority", 0),
        created_at=now,
        updated_at=now,
    )
    async with db.write() as tx:
        # The agent may have been deleted since the check; the foreign key would refuse.
        if await agents_store.get(tx, team_id, agent_id) is None:
            raise NotFound("Agent not found")
        await triggers_store.insert(tx, trigger)
    return trigger


async def list_triggers(db: Database, team_id: str, agent_id: str) -> list[Trigger]:
    """Return the agent's triggers in execution order (lower priority first)."""
    await _agent_of_team(db, team_id, agent_id)
    return await triggers_store.list_for_agent(db.reader, agent_id)


async def get_trigger(db: Database, team_id: str, trigger_id: str) -> Trigger:
    """Return the team's trigger or raise NotFound."""
    trigger = await triggers_store.get(db.reader, team_id, trigger_id)
    if trigger is None:
        raise NotFound("Trigger not found")
    return trigger


async def update_trigger(db: Database, team_id: str, trigger_id: str, fields: dict) -> Trigger:
    """Apply a partial update; the merged trigger is validated as a whole."""
    current = await get_trigger(db, team_id, trigger_id)
    trigger_type = fields.get("trigger_type", current.trigger_type)
    conditions = fields.get("conditions", current.conditions)
    if "trigger_type" in fields or "conditions" in fields:
        validate_conditions(trigger_type, conditions)
    # The form tool is checked when the action changes, not on every rename: a tool
    # disabled later must not make the rest of the trigger uneditable.
    if "action_type" in fields or "action_config" in fields:
        await validate_action(
            db,
            current.agent_id,
            fields.get("action_type", current.action_type),
            fields.get("action_config", current.action_config),
        )
    async with db.write() as tx:
        if not await triggers_store.update(tx, team_id, trigger_id, fields, now_iso()):
            raise NotFound("Trigger not found")
        trigger = await triggers_store.get(tx, team_id, trigger_id)
    assert trigger is not None
    return trigger


async def toggle_trigger(db: Database, team_id: str, trigger_id: str) -> Trigger:
    """Invert the trigger's `isEnabled` and return it."""
    async with db.write() as tx:
        if not await triggers_store.toggle(tx, team_id, trigger_id, now_iso()):
            raise NotFound("Trigger not found")
        trigger = await triggers_store.get(tx, team_id, trigger_id)
    assert trigger is not None
    return trigger


async def delete_trigger(db: Database, team_id: str, trigger_id: str) -> None:
    """Delete a trigger with its counters and recorded events."""
    async with db.write() as tx:
        if not await triggers_store.delete(tx, team_id, trigger_id):
            raise NotFound("Trigger not found")


async def trigger_stats(db: Database, team_id: str, agent_id: str) -> dict[str, dict[str, int]]:
    """Return `{triggerId: {firedCount, convertedCount}}` for every trigger of the agent."""
    await _agent_of_team(db, team_id, agent_id)
    rows = await triggers_store.stats_for_agent(db.reader, agent_id)
    return {tid: {"firedCount": fired, "convertedCount": conv} for tid, fired, conv in rows}


async def widget_triggers(db: Database, agent_id: str) -> list[Trigger]:
    """Return the enabled triggers the public widget runs; NotFound for an unknown agent."""
    if await agents_store.get_public(db.reader, agent_id) is None:
        raise NotFound("Agent not found")
    return await triggers_store.list_for_widget(db.reader, agent_id)
