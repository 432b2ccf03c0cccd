"""Experiments: an agent's versions as weighted variants, their figures, and stopping."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field
from pydantic.json_schema import SkipJsonSchema

from agentsvc.api.agents import agents_service
from agentsvc.api.audit import actor_of
from agentsvc.api.models import RequestModel, ResponseModel
from agentsvc.api.routing import Call, RouteTable, envelope_response
from agentsvc.services.agents import experiments
from agentsvc.store.experiments import Experiment

routes = RouteTable("experiments")

VersionNumber = Annotated[int, Field(ge=1, le=999_999_999)]


class VariantIn(RequestModel):
    version: VersionNumber
    weight: Annotated[float, Field(ge=0, le=1_000_000)] = Field(
        description="its share of new conversations, relative to the others' weights"
    )


class ExperimentCreate(RequestModel):
    variants: Annotated[
        list[VariantIn],
        Field(min_length=experiments.MIN_VARIANTS, max_length=experiments.MAX_VARIANTS),
    ]


class ExperimentStop(RequestModel):
    winner: VersionNumber | SkipJsonSchema[None] = Field(
        None, description="one of the experiment's versions, made live (as a new version)"
    )


class VariantOut(ResponseModel):
    version: int
    weight: float


class FigureOut(ResponseModel):
    value: float | None = Field(description="null before the first conversation or answer")
    low: float | None = Field(description="the 95 % interval's lower end")
    high: float | None


class VariantFigures(ResponseModel):
    version: int
    weight: float
    conversations: int
    answers: int
    up_rate: FigureOut = Field(description="% of answers rated 👍")
    down_rate: FigureOut = Field(description="% of answers rated 👎")
    unanswered_rate: FigureOut = Field(description="% of answers that found nothing")
    handoff_rate: FigureOut = Field(description="% of conversations handed to a person")
    submissions_per_conversation: FigureOut


class Results(ResponseModel):
    variants: list[VariantFigures]
    leading: dict[str, int | None] = Field(
        description="per figure, the version whose interval clears every other's on the"
        " better side (higher 👍 and submissions, lower 👎, unanswered and handoff); null"
        " while none does"
    )


class ExperimentOut(ResponseModel):
    id: str
    agent_id: str
    status: Literal["running", "stopped"]
    variants: list[VariantOut]
    winner: int | None
    created_at: str
    stopped_at: str | None


class ExperimentDetail(ExperimentOut):
    results: Results


def experiment_json(experiment: Experiment) -> dict[str, Any]:
    return {
        "id": experiment.id,
        "agentId": experiment.agent_id,
        "status": experiment.status,
        "variants": experiment.variants,
        "winner": experiment.winner,
        "createdAt": experiment.created_at,
        "stoppedAt": experiment.stopped_at,
    }


@routes.post(
    "/agents/{id}/experiments",
    body=ExperimentCreate,
    response=ExperimentOut,
    envelope=True,
    status=201,
    errors=(400, 404, 409),
)
async def start_experiment(call: Call):
    """Run an experiment: new conversations are split among the versions by weight (409
    while the agent runs one)."""
    body: ExperimentCreate = call.body
    variants = [v.model_dump() for v in body.variants]
    found = await agents_service(call).start_experiment(actor_of(call), call.params["id"], variants)
    return envelope_response(experiment_json(found), status=201)


@routes.get("/agents/{id}/experiments", response=list[ExperimentOut], envelope=True, errors=(404,))
async def list_experiments(call: Call):
    """The agent's experiments, newest first."""
    found = await agents_service(call).experiments(call.team_id, call.params["id"])
    return envelope_response([experiment_json(e) for e in found])


@routes.get("/experiments/{id}", response=ExperimentDetail, envelope=True, errors=(404,))
async def get_experiment(call: Call):
    """An experiment and each variant's figures with their 95 % intervals."""
    found, results = await agents_service(call).experiment(call.team_id, call.params["id"])
    return envelope_response({**experiment_json(found), "results": results})


@routes.post(
    "/experiments/{id}/stop",
    body=ExperimentStop,
    response=ExperimentOut,
    envelope=True,
    errors=(400, 404, 409),
)
async def stop_experiment(call: Call):
    """Stop the experiment; with a winner, that version goes live (409 when stopped)."""
    body: ExperimentStop = call.body
    found = await agents_service(call).stop_experiment(
        actor_of(call), call.params["id"], body.winner
    )
    return envelope_response(experiment_json(found))
