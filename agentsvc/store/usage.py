"""Token usage and costs, budgets and the warnings sent about them.

`usage_daily` (per team, UTC day, agent and model), `usage_monthly` (per team, UTC month and
agent) and a conversation's totals are added to in the transaction that stores an answer;
reports read one team's rows of a bounded range of days, never messages. Costs are
integers in billionths of the currency's unit (nanos).
"""

from __future__ import annotations

from dataclasses import dataclass

from agentsvc.db import Tx


@dataclass(frozen=True, slots=True)
class Answered:
    """One AI answer's usage, as it is counted."""

    team_id: str
    agent_id: str
    conversation_id: str | None  # None: an answer outside conversations (an evaluation's)
    model: str
    day: str  # UTC, YYYY-MM-DD
    input_tokens: int
    output_tokens: int
    cost_nanos: int


@dataclass(frozen=True, slots=True)
class Budget:
    """A monthly limit (the team's or one agent's)."""

    limit_nanos: int
    warn_at_percent: int | None
    updated_at: str = ""


@dataclass(frozen=True, slots=True)
class Spending:
    """A month's budgets of a team and one of its agents, and what each spent."""

    team: Budget | None
    agent: Budget | None
    team_nanos: int
    agent_nanos: int


@dataclass(frozen=True, slots=True)
class UsageRow:
    """One group of a report: a day, an agent (with its name, None once deleted) or a model."""

    key: str
    name: str | None
    answers: int
    input_tokens: int
    output_tokens: int
    cost_nanos: int


_ADD_DAY = """
INSERT INTO usage_daily AS u
    (team_id, day, agent_id, model, answers, input_tokens, output_tokens, cost_nanos)
VALUES (?, ?, ?, ?, 1, ?, ?, ?)
ON CONFLICT (team_id, day, agent_id, model) DO UPDATE SET
    answers = u.answers + 1,
    input_tokens = u.input_tokens + excluded.input_tokens,
    output_tokens = u.output_tokens + excluded.output_tokens,
    cost_nanos = u.cost_nanos + excluded.cost_nanos
"""
_ADD_MONTH = """
INSERT INTO usage_monthly AS u (team_id, month, agent_id, cost_nanos) VALUES (?, ?, ?, ?)
ON CONFLICT (team_id, month, agent_id) DO UPDATE SET cost_nanos = u.cost_nanos + excluded.cost_nanos
"""


async def add_answer(tx: Tx, used: Answered) -> None:
    """Count an answer: its day's, its month's and its conversation's figures."""
    tokens = (used.input_tokens, used.output_tokens)
    await tx.execute(
        _ADD_DAY, (used.team_id, used.day, used.agent_id, used.model, *tokens, used.cost_nanos)
    )
    if used.cost_nanos:
        await tx.execute(_ADD_MONTH, (used.team_id, used.day[:7], used.agent_id, used.cost_nanos))
    if used.conversation_id is None:
        return
    await tx.execute(
        "UPDATE conversations SET input_tokens = input_tokens + ?,"
        " output_tokens = output_tokens + ?, cost_nanos = cost_nanos + ? WHERE id = ?",
        (*tokens, used.cost_nanos, used.conversation_id),
    )


_SPENDING = """
SELECT
    (SELECT limit_nanos FROM team_budgets WHERE team_id = ?),
    (SELECT warn_at_percent FROM team_budgets WHERE team_id = ?),
    (SELECT limit_nanos FROM agent_budgets WHERE agent_id = ?),
    (SELECT warn_at_percent FROM agent_budgets WHERE agent_id = ?),
    (SELECT COALESCE(SUM(cost_nanos), 0) FROM usage_monthly WHERE team_id = ? AND month = ?),
    (SELECT COALESCE(SUM(cost_nanos), 0) FROM usage_monthly
     WHERE team_id = ? AND month = ? AND agent_id = ?)
"""


async def spending(tx: Tx, team_id: str, agent_id: str, month: str) -> Spending:
    """The team's and the agent's budgets and what each spent in `month` (YYYY-MM); one
    statement, reading one row per agent of the team that spent that month."""
    row = await tx.fetchone(
        _SPENDING,
        (team_id, team_id, agent_id, agent_id, team_id, month, team_id, month, agent_id),
    )
    assert row is not None
    team = Budget(int(row[0]), row[1]) if row[0] is not None else None
    agent = Budget(int(row[2]), row[3]) if row[2] is not None else None
    return Spending(team, agent, int(row[4]), int(row[5]))


async def month_spent(tx: Tx, team_id: str, month: str) -> dict[str, int]:
    """What each of the team's agents spent in `month`, by agent id."""
    rows = await tx.fetchall(
        "SELECT agent_id, cost_nanos FROM usage_monthly WHERE team_id = ? AND month = ?",
        (team_id, month),
    )
    return {r[0]: int(r[1]) for r in rows}


