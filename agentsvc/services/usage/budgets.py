"""The rules of budgets: calendar months, limits, thresholds, and a budget as people see it.

A budget is a limit on what the team, or one agent, spends in a calendar month of UTC
(the counters' days are UTC days, so a month is the same for every process and member,
whatever their time zone). Owners are warned once when the spending crosses
`warnAtPercent` and once when it reaches the limit; from then until the month ends or the
limit is raised, the agent (every agent of the team, for the team's budget) answers with
its offline message instead of calling its model.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from agentsvc.errors import ValidationFailed
from agentsvc.services.usage.prices import from_nanos
from agentsvc.store.usage import Budget, Spending

DEFAULT_WARN_AT_PERCENT = 80
MIN_LIMIT, MAX_LIMIT = 0.01, 1_000_000_000  # in the currency's unit
LIMIT = 100  # the threshold of the limit itself


def month_of(now: datetime | None = None) -> str:
    """The UTC calendar month of `now` (default: now), as YYYY-MM."""
    return (now or datetime.now(UTC)).astimezone(UTC).strftime("%Y-%m")


def month_end(month: str) -> str:
    """When a month's budgets start over: the first instant of the next UTC month."""
    year, number = int(month[:4]), int(month[5:7])
    year, number = (year + 1, 1) if number == 12 else (year, number + 1)
    return f"{year:04d}-{number:02d}-01T00:00:00.000Z"


def check_currency(currency: str | None, ours: str) -> None:
    """A budget is in the currency of the server's prices (given or not)."""
    if currency is not None and currency != ours:
        raise ValidationFailed(
            f"currency: budgets are in {ours}, the currency of this server's prices;"
            f" {currency} cannot be compared with what the models cost"
        )


def thresholds(budget: Budget) -> list[int]:
    """The percentages at which owners hear of the spending: the warning, then the limit."""
    return [budget.warn_at_percent, LIMIT] if budget.warn_at_percent else [LIMIT]


def crossed(budget: Budget, spent_nanos: int) -> list[int]:
    """The thresholds `spent_nanos` has reached."""
    return [t for t in thresholds(budget) if spent_nanos * 100 >= t * budget.limit_nanos]


def reached(spending: Spending | None) -> bool:
    """Whether the team's or the agent's limit is reached this month."""
    if spending is None:
        return False
    team = spending.team is not None and spending.team_nanos >= spending.team.limit_nanos
    agent = spending.agent is not None and spending.agent_nanos >= spending.agent.limit_nanos
    return team or agent


def percent(spent_nanos: int, limit_nanos: int) -> float:
    """How much of a limit is spent, in % with one decimal."""
    return round(100.0 * spent_nanos / limit_nanos, 1)


def budget_json(budget: Budget | None, currency: str) -> dict[str, Any] | None:
    """A budget as it is set (null: none)."""
    if budget is None:
        return None
    return {
        "monthlyLimit": from_nanos(budget.limit_nanos),
        "currency": currency,
        "warnAtPercent": budget.warn_at_percent,
        "updatedAt": budget.updated_at or None,
    }


def status_json(
    budget: Budget | None, spent_nanos: int, month: str, currency: str
) -> dict[str, Any] | None:
    """A budget with this month's spending (null: no budget)."""
    shown = budget_json(budget, currency)
    if shown is None or budget is None:
        return None
    return {
        **shown,
        "month": month,
        "spent": from_nanos(spent_nanos),
        "percentUsed": percent(spent_nanos, budget.limit_nanos),
        "limitReached": spent_nanos >= budget.limit_nanos,
        "resetsAt": month_end(month),
    }


def money(nanos: int, currency: str) -> str:
    """An amount as people read it: 8.12 USD (under a hundredth with more decimals)."""
    amount = from_nanos(nanos)
    shown = f"{amount:,.2f}" if amount == 0 or amount >= 0.01 else f"{amount:.6f}".rstrip("0")
    return f"{shown} {currency}"


def month_name(month: str) -> str:
    """`2026-11` as November 2026."""
    return datetime.strptime(month, "%Y-%m").strftime("%B %Y")
