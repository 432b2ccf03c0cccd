"""store/tools.py, store/triggers.py, store/trigger_events.py and store/secrets.py."""

from __future__ import annotations

import pytest

from agentsvc.db import ConstraintViolation
from agentsvc.store import secrets, tools, trigger_events, triggers
from agentsvc.store.trigger_events import Mismatch, TriggerEvent
from agentsvc.store.triggers import Trigger
from tests.support.store_builders import LATER, NOW, owner, tool


def trigger(who, n: int, priority: int = 0) -> Trigger:
    return Trigger(
        id=f"trigger_{n}",
        agent_id=who.agent_id,
        team_id=who.team_id,
        name=f"T{n}",
        description=None,
        trigger_type="time_on_page",
        conditions={"seconds": 5},
        action_type="open_chat",
        action_config={},
        trigger_once=True,
        is_enabled=True,
        priority=priority,
        created_at=NOW,
        updated_at=NOW,
    )


async def test_tools_round_trip_and_count_per_agent(db):
    who = await owner(db)
    async with db.write() as tx:
        await tools.insert(tx, tool(who, "lookup", 1))
        await tools.insert(tx, tool(who, "contact", 2, "form"))
    stored = await tools.get(db.reader, who.team_id, "tool_1")
    assert stored.mock_response == '{"ok": true}' and stored.input_schema == {"type": "object"}
    assert await tools.count_for_agent(db.reader, who.agent_id) == 2
    assert (await tools.get_by_name(db.reader, who.agent_id, "contact")).id == "tool_2"
    assert await tools.name_taken(db.reader, who.agent_id, "lookup")
    assert not await tools.name_taken(db.reader, who.agent_id, "lookup", except_id="tool_1")
    assert [t.id for t in await tools.enabled_forms_named(db.reader, who.team_id, "contact")] == [
        "tool_2"
    ]


async def test_a_tool_name_is_unique_per_agent(db):
    who = await owner(db)
    async with db.write() as tx:
        await tools.insert(tx, tool(who, "lookup", 1))
    with pytest.raises(ConstraintViolation):
        async with db.write() as tx:
            await tools.insert(tx, tool(who, "lookup", 2))
    assert await tools.count_for_agent(db.reader, who.agent_id) == 1


async def test_a_tool_of_another_team_is_not_found_updated_or_deleted(db):
    who = await owner(db)
    other = await owner(db, "other@example.com")
    async with db.write() as tx:
        await tools.insert(tx, tool(who, "lookup", 1))
        assert not await tools.update(tx, other.team_id, "tool_1", {"name": "x"}, LATER)
        assert not await tools.delete(tx, other.team_id, "tool_1")
        assert await tools.update(tx, who.team_id, "tool_1", {"is_enabled": False}, LATER)
    assert await tools.get(db.reader, other.team_id, "tool_1") is None
    assert await tools.list_enabled_for_agent(db.reader, who.agent_id) == []
    async with db.write() as tx:
        assert await tools.delete(tx, who.team_id, "tool_1")


async def test_triggers_order_by_priority_toggle_and_count_events(db):
    who = await owner(db)
    async with db.write() as tx:
        await triggers.insert(tx, trigger(who, 1, priority=5))
        await triggers.insert(tx, trigger(who, 2, priority=1))
    assert [t.id for t in await triggers.list_for_agent(db.reader, who.agent_id)] == [
        "trigger_2",
        "trigger_1",
    ]
    async with db.write() as tx:
        assert await triggers.toggle(tx, who.team_id, "trigger_2", LATER)
    assert [t.id for t in await triggers.list_for_widget(db.reader, who.agent_id)] == ["trigger_1"]
    events = [
        TriggerEvent(who.agent_id, "trigger_1", "T1", "fired"),
        TriggerEvent(who.agent_id, "trigger_1", "T1", "converted"),
        TriggerEvent(who.agent_id, None, "T2", "fired"),  # by name
        TriggerEvent(who.agent_id, "trigger_1", "Renamed", "fired"),  # does not describe it
        TriggerEvent(who.agent_id, None, "Nobody", "fired"),
    ]
    results = await db.write_batched(
        lambda tx: trigger_events.write_batch(tx, events, "2026-11-21")
    )
    assert results == ["trigger_1", "trigger_1", "trigger_2", Mismatch("triggerName"), None]
    stats = await triggers.stats_for_agent(db.reader, who.agent_id)
    assert stats == [("trigger_2", 1, 0), ("trigger_1", 1, 1)]


async def test_events_for_another_agents_trigger_are_not_counted(db):
    who = await owner(db)
    other = await owner(db, "other@example.com")
    async with db.write() as tx:
        await triggers.insert(tx, trigger(who, 1))
    event = TriggerEvent(other.agent_id, "trigger_1", "T1", "fired")
    assert await db.write_batched(
        lambda tx: trigger_events.write_batch(tx, [event], "2026-11-21")
    ) == [None]
    assert await triggers.stats_for_agent(db.reader, who.agent_id) == [("trigger_1", 0, 0)]
    assert await triggers.get(db.reader, other.team_id, "trigger_1") is None


async def test_secrets_upsert_list_names_and_stay_in_their_team(db):
    who = await owner(db)
    other = await owner(db, "other@example.com")
    async with db.write() as tx:
        await secrets.upsert(tx, who.team_id, "API_TOKEN", "sealed-1", NOW)
        await secrets.upsert(tx, who.team_id, "API_TOKEN", "sealed-2", LATER)
        await secrets.upsert(tx, who.team_id, "OTHER", "sealed-3", NOW)
    assert [s.name for s in await secrets.list_for_team(db.reader, who.team_id)] == [
        "API_TOKEN",
        "OTHER",
    ]
    assert await secrets.sealed_values(db.reader, who.team_id, {"API_TOKEN"}) == {
        "API_TOKEN": "sealed-2"
    }
    assert await secrets.sealed_values(db.reader, other.team_id, {"API_TOKEN"}) == {}
    async with db.write() as tx:
        assert not await secrets.delete(tx, other.team_id, "API_TOKEN")
        assert await secrets.delete(tx, who.team_id, "API_TOKEN")
    assert [s.name for s in await secrets.list_for_team(db.reader, who.team_id)] == ["OTHER"]