# The column each grouping reads (a fixed word, never the caller's).
_GROUPS = {"day": "u.day", "agent": "u.agent_id", "model": "u.model"}


async def report(
    tx: Tx, team_id: str, first_day: str, last_day: str, group: str, agent_id: str | None
) -> list[UsageRow]:
    """The team's figures from `first_day` to `last_day` (included) by day, agent or model,
    optionally of one agent: days in order, agents and models by cost then tokens."""
    column = _GROUPS[group]
    name, join, grouped = "NULL", "", column
    if group == "agent":  # with the agent's name (NULL once deleted)
        name, join = "a.name", "LEFT JOIN agents AS a ON a.id = u.agent_id"
        grouped += ", a.name"
    where, args = "u.team_id = ? AND u.day >= ? AND u.day <= ?", [team_id, first_day, last_day]
    if agent_id is not None:
        where += " AND u.agent_id = ?"
        args.append(agent_id)
    order = "1"
    if group != "day":
        order = "SUM(u.cost_nanos) DESC, SUM(u.input_tokens) + SUM(u.output_tokens) DESC, 1"
    rows = await tx.fetchall(
        f"SELECT {column}, {name}, SUM(u.answers), SUM(u.input_tokens), SUM(u.output_tokens),"
        f" SUM(u.cost_nanos) FROM usage_daily AS u {join} WHERE {where}"
        f" GROUP BY {grouped} ORDER BY {order}",
        args,
    )
    return [UsageRow(r[0], r[1], int(r[2]), int(r[3]), int(r[4]), int(r[5])) for r in rows]


async def team_budget(tx: Tx, team_id: str) -> Budget | None:
    row = await tx.fetchone(
        "SELECT limit_nanos, warn_at_percent, updated_at FROM team_budgets WHERE team_id = ?",
        (team_id,),
    )
    return Budget(int(row[0]), row[1], row[2]) if row else None


async def put_team_budget(tx: Tx, team_id: str, budget: Budget) -> None:
    await tx.execute(
        "INSERT INTO team_budgets (team_id, limit_nanos, warn_at_percent, updated_at)"
        " VALUES (?, ?, ?, ?) ON CONFLICT (team_id) DO UPDATE SET"
        " limit_nanos = excluded.limit_nanos, warn_at_percent = excluded.warn_at_percent,"
        " updated_at = excluded.updated_at",
        (team_id, budget.limit_nanos, budget.warn_at_percent, budget.updated_at),
    )


async def delete_team_budget(tx: Tx, team_id: str) -> bool:
    return await tx.execute("DELETE FROM team_budgets WHERE team_id = ?", (team_id,)) > 0


async def agent_budget(tx: Tx, agent_id: str) -> Budget | None:
    row = await tx.fetchone(
        "SELECT limit_nanos, warn_at_percent, updated_at FROM agent_budgets WHERE agent_id = ?",
        (agent_id,),
    )
    return Budget(int(row[0]), row[1], row[2]) if row else None


async def agent_budgets(tx: Tx, team_id: str) -> dict[str, Budget]:
    """The budgets of the team's agents, by agent id."""
    rows = await tx.fetchall(
        "SELECT agent_id, limit_nanos, warn_at_percent, updated_at FROM agent_budgets"
        " WHERE team_id = ?",
        (team_id,),
    )
    return {r[0]: Budget(int(r[1]), r[2], r[3]) for r in rows}


async def put_agent_budget(tx: Tx, team_id: str, agent_id: str, budget: Budget) -> None:
    await tx.execute(
        "INSERT INTO agent_budgets (agent_id, team_id, limit_nanos, warn_at_percent, updated_at)"
        " VALUES (?, ?, ?, ?, ?) ON CONFLICT (agent_id) DO UPDATE SET"
        " limit_nanos = excluded.limit_nanos, warn_at_percent = excluded.warn_at_percent,"
        " updated_at = excluded.updated_at",
        (agent_id, team_id, budget.limit_nanos, budget.warn_at_percent, budget.updated_at),
    )


async def delete_agent_budget(tx: Tx, agent_id: str) -> bool:
    return await tx.execute("DELETE FROM agent_budgets WHERE agent_id = ?", (agent_id,)) > 0


async def claim_alert(
    tx: Tx, team_id: str, scope: str, month: str, percent: int, limit_nanos: int, now: str
) -> bool:
    """Record a warning as sent; False when it already was (by any process)."""
    changed = await tx.execute(
        "INSERT INTO budget_alerts (team_id, scope, month, percent, limit_nanos, sent_at)"
        " VALUES (?, ?, ?, ?, ?, ?)"
        " ON CONFLICT (team_id, scope, month, percent, limit_nanos) DO NOTHING",
        (team_id, scope, month, percent, limit_nanos, now),
    )
    return changed > 0
