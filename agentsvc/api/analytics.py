"""GET /agents/:id/analytics: an agent's figures per day and in total over a range of days."""

from __future__ import annotations

from pydantic import Field

from agentsvc.api import app_keys
from agentsvc.api.list_filters import Day
from agentsvc.api.models import QueryModel, ResponseModel
from agentsvc.api.routing import Call, RouteTable, envelope_response
from agentsvc.services.agent_analytics import AnalyticsService

routes = RouteTable("analytics")


def _analytics(call: Call) -> AnalyticsService:
    return call.app[app_keys.analytics_key]


class AnalyticsQuery(QueryModel):
    date_from: Day | None = Field(
        None, alias="from", description="first UTC day (YYYY-MM-DD); default: 29 days before to"
    )
    date_to: Day | None = Field(
        None, alias="to", description="last UTC day (YYYY-MM-DD), included; default: today"
    )


class GuardrailHits(ResponseModel):
    """Guardrails' hits: what was redacted (each kind, and the agent's own patterns), the
    messages on a blocked topic, the answers replaced, the messages refused as too long."""

    email: int
    phone: int
    card: int
    iban: int
    pattern: int
    blocked: int
    must_not_say: int
    too_long: int


class Figures(ResponseModel):
    conversations: int
    visitor_messages: int
    answers: int = Field(description="AI answers")
    answers_rated_up: int
    answers_rated_down: int
    unanswered: int = Field(description="AI answers that found nothing to answer with")
    trigger_fired: int
    trigger_converted: int
    trigger_conversations: int = Field(description="conversations started from a trigger")
    trigger_submissions: int = Field(description="forms submitted from a trigger or its chat")
    guardrail_hits: GuardrailHits = Field(description="the guardrails' hits of each kind")


class DayFigures(Figures):
    date: str = Field(description="the UTC day, YYYY-MM-DD")


class TotalFigures(Figures):
    unanswered_rate: float = Field(description="unanswered / answers x 100 (0 with no answer)")


class TriggerFigures(ResponseModel):
    trigger_id: str
    name: str | None = Field(description="null once the trigger is deleted")
    fired: int
    converted: int
    conversations: int
    submissions: int


class UnansweredQuestion(ResponseModel):
    question: str = Field(description="the latest way it was asked")
    count: int
    last_asked_at: str


class AgentAnalytics(ResponseModel):
    agent_id: str
    from_: str = Field(alias="from")
    to: str
    days: list[DayFigures]
    totals: TotalFigures
    triggers: list[TriggerFigures]
    unanswered_questions: list[UnansweredQuestion]


@routes.get(
    "/agents/{id}/analytics",
    query=AnalyticsQuery,
    response=AgentAnalytics,
    envelope=True,
    errors=(400, 404),
)
async def get_agent_analytics(call: Call):
    """An agent's conversations, messages, answers, ratings, unanswered answers and trigger
    funnel per day and in total, with its most frequent unanswered questions."""
    query: AnalyticsQuery = call.query
    figures = await _analytics(call).agent_analytics(
        call.team_id,
        call.params["id"],
        query.date_from,  # type: ignore[arg-type]  (a date once validated)
        query.date_to,  # type: ignore[arg-type]
    )
    return envelope_response(figures)
