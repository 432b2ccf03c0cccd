"""Evaluation sets, their cases, runs against a version, results and progress (SSE)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field, model_validator
from pydantic.json_schema import SkipJsonSchema

from agentsvc.api import app_keys
from agentsvc.api.audit import actor_of
from agentsvc.api.models import NON_BLANK, RequestModel, ResponseModel
from agentsvc.api.progress_stream import progress_stream
from agentsvc.api.routing import Call, RouteTable, envelope_response
from agentsvc.services.evals.service import EvalsService, NewCase, pass_rate
from agentsvc.store.evals import EvalCase, EvalResult, EvalRun, EvalSet

routes = RouteTable("evaluations")


def _evals(call: Call) -> EvalsService:
    return call.app[app_keys.evals_key]


Text = Annotated[str, Field(min_length=1, max_length=200, pattern=NON_BLANK)]


class EvalSetCreate(RequestModel):
    name: Text


class CaseCreate(RequestModel):
    question: Annotated[str, Field(min_length=1, max_length=2_000, pattern=NON_BLANK)]
    expected: Annotated[str, Field(max_length=5_000)] | SkipJsonSchema[None] = Field(
        None, description="what a good answer says (a judge compares; else its words count)"
    )
    must_include: Annotated[list[Text], Field(max_length=20)] = Field(
        [], description="words or phrases the answer must hold (compared by word stems)"
    )
    must_not_include: Annotated[list[Text], Field(max_length=20)] = Field(
        [], description="words or phrases the answer must not hold"
    )
    tags: Annotated[
        list[Annotated[str, Field(min_length=1, max_length=50)]], Field(max_length=10)
    ] = []

    @model_validator(mode="after")
    def _something_to_check(self) -> CaseCreate:
        if (
            not (self.expected or "").strip()
            and not self.must_include
            and not self.must_not_include
        ):
            raise ValueError("give expected, mustInclude or mustNotInclude: something to check")
        return self


class ImportBody(RequestModel):
    from_: Literal["curated", "feedback"] = Field(
        alias="from",
        description="curated: the agent's curated answers; feedback: answers rated 👎 that a"
        " curated answer now answers",
    )


class RunCreate(RequestModel):
    version: (
        Literal["draft"] | Annotated[int, Field(ge=1, le=999_999_999)] | SkipJsonSchema[None]
    ) = Field(None, description="the draft or a version's number; absent: the live version")
    judge: Annotated[str, Field(min_length=1, max_length=300)] | SkipJsonSchema[None] = Field(
        None, description="PROVIDER/MODEL: compares each answer with `expected` (rubric: docs)"
    )


class EvalSetOut(ResponseModel):
    id: str
    agent_id: str
    name: str
    case_count: int
    created_at: str
    updated_at: str


class CaseOut(ResponseModel):
    id: str
    question: str
    expected: str | None
    must_include: list[str]
    must_not_include: list[str]
    tags: list[str]
    created_at: str


class Imported(ResponseModel):
    imported: int
    cases: list[CaseOut]


class EvalDeleted(ResponseModel):
    id: str
    deleted: bool


class RunOut(ResponseModel):
    id: str
    evalset_id: str
    agent_id: str
    version: str = Field(description='"draft" or the version\'s number')
    judge: str | None
    status: Literal["queued", "running", "done", "failed"]
    total: int
    done: int
    passed: int
    pass_rate: float = Field(description="% of all the run's cases passed so far")
    error: str | None
    created_at: str
    finished_at: str | None


class ResultOut(ResponseModel):
    case_id: str
    question: str
    answer: str
    passed: bool
    reason: str
    latency_ms: int


class RunDetail(RunOut):
    results: list[ResultOut]


def set_json(found: EvalSet) -> dict[str, Any]:
    return {
        "id": found.id,
        "agentId": found.agent_id,
        "name": found.name,
        "caseCount": found.case_count,
        "createdAt": found.created_at,
        "updatedAt": found.updated_at,
    }


def case_json(case: EvalCase) -> dict[str, Any]:
    return {
        "id": case.id,
        "question": case.question,
        "expected": case.expected,
        "mustInclude": case.must_include,
        "mustNotInclude": case.must_not_include,
        "tags": case.tags,
        "createdAt": case.created_at,
    }


def run_json(run: EvalRun) -> dict[str, Any]:
    return {
        "id": run.id,
        "evalsetId": run.evalset_id,
        "agentId": run.agent_id,
        "version": run.version,
        "judge": run.judge,
        "status": run.status,
        "total": run.total,
        "done": run.done,
        "passed": run.passed,
        "passRate": pass_rate(run),
        "error": run.error,
        "createdAt": run.created_at,
        "finishedAt": run.finished_at,
    }


def result_json(result: EvalResult) -> dict[str, Any]:
    return {
        "caseId": result.case_id,
        "question": result.question,
        "answer": result.answer,
        "passed": result.passed,
        "reason": result.reason,
        "latencyMs": result.latency_ms,
    }


@routes.post(
    "/agents/{id}/evalsets",
    body=EvalSetCreate,
    response=EvalSetOut,
    envelope=True,
    status=201,
    errors=(400, 404),
)
async def create_set(call: Call):
    """Create an evaluation set for the agent."""
    body: EvalSetCreate = call.body
    found = await _evals(call).create_set(actor_of(call), call.params["id"], body.name)
    return envelope_response(set_json(found), status=201)


@routes.get("/agents/{id}/evalsets", response=list[EvalSetOut], envelope=True, errors=(404,))
async def list_sets(call: Call):
    """The agent's evaluation sets, newest first."""
    found = await _evals(call).sets(call.team_id, call.params["id"])
    return envelope_response([set_json(s) for s in found])


