"""A budget's warnings: what crossed which threshold, the `budget.warning` event's data, and
the e-mail to the team's owners (sent after the answer's commit, in the background, through
the mailer: without SMTP it waits in the mail outbox)."""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import Any

from agentsvc.db import Database
from agentsvc.mail import Mailer, UnsafeHeader
from agentsvc.services.usage.budgets import LIMIT, money, month_end, month_name, percent
from agentsvc.services.usage.prices import from_nanos
from agentsvc.store import team as team_store

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class BudgetAlert:
    """A threshold of a budget crossed this month (sent once, whichever process saw it)."""

    team_id: str
    agent_id: str | None  # None: the team's budget
    agent_name: str
    month: str
    threshold: int  # the warning's percentage, or 100: the limit
    limit_nanos: int
    spent_nanos: int
    currency: str

    @property
    def scope(self) -> str:
        return "team" if self.agent_id is None else "agent"


def event_data(alert: BudgetAlert) -> dict[str, Any]:
    """The `data` of a `budget.warning` event (docs/integrators/webhooks.md)."""
    return {
        "scope": alert.scope,
        "agentId": alert.agent_id,
        "agentName": alert.agent_name if alert.agent_id else None,
        "month": alert.month,
        "threshold": alert.threshold,
        "limitReached": alert.threshold >= LIMIT,
        "monthlyLimit": from_nanos(alert.limit_nanos),
        "spent": from_nanos(alert.spent_nanos),
        "percentUsed": percent(alert.spent_nanos, alert.limit_nanos),
        "currency": alert.currency,
        "resetsAt": month_end(alert.month),
    }


def mail_of(alert: BudgetAlert, link: str) -> tuple[str, str]:
    """The e-mail's subject and text."""
    team = alert.agent_id is None
    who = "the team" if team else alert.agent_name
    spent = (
        f"{'The team' if team else who} has spent {money(alert.spent_nanos, alert.currency)}"
        f" of its {money(alert.limit_nanos, alert.currency)} budget for"
        f" {month_name(alert.month)} ({percent(alert.spent_nanos, alert.limit_nanos):g} %)."
    )
    answering = "every agent of the team answers" if team else f"{who} answers"
    if alert.threshold >= LIMIT:
        subject = f"Budget reached: {who} has used all of its monthly budget"
        then = (
            f"From now on {answering} with its offline message (visitors can still ask for"
            " a person) until the month ends or the budget is raised."
        )
    else:
        subject = f"Budget warning: {who} has used {alert.threshold} % of its monthly budget"
        then = (
            f"At the limit, {answering} with its offline message until the month ends or"
            " the budget is raised."
        )
    return subject, f"{spent}\n\n{then}\n\nUsage and budgets: {link}\n"


class BudgetMail:
    """E-mails the team's owners about crossed thresholds (one per app)."""

    def __init__(self, db: Database, mailer: Mailer, public_url: str):
        self._db = db
        self._mailer = mailer
        self._link = public_url.rstrip("/") + "/#/usage"
        self._tasks: set[asyncio.Task] = set()

    def send_soon(self, alerts: list[BudgetAlert]) -> None:
        """Mail the owners about each alert, in the background."""
        if not alerts:
            return
        task = asyncio.get_running_loop().create_task(self._send(alerts))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _send(self, alerts: list[BudgetAlert]) -> None:
        owners = await team_store.owner_addresses(self._db.reader, alerts[0].team_id)
        for alert in alerts:
            subject, text = mail_of(alert, self._link)
            for to in owners:
                try:
                    self._mailer.send_soon(to, subject, text)
                except UnsafeHeader:
                    log.warning("budget mail to an owner skipped: unusable address")

    async def drain(self) -> None:
        """Wait for the mails under way (shutdown, tests)."""
        if self._tasks:
            await asyncio.wait(set(self._tasks), timeout=10)
