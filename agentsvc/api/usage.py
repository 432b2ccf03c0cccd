"""Usage and budgets: GET /usage (tokens and costs by day, agent or model) and the team's
monthly budget (GET, PUT, DELETE /team/budget; bare bodies, as the team's endpoints).
An agent's budget is its `budget` field (api/agents.py)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BeforeValidator, Field
from pydantic.json_schema import SkipJsonSchema

from agentsvc.api import app_keys
from agentsvc.api.audit import actor_of
from agentsvc.api.list_filters import AgentId, Day
from agentsvc.api.models import QueryModel, RequestModel, ResponseModel, integral
from agentsvc.api.routing import Call, RouteTable, envelope_response, json_response
from agentsvc.services.usage import budgets
from agentsvc.services.usage.service import BudgetChange, UsageService
from agentsvc.text_patterns import CURRENCY_PATTERN

routes = RouteTable("usage")


def usage_service(call: Call) -> UsageService:
    """The usage feature (api/agents.py reads agents' budgets through it too)."""
    return call.app[app_keys.usage_key]


MonthlyLimit = Annotated[
    float,
    Field(
        ge=budgets.MIN_LIMIT,
        le=budgets.MAX_LIMIT,
        description="what may be spent in a calendar month of UTC, in the server's currency",
    ),
]
WarnAtPercent = Annotated[int, Field(ge=1, le=99), BeforeValidator(integral)]
Currency = Annotated[str, Field(pattern=CURRENCY_PATTERN, description="ISO 4217, as USD")]


class BudgetIn(RequestModel):
    nullable = frozenset({"warnAtPercent"})

    monthly_limit: MonthlyLimit
    warn_at_percent: WarnAtPercent | None = Field(
        budgets.DEFAULT_WARN_AT_PERCENT,
        description="the owners are e-mailed (and a budget.warning event is sent) once the"
        " month's spending reaches this % of the limit; null: only at the limit",
    )
    currency: Currency | SkipJsonSchema[None] = Field(
        None, description="when given, must be the currency of the server's prices"
    )

    def change(self) -> BudgetChange:
        return BudgetChange(self.monthly_limit, self.warn_at_percent, self.currency)


class BudgetStatusOut(ResponseModel):
    monthly_limit: float
    currency: str
    warn_at_percent: int | None
    updated_at: str | None
    month: str = Field(description="the UTC calendar month, YYYY-MM")
    spent: float = Field(description="spent this month")
    percent_used: float
    limit_reached: bool = Field(
        description="true: the agent (every agent of the team, for the team's budget) answers"
        " with its offline message until the month ends or the limit is raised"
    )
    resets_at: str = Field(description="when the month ends (UTC)")


class AgentBudgetRow(ResponseModel):
    agent_id: str
    agent_name: str
    spent: float = Field(description="spent this month")
    budget: BudgetStatusOut | None


class TeamBudgetOut(ResponseModel):
    month: str = Field(description="the UTC calendar month, YYYY-MM")
    currency: str
    resets_at: str
    spent: float = Field(description="the team's spending this month")
    budget: BudgetStatusOut | None = Field(description="the team's budget; null: none")
    agents: list[AgentBudgetRow]


class UsageQuery(QueryModel):
    date_from: Day | None = Field(
        None, alias="from", description="first UTC day (YYYY-MM-DD); default: 29 days before to"
    )
    date_to: Day | None = Field(
        None, alias="to", description="last UTC day (YYYY-MM-DD), included; default: today"
    )
    group_by: Literal["day", "agent", "model"] = Field(
        "day", description="day: every day of the range; agent or model: those with answers"
    )
    agent_id: AgentId | None = Field(None, description="only this agent's answers")


class UsageFigures(ResponseModel):
    answers: int = Field(description="AI answers whose provider reported usage")
    input_tokens: int
    output_tokens: int
    cost: float = Field(description="in the currency; answers of unpriced models cost 0")


class UsageRowOut(UsageFigures):
    day: str | None = Field(None, description="groupBy=day: the UTC day")
    agent_id: str | None = Field(None, description="groupBy=agent")
    agent_name: str | None = Field(None, description="groupBy=agent; null once deleted")
    model: str | None = Field(None, description="groupBy=model: the agent's model id then")
    priced: bool | None = Field(
        None, description="groupBy=model: whether the server has a price for it (else cost 0)"
    )


class UsageReport(ResponseModel):
    from_: str = Field(alias="from")
    to: str
    group_by: Literal["day", "agent", "model"]
    agent_id: str | None
    currency: str
    totals: UsageFigures
    rows: list[UsageRowOut]


@routes.get("/usage", query=UsageQuery, response=UsageReport, envelope=True, errors=(400, 404))
async def get_usage(call: Call):
    """The team's tokens and costs over a range of UTC days, per day, agent or model (read
    from counters kept as answers are stored)."""
    query: UsageQuery = call.query
    report = await usage_service(call).report(
        call.team_id,
        query.date_from,  # type: ignore[arg-type]  (a date once validated)
        query.date_to,  # type: ignore[arg-type]
        query.group_by,
        query.agent_id,
    )
    return envelope_response(report)


@routes.get("/team/budget", response=TeamBudgetOut)
async def get_team_budget(call: Call):
    """The team's monthly budget and each agent's, with this month's spending."""
    return json_response(await usage_service(call).team_budgets(call.team_id))


@routes.put(
    "/team/budget", body=BudgetIn, response=TeamBudgetOut, owner_only=True, errors=(400, 403)
)
async def put_team_budget(call: Call):
    """Set the team's monthly budget (owner only): a warning at `warnAtPercent`, and at the
    limit every agent answers with its offline message until the month ends."""
    body: BudgetIn = call.body
    return json_response(await usage_service(call).set_team_budget(actor_of(call), body.change()))


@routes.delete("/team/budget", response=TeamBudgetOut, owner_only=True, errors=(403,))
async def delete_team_budget(call: Call):
    """Remove the team's monthly budget (owner only); agents' budgets stay."""
    return json_response(await usage_service(call).delete_team_budget(actor_of(call)))
