"""Trigger events: one batch of widget events counted into the stats.

`write_batch` runs inside one batched write (`Database.write_batched`), so a whole batch
costs one UPDATE per trigger and one commit.
"""

from __future__ import annotations

from collections import defaultdict
from typing import NamedTuple

from agentsvc.db import Tx
from agentsvc.store.analytics import add_trigger_counts

_CHUNK = 500  # stays far below SQLite's limit on bound variables


class TriggerEvent(NamedTuple):
    """What counting needs of a widget event (a tuple: cheap to build per request)."""

    agent_id: str
    trigger_id: str | None  # None: resolved from trigger_name
    trigger_name: str
    event_type: str  # "fired" or "converted"
    trigger_type: str | None = None  # with trigger_id: must be the trigger's (None: unchecked)
    action_type: str | None = None


class Mismatch(NamedTuple):
    """An event whose triggerId names a trigger of its agent that it does not describe."""

    field: str  # "triggerName", "triggerType" or "actionType"


class _Known(NamedTuple):
    agent_id: str
    name: str
    trigger_type: str
    action_type: str


async def _known(tx: Tx, trigger_ids: list[str]) -> dict[str, _Known]:
    known: dict[str, _Known] = {}
    for start in range(0, len(trigger_ids), _CHUNK):
        chunk = trigger_ids[start : start + _CHUNK]
        marks = ",".join("?" * len(chunk))
        rows = await tx.fetchall(
            f"SELECT id, agent_id, name, trigger_type, action_type FROM triggers"
            f" WHERE id IN ({marks})",
            chunk,
        )
        known.update((r[0], _Known(*r[1:])) for r in rows)
    return known


def _check(event: TriggerEvent, trigger: _Known | None) -> str | Mismatch | None:
    if trigger is None or trigger.agent_id != event.agent_id:
        return None
    # Stats are read by trigger: an event that describes another trigger would be counted
    # under a name, type or action it does not have.
    if event.trigger_name != trigger.name:
        return Mismatch("triggerName")
    if event.trigger_type is not None and event.trigger_type != trigger.trigger_type:
        return Mismatch("triggerType")
    if event.action_type is not None and event.action_type != trigger.action_type:
        return Mismatch("actionType")
    assert event.trigger_id is not None
    return event.trigger_id


async def _by_name(tx: Tx, agent_id: str, name: str) -> str | None:
    row = await tx.fetchone(
        "SELECT id FROM triggers WHERE agent_id = ? AND name = ?"
        " ORDER BY created_at ASC, rowid ASC LIMIT 1",
        (agent_id, name),
    )
    return row[0] if row else None


async def write_batch(tx: Tx, events: list[TriggerEvent], day: str) -> list[str | Mismatch | None]:
    """Count the events whose trigger belongs to their agent and matches them (in the
    triggers' stats and in the figures of `day`, YYYY-MM-DD).

    Returns, per event, the id of the trigger it was counted for, None when it names no
    trigger of its agent, or a Mismatch when its triggerId names a trigger whose name, type
    or action differ from the event's (neither is counted).
    """
    known = await _known(tx, sorted({e.trigger_id for e in events if e.trigger_id}))
    named: dict[tuple[str, str], str | None] = {}
    resolved: list[str | Mismatch | None] = []
    for event in events:
        if event.trigger_id is not None:
            resolved.append(_check(event, known.get(event.trigger_id)))
        else:
            key = (event.agent_id, event.trigger_name)
            if key not in named:
                named[key] = await _by_name(tx, *key)
            resolved.append(named[key])

    counts: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    agents: dict[str, str] = {}
    for event, trigger_id in zip(events, resolved, strict=True):
        if isinstance(trigger_id, str):
            counts[trigger_id][0 if event.event_type == "fired" else 1] += 1
            agents[trigger_id] = event.agent_id
    if counts:
        await tx.executemany(
            "UPDATE triggers SET fired_count = fired_count + ?,"
            " converted_count = converted_count + ? WHERE id = ?",
            [(fired, converted, tid) for tid, (fired, converted) in counts.items()],
        )
        # The day's figures too (analytics): one more statement per batch, not per event.
        await add_trigger_counts(
            tx,
            (
                (agents[tid], day, tid, fired, converted, 0, 0)
                for tid, (fired, converted) in counts.items()
            ),
        )
    return resolved
