"""The usage feature as the API uses it: the report, and the team's and agents' budgets."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime
from typing import Any

from agentsvc.db import Database
from agentsvc.errors import NotFound
from agentsvc.ids import now_iso
from agentsvc.services import audit, changes
from agentsvc.services.agent_analytics import date_range
from agentsvc.services.agents.registry import AgentCache
from agentsvc.services.audit import Actor
from agentsvc.services.usage import budgets
from agentsvc.services.usage.prices import PriceBook, from_nanos, to_nanos
from agentsvc.services.usage.report import usage_report
from agentsvc.store import agents as agents_store
from agentsvc.store import usage as store
from agentsvc.store.usage import Budget

_UNKNOWN = object()  # no budget read yet (None: the agent has none)


@dataclass(frozen=True, slots=True)
class BudgetChange:
    """A budget as set: the limit in the currency's unit, the warning's percentage."""

    monthly_limit: float
    warn_at_percent: int | None = budgets.DEFAULT_WARN_AT_PERCENT
    currency: str | None = None  # when given, the server's currency

    def details(self) -> dict[str, Any]:
        return {"monthlyLimit": self.monthly_limit, "warnAtPercent": self.warn_at_percent}


class UsageService:
    """Tokens, costs and budgets of a team (one per app)."""

    def __init__(self, db: Database, prices: PriceBook, agents: AgentCache):
        self._db = db
        self._prices = prices
        self._agents = agents  # an agent's budget is kept beside it, forgotten with it

    @property
    def currency(self) -> str:
        return self._prices.currency

    async def report(
        self,
        team_id: str,
        date_from: date | None,
        date_to: date | None,
        group: str,
        agent_id: str | None,
    ) -> dict[str, Any]:
        """The team's (or its agent's) tokens and costs per day, agent or model over a range
        of UTC days (default: the 30 days to today)."""
        if agent_id is not None:
            await self._agent(team_id, agent_id)
        days = date_range(date_from, date_to, datetime.now(UTC).date())
        report = await usage_report(self._db, team_id, days, group, agent_id, self.currency)
        if group == "model":  # an unpriced model's answers cost 0: say which those are
            for row in report["rows"]:
                row["priced"] = self._prices.has_price(row["model"])
        return report

    async def _agent(self, team_id: str, agent_id: str) -> str:
        agent = await agents_store.get(self._db.reader, team_id, agent_id)
        if agent is None:
            raise NotFound("Agent not found")
        return agent.name

    async def team_budgets(self, team_id: str) -> dict[str, Any]:
        """The team's budget and each agent's, with this month's spending."""
        month = budgets.month_of()
        team = await store.team_budget(self._db.reader, team_id)
        spent = await store.month_spent(self._db.reader, team_id, month)
        of_agents = await store.agent_budgets(self._db.reader, team_id)
        agents = await agents_store.list_for_team(self._db.reader, team_id)
        total = sum(spent.values())
        return {
            "month": month,
            "currency": self.currency,
            "resetsAt": budgets.month_end(month),
            "spent": from_nanos(total),
            "budget": budgets.status_json(team, total, month, self.currency),
            "agents": [
                {
                    "agentId": a.id,
                    "agentName": a.name,
                    "spent": from_nanos(spent.get(a.id, 0)),
                    "budget": budgets.status_json(
                        of_agents.get(a.id), spent.get(a.id, 0), month, self.currency
                    ),
                }
                for a in agents
            ],
        }

    def _budget(self, change: BudgetChange) -> Budget:
        budgets.check_currency(change.currency, self.currency)
        return Budget(to_nanos(change.monthly_limit), change.warn_at_percent, now_iso())

    async def set_team_budget(self, actor: Actor, change: BudgetChange) -> dict[str, Any]:
        """Set the team's monthly budget (replacing the one set)."""
        budget = self._budget(change)
        async with self._db.write() as tx:
            await store.put_team_budget(tx, actor.team_id, budget)
            await audit.record_in(
                tx,
                actor,
                "team.budget_changed",
                target_type="team",
                target_id=actor.team_id,
                details=change.details(),
            )
        return await self.team_budgets(actor.team_id)

    async def delete_team_budget(self, actor: Actor) -> dict[str, Any]:
        """Remove the team's budget (its agents' stay)."""
        async with self._db.write() as tx:
            if await store.delete_team_budget(tx, actor.team_id):
                await audit.record_in(
                    tx,
                    actor,
                    "team.budget_changed",
                    target_type="team",
                    target_id=actor.team_id,
                    details={"monthlyLimit": None},
                )
        return await self.team_budgets(actor.team_id)

    def check(self, change: BudgetChange | None) -> None:
        """Refuse a budget before anything else of a request is changed."""
        if change is not None:
            self._budget(change)

    async def agent_budget(self, team_id: str, agent_id: str) -> dict[str, Any] | None:
        """The agent's budget with this month's spending (None: it has none)."""
        budget = self._agents.remembered(agent_id, "budget", _UNKNOWN)
        if budget is _UNKNOWN:
            epoch = self._agents.epoch
            budget = await store.agent_budget(self._db.reader, agent_id)
            self._agents.remember(agent_id, "budget", budget, epoch)
        if budget is None:
            return None
        month = budgets.month_of()
        spending = await store.spending(self._db.reader, team_id, agent_id, month)
        return budgets.status_json(budget, spending.agent_nanos, month, self.currency)

    async def set_agent_budget(
        self, actor: Actor, agent_id: str, change: BudgetChange | None
    ) -> None:
        """Set (None: remove) the monthly budget of one of the team's agents."""
        name = await self._agent(actor.team_id, agent_id)
        budget = None if change is None else self._budget(change)
        async with self._db.write() as tx:
            if budget is None:
                changed = await store.delete_agent_budget(tx, agent_id)
            else:
                await store.put_agent_budget(tx, actor.team_id, agent_id, budget)
                changed = True
            if changed:
                details = change.details() if change is not None else {"monthlyLimit": None}
                await audit.record_in(
                    tx,
                    actor,
                    "agent.budget_changed",
                    target_type="agent",
                    target_id=agent_id,
                    label=name,
                    details=details,
                )
        if changed:  # every process forgets the budget it kept beside the agent
            await self._db.announce(changes.agent(agent_id))
