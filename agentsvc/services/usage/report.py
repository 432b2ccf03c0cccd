"""`GET /usage`: a team's tokens and costs over a range of UTC days, by day, agent or model.

Read from the counters (`usage_daily`), at most one row per day, agent and model of the
range: the same cost whatever the number of conversations.
"""

from __future__ import annotations

from datetime import date, timedelta
from typing import Any

from agentsvc.db import Database
from agentsvc.services.usage.prices import from_nanos
from agentsvc.store import usage as store
from agentsvc.store.usage import UsageRow

GROUPS = ("day", "agent", "model")


def _figures(row: UsageRow | None) -> dict[str, Any]:
    if row is None:
        return {"answers": 0, "inputTokens": 0, "outputTokens": 0, "cost": 0.0}
    return {
        "answers": row.answers,
        "inputTokens": row.input_tokens,
        "outputTokens": row.output_tokens,
        "cost": from_nanos(row.cost_nanos),
    }


def _rows(group: str, rows: list[UsageRow], first: date, last: date) -> list[dict[str, Any]]:
    if group == "day":  # every day of the range, those without answers at 0
        by_day = {r.key: r for r in rows}
        days = ((first + timedelta(days=n)).isoformat() for n in range((last - first).days + 1))
        return [{"day": day, **_figures(by_day.get(day))} for day in days]
    if group == "agent":
        return [{"agentId": r.key, "agentName": r.name, **_figures(r)} for r in rows]
    return [{"model": r.key, **_figures(r)} for r in rows]


async def usage_report(
    db: Database,
    team_id: str,
    days: tuple[date, date],
    group: str,
    agent_id: str | None,
    currency: str,
) -> dict[str, Any]:
    """The team's (or one agent's) figures over `days` (both included), grouped."""
    first, last = days
    rows = await store.report(
        db.reader, team_id, first.isoformat(), last.isoformat(), group, agent_id
    )
    totals = {
        "answers": sum(r.answers for r in rows),
        "inputTokens": sum(r.input_tokens for r in rows),
        "outputTokens": sum(r.output_tokens for r in rows),
        "cost": from_nanos(sum(r.cost_nanos for r in rows)),
    }
    return {
        "from": first.isoformat(),
        "to": last.isoformat(),
        "groupBy": group,
        "agentId": agent_id,
        "currency": currency,
        "totals": totals,
        "rows": _rows(group, rows, first, last),
    }