@routes.get("/evalsets/{id}", response=EvalSetOut, envelope=True, errors=(404,))
async def get_set(call: Call):
    """One evaluation set."""
    return envelope_response(set_json(await _evals(call).get_set(call.team_id, call.params["id"])))


@routes.delete("/evalsets/{id}", response=EvalDeleted, envelope=True, errors=(404,))
async def delete_set(call: Call):
    """Delete an evaluation set, its cases and its runs."""
    await _evals(call).delete_set(call.team_id, call.params["id"])
    return envelope_response({"id": call.params["id"], "deleted": True})


@routes.get("/evalsets/{id}/cases", response=list[CaseOut], envelope=True, errors=(404,))
async def list_cases(call: Call):
    """The set's cases, in the order they were added."""
    found = await _evals(call).cases(call.team_id, call.params["id"])
    return envelope_response([case_json(c) for c in found])


@routes.post(
    "/evalsets/{id}/cases",
    body=CaseCreate,
    response=CaseOut,
    envelope=True,
    status=201,
    errors=(400, 404),
)
async def add_case(call: Call):
    """Add a case: a question, and what a good answer holds (400 past the plan's limit)."""
    body: CaseCreate = call.body
    new = NewCase(
        body.question,
        (body.expected or "").strip() or None,
        body.must_include,
        body.must_not_include,
        body.tags,
    )
    principal = call.principal
    assert principal is not None
    added = await _evals(call).add_cases(call.team_id, principal.plan, call.params["id"], [new])
    return envelope_response(case_json(added[0]), status=201)


@routes.delete("/evalsets/{id}/cases/{caseId}", response=EvalDeleted, envelope=True, errors=(404,))
async def delete_case(call: Call):
    """Delete a case (results already recorded keep its question)."""
    await _evals(call).delete_case(call.team_id, call.params["id"], call.params["caseId"])
    return envelope_response({"id": call.params["caseId"], "deleted": True})


@routes.post(
    "/evalsets/{id}/import", body=ImportBody, response=Imported, envelope=True, errors=(400, 404)
)
async def import_cases(call: Call):
    """Add cases from curated answers or 👎 answers; questions the set has are skipped, and
    no more than the plan allows are added."""
    body: ImportBody = call.body
    principal = call.principal
    assert principal is not None
    added = await _evals(call).import_cases(
        call.team_id, principal.plan, call.params["id"], body.from_
    )
    return envelope_response({"imported": len(added), "cases": [case_json(c) for c in added]})


@routes.post(
    "/evalsets/{id}/runs",
    body=RunCreate,
    response=RunOut,
    envelope=True,
    status=202,
    errors=(400, 404, 409),
)
async def start_run(call: Call):
    """Run the set against a version of the agent; the run goes on after this answers
    (follow it at GET /eval-runs/{id} or /eval-runs/{id}/events)."""
    body: RunCreate = call.body
    run = await _evals(call).start_run(actor_of(call), call.params["id"], body.version, body.judge)
    return envelope_response(run_json(run), status=202)


@routes.get("/evalsets/{id}/runs", response=list[RunOut], envelope=True, errors=(404,))
async def list_runs(call: Call):
    """The set's runs, newest first."""
    found = await _evals(call).runs(call.team_id, call.params["id"])
    return envelope_response([run_json(r) for r in found])


@routes.get("/eval-runs/{id}", response=RunDetail, envelope=True, errors=(404,))
async def get_run(call: Call):
    """A run: its progress, pass rate and each case's answer, verdict and reason."""
    run, results = await _evals(call).get_run(call.team_id, call.params["id"])
    return envelope_response({**run_json(run), "results": [result_json(r) for r in results]})


@routes.get("/eval-runs/{id}/events", stream=True, errors=(404,))
async def run_events(call: Call):
    """The run's progress as Server-Sent Events: `progress` each time a case is scored,
    then `end` with the run as GET /eval-runs/{id} shows it (without the results)."""
    evals = _evals(call)
    await evals.get_run(call.team_id, call.params["id"])  # 404 before the stream opens
    updates = evals.progress(call.team_id, call.params["id"])
    return await progress_stream(call, (run_json(run) async for run in updates))
