"""Trigger events: one batch of widget events counted into the stats, synchronously.

`write_batch` runs on the writer's thread inside one transaction (see `Database.run_sync`),
so a whole batch costs one thread hop, one UPDATE per trigger and one commit.
"""

from __future__ import annotations

import sqlite3
from collections import defaultdict
from typing import NamedTuple

_CHUNK = 500  # stays far below SQLite's limit on bound variables


class TriggerEvent(NamedTuple):
    """What counting needs of a widget event (a tuple: cheap to build per request)."""

    agent_id: str
    trigger_id: str | None  # None: resolved from trigger_name
    trigger_name: str
    event_type: str  # "fired" or "converted"


def _owners(raw: sqlite3.Connection, trigger_ids: list[str]) -> dict[str, str]:
    owners: dict[str, str] = {}
    for start in range(0, len(trigger_ids), _CHUNK):
        chunk = trigger_ids[start : start + _CHUNK]
        marks = ",".join("?" * len(chunk))
        rows = raw.execute(f"SELECT id, agent_id FROM triggers WHERE id IN ({marks})", chunk)
        owners.update((r[0], r[1]) for r in rows)
    return owners


def _by_name(raw: sqlite3.Connection, agent_id: str, name: str) -> str | None:
    row = raw.execute(
        "SELECT id FROM triggers WHERE agent_id = ? AND name = ?"
        " ORDER BY created_at ASC, rowid ASC LIMIT 1",
        (agent_id, name),
    ).fetchone()
    return row[0] if row else None


def write_batch(raw: sqlite3.Connection, events: list[TriggerEvent]) -> list[str | None]:
    """Count the events whose trigger belongs to their agent.

    Returns, per event, the id of the trigger it was counted for, or None when it names no
    trigger of its agent (it is not counted).
    """
    owners = _owners(raw, sorted({e.trigger_id for e in events if e.trigger_id}))
    named: dict[tuple[str, str], str | None] = {}
    resolved: list[str | None] = []
    for event in events:
        if event.trigger_id is not None:
            ok = owners.get(event.trigger_id) == event.agent_id
            resolved.append(event.trigger_id if ok else None)
        else:
            key = (event.agent_id, event.trigger_name)
            if key not in named:
                named[key] = _by_name(raw, *key)
            resolved.append(named[key])

    counts: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for event, trigger_id in zip(events, resolved, strict=True):
        if trigger_id is not None:
            counts[trigger_id][0 if event.event_type == "fired" else 1] += 1
    if counts:
        raw.executemany(
            "UPDATE triggers SET fired_count = fired_count + ?,"
            " converted_count = converted_count + ? WHERE id = ?",
            [(fired, converted, tid) for tid, (fired, converted) in counts.items()],
        )
    return resolved
