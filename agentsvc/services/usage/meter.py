"""Counting each AI answer's usage, and keeping the team's budgets, for the chat turns.

A turn reads its team's and agent's budgets and this month's spending with its other reads
(`spending`): at a limit it answers with the agent's offline message instead of calling the
model. Its answer's tokens are priced and counted in the answer's own transaction
(`record`), which then compares the month's spending, as every process left it, with the
budgets: a threshold crossed is claimed in the database (once, whichever process crossed
it), its `budget.warning` event is written in the same transaction, and its e-mail goes
after the commit (`notify`). Nothing of a budget lives in a process.
"""

from __future__ import annotations

from typing import Any

from agentsvc.db import Database, Tx
from agentsvc.ids import now_iso
from agentsvc.services.events.emitter import Emission
from agentsvc.services.usage import budgets
from agentsvc.services.usage.alerts import BudgetAlert, BudgetMail, event_data
from agentsvc.services.usage.prices import PriceBook, from_nanos
from agentsvc.store import usage as store
from agentsvc.store.agents import Agent
from agentsvc.store.usage import Answered, Budget, Spending

# Counts beyond this are a provider's nonsense, not tokens (a turn's, summed).
MAX_TOKENS = 10**9


def token_count(value: Any) -> int | None:
    """A provider's token count when it is one (a whole number, 0 to MAX_TOKENS)."""
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= MAX_TOKENS:
        return value
    return None


class UsageMeter:
    """Prices and counts answers, and tells owners of their budgets (one per app)."""

    def __init__(self, prices: PriceBook, mail: BudgetMail | None = None):
        self.prices = prices
        self._mail = mail

    async def spending(self, db: Database, agent: Agent) -> Spending:
        """The agent's and its team's budgets and this month's spending."""
        return await store.spending(db.reader, agent.team_id, agent.id, budgets.month_of())

    def usage_json(
        self, model: str, input_tokens: int | None, output_tokens: int | None
    ) -> dict[str, Any] | None:
        """An answer's usage as its message keeps it: tokens, and cost when priced."""
        if input_tokens is None and output_tokens is None:
            return None
        cost = self.prices.cost_nanos(model, input_tokens or 0, output_tokens or 0)
        return {
            "inputTokens": input_tokens,
            "outputTokens": output_tokens,
            "cost": None if cost is None else from_nanos(cost),
        }

    async def record(
        self, tx: Tx, emission: Emission, agent: Agent, used: Answered, known: Spending | None
    ) -> list[BudgetAlert]:
        """Count the answer; with budgets (as the turn read them), claim the thresholds the
        month's spending now crosses and write their events. Returns what to mail."""
        await store.add_answer(tx, used)
        if known is None or (known.team is None and known.agent is None) or not used.cost_nanos:
            return []
        month = used.day[:7]
        now = await store.spending(tx, used.team_id, used.agent_id, month)
        alerts = self._crossed(agent, month, now.team, now.team_nanos, None)
        alerts += self._crossed(agent, month, now.agent, now.agent_nanos, agent.id)
        claimed = []
        at = now_iso()
        for alert in alerts:
            scope = alert.agent_id or "team"
            if await store.claim_alert(
                tx, alert.team_id, scope, month, alert.threshold, alert.limit_nanos, at
            ):
                await emission.emit(tx, "budget.warning", lambda a=alert: event_data(a))
                claimed.append(alert)
        return claimed

    def _crossed(
        self, agent: Agent, month: str, budget: Budget | None, spent: int, agent_id: str | None
    ) -> list[BudgetAlert]:
        if budget is None:
            return []
        return [
            BudgetAlert(
                agent.team_id,
                agent_id,
                agent.name,
                month,
                threshold,
                budget.limit_nanos,
                spent,
                self.prices.currency,
            )
            for threshold in budgets.crossed(budget, spent)
        ]

    def notify(self, alerts: list[BudgetAlert]) -> None:
        """After the commit: e-mail the owners of what crossed."""
        if alerts and self._mail is not None:
            self._mail.send_soon(alerts)


def answered(
    agent: Agent,
    conversation_id: str | None,
    tokens: tuple[int | None, int | None],
    cost: int | None,
    at: str,
    model: str | None = None,
) -> Answered:
    """An answer of `agent` stored at `at` as the counters count it (on its UTC day); no
    conversation: an evaluation's answer or its judge's, `model` the judge's."""
    return Answered(
        team_id=agent.team_id,
        agent_id=agent.id,
        conversation_id=conversation_id,
        model=model or agent.model,
        day=at[:10],
        input_tokens=tokens[0] or 0,
        output_tokens=tokens[1] or 0,
        cost_nanos=cost or 0,
    )
