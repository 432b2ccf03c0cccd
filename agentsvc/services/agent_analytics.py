"""An agent's analytics over a range of UTC days: activity, answer quality, the trigger
funnel, the guardrails' hits and the questions its answers found nothing for.

Every figure comes from counters kept per agent and day (`agent_daily`, `trigger_daily`,
`guardrail_daily`),
so a report reads at most one row per day (and per trigger) of the range, whatever the
number of conversations; the range is at most MAX_DAYS long.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from typing import Any

from agentsvc.db import Database
from agentsvc.errors import NotFound, ValidationFailed
from agentsvc.services.chat.conversations import after_day, day_start
from agentsvc.services.guardrails.records import HIT_KINDS
from agentsvc.store import agents as agents_store
from agentsvc.store import analytics as store
from agentsvc.store import guardrails as guardrails_store

MAX_DAYS = 366
DEFAULT_DAYS = 30
TOP_QUESTIONS = 10

# Per day: the agent's own figures, then the trigger funnel summed over its triggers.
_AGENT_FIGURES = {
    "conversations": "conversations",
    "visitorMessages": "visitor_messages",
    "answers": "answers",
    "answersRatedUp": "rated_up",
    "answersRatedDown": "rated_down",
    "unanswered": "unanswered",
}
_TRIGGER_FIGURES = {
    "triggerFired": "fired",
    "triggerConverted": "converted",
    "triggerConversations": "conversations",
    "triggerSubmissions": "submissions",
}


def date_range(date_from: date | None, date_to: date | None, today: date) -> tuple[date, date]:
    """The days a report covers: `to` defaults to today, `from` to 30 days before `to`;
    both included, at most MAX_DAYS days."""
    last = date_to or today
    # 30 days back, but not before the first day there is (`to=0001-01-05`).
    first = date_from or date.fromordinal(max(1, last.toordinal() - (DEFAULT_DAYS - 1)))
    if first > last:
        raise ValidationFailed("from: must not be after to")
    if (last - first).days + 1 > MAX_DAYS:
        raise ValidationFailed(
            f"from: the range may cover at most {MAX_DAYS} days (give from and to closer)"
        )
    return first, last


def _rate(part: int, whole: int) -> float:
    return round(100.0 * part / whole, 1) if whole else 0.0


@dataclass(frozen=True, slots=True)
class Period:
    """The days a report is asked for (either end may be left out) and today, the default
    end (see `date_range`)."""

    date_from: date | None
    date_to: date | None
    today: date


async def _guardrail_hits(
    db: Database, agent_id: str, lo: str, hi: str
) -> dict[str, dict[str, int]]:
    """The guardrails' hits of each day that has any, by kind."""
    hits: dict[str, dict[str, int]] = {}
    for day, kind, count in await guardrails_store.days(db.reader, agent_id, lo, hi):
        if kind in HIT_KINDS:
            hits.setdefault(day, dict.fromkeys(HIT_KINDS, 0))[kind] = count
    return hits


async def agent_analytics(
    db: Database, team_id: str, agent_id: str, period: Period
) -> dict[str, Any]:
    """The agent's figures per day and in total over the period, its triggers' funnel, and
    its most frequent unanswered questions."""
    if await agents_store.get(db.reader, team_id, agent_id) is None:
        raise NotFound("Agent not found")
    first, last = date_range(period.date_from, period.date_to, period.today)
    lo, hi = first.isoformat(), last.isoformat()
    agent_days = {d.day: d for d in await store.agent_days(db.reader, agent_id, lo, hi)}
    trigger_days = await store.trigger_days(db.reader, agent_id, lo, hi)
    hits = await _guardrail_hits(db, agent_id, lo, hi)
    questions = await store.frequent_unanswered(
        db.reader, agent_id, day_start(first), after_day(last), TOP_QUESTIONS
    )

    funnel: dict[str, dict[str, int]] = {}
    triggers: dict[str, dict[str, Any]] = {}
    for row in trigger_days:
        day = funnel.setdefault(row.day, dict.fromkeys(_TRIGGER_FIGURES, 0))
        entry = triggers.setdefault(
            row.trigger_id,
            {
                "triggerId": row.trigger_id,
                "name": row.trigger_name,
                **dict.fromkeys(("fired", "converted", "conversations", "submissions"), 0),
            },
        )
        for name, column in _TRIGGER_FIGURES.items():
            value = getattr(row, column)
            day[name] += value
            entry[column] += value

    days = []
    for offset in range((last - first).days + 1):
        key = (first + timedelta(days=offset)).isoformat()
        figures = agent_days.get(key)
        day: dict[str, Any] = {"date": key}
        for name, column in _AGENT_FIGURES.items():
            day[name] = getattr(figures, column) if figures else 0
        day.update(funnel.get(key) or dict.fromkeys(_TRIGGER_FIGURES, 0))
        day["guardrailHits"] = hits.get(key) or dict.fromkeys(HIT_KINDS, 0)
        days.append(day)
    totals: dict[str, Any] = {
        name: sum(d[name] for d in days) for name in (*_AGENT_FIGURES, *_TRIGGER_FIGURES)
    }
    totals["unansweredRate"] = _rate(totals["unanswered"], totals["answers"])
    totals["guardrailHits"] = {k: sum(d["guardrailHits"][k] for d in days) for k in HIT_KINDS}
    return {
        "agentId": agent_id,
        "from": lo,
        "to": hi,
        "days": days,
        "totals": totals,
        "triggers": sorted(triggers.values(), key=lambda t: (-t["fired"], t["triggerId"])),
        "unansweredQuestions": [
            {"question": q.question, "count": q.asked, "lastAskedAt": q.last_asked_at}
            for q in questions
        ],
    }


class AnalyticsService:
    """An agent's figures as its team reads them."""

    def __init__(self, db: Database):
        self._db = db

    async def agent_analytics(
        self, team_id: str, agent_id: str, date_from: date | None, date_to: date | None
    ) -> dict[str, Any]:
        """The agent's figures from `date_from` to `date_to` (defaults: the 30 days to today)."""
        period = Period(date_from, date_to, datetime.now(UTC).date())
        return await agent_analytics(self._db, team_id, agent_id, period)
