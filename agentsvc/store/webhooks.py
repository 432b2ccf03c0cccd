"""Event webhooks: a team's subscriptions (URL, event types, sealed signing secret)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from agentsvc.db import Tx
from agentsvc.store.rows import dump_json, load_json


@dataclass(frozen=True, slots=True)
class Webhook:
    id: str
    team_id: str
    url: str
    events: list[str]
    description: str
    sealed_secret: str
    created_by: str | None
    created_at: str
    updated_at: str


_FIELDS = tuple(Webhook.__dataclass_fields__)
_COLUMNS = ", ".join(_FIELDS)


def _webhook(row: Any) -> Webhook:
    values = dict(zip(_FIELDS, row, strict=True))
    values["events"] = load_json(values["events"])
    return Webhook(**values)


async def insert(tx: Tx, webhook: Webhook) -> None:
    """Insert a webhook (ConstraintViolation when the team has one for that URL)."""
    values = [
        dump_json(getattr(webhook, f)) if f == "events" else getattr(webhook, f) for f in _FIELDS
    ]
    marks = ", ".join("?" for _ in _FIELDS)
    await tx.execute(f"INSERT INTO webhooks ({_COLUMNS}) VALUES ({marks})", values)


async def get(tx: Tx, team_id: str, webhook_id: str) -> Webhook | None:
    """The team's webhook, or None (also when it belongs to another team)."""
    rows = await tx.fetchall(
        f"SELECT {_COLUMNS} FROM webhooks WHERE id = ? AND team_id = ?", (webhook_id, team_id)
    )
    return _webhook(rows[0]) if rows else None


async def list_for_team(tx: Tx, team_id: str) -> list[Webhook]:
    """The team's webhooks, newest first."""
    rows = await tx.fetchall(
        f"SELECT {_COLUMNS} FROM webhooks WHERE team_id = ? ORDER BY created_at DESC, id DESC",
        (team_id,),
    )
    return [_webhook(r) for r in rows]


async def count_for_team(tx: Tx, team_id: str) -> int:
    return int(await tx.fetchval("SELECT COUNT(*) FROM webhooks WHERE team_id = ?", (team_id,)))


async def url_taken(tx: Tx, team_id: str, url: str) -> bool:
    row = await tx.fetchone("SELECT 1 FROM webhooks WHERE team_id = ? AND url = ?", (team_id, url))
    return row is not None


async def delete(tx: Tx, team_id: str, webhook_id: str) -> bool:
    """Delete a webhook; its pending deliveries and their log go with it."""
    changed = await tx.execute(
        "DELETE FROM webhooks WHERE id = ? AND team_id = ?", (webhook_id, team_id)
    )
    return changed > 0


async def subscriptions(tx: Tx, team_id: str) -> dict[str, tuple[str, ...]]:
    """Event type -> the ids of the team's webhooks that receive it."""
    rows = await tx.fetchall("SELECT id, events FROM webhooks WHERE team_id = ?", (team_id,))
    found: dict[str, list[str]] = {}
    for webhook_id, events in rows:
        for event_type in load_json(events) or ():
            found.setdefault(event_type, []).append(webhook_id)
    return {event_type: tuple(ids) for event_type, ids in found.items()}
