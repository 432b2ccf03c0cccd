"""Curated answer endpoints: list and add an agent's answers; get, update and delete one."""

from __future__ import annotations

from typing import Annotated

from pydantic import ConfigDict, Field
from pydantic.json_schema import SkipJsonSchema

from agentsvc.api import app_keys
from agentsvc.api.models import NON_BLANK, WORDY, RequestModel, ResponseModel
from agentsvc.api.routing import Call, RouteTable, envelope_response
from agentsvc.services.answers.curated import AnswerDraft
from agentsvc.services.answers.service import AnswersService
from agentsvc.store.answers import CuratedAnswer

routes = RouteTable("answers")


def _answers(call: Call) -> AnswersService:
    return call.app[app_keys.answers_key]


ANSWER_ID = r"ans_[A-Za-z0-9_-]+"
# Some letter or digit: a question of punctuation alone could not be matched to anything.
MAX_QUESTION_CHARS = 1_000
MAX_ANSWER_CHARS = 10_000

Question = Annotated[str, Field(min_length=1, max_length=MAX_QUESTION_CHARS, pattern=WORDY)]
AnswerText = Annotated[str, Field(min_length=1, max_length=MAX_ANSWER_CHARS, pattern=NON_BLANK)]


# Python's regular expressions, as the service's question keys use: "a letter or digit" means
# the same to the check, to the key and to clients generating values from the document.
PYTHON_PATTERNS = ConfigDict(regex_engine="python-re")


class AnswerCreate(RequestModel):
    model_config = PYTHON_PATTERNS

    question: Question = Field(description="the visitor question this answers")
    answer: AnswerText = Field(description="the answer, given word for word by builtin agents")


class AnswerPatch(RequestModel):
    model_config = PYTHON_PATTERNS

    question: Question | SkipJsonSchema[None] = None
    answer: AnswerText | SkipJsonSchema[None] = None


class AnswerOut(ResponseModel):
    id: str
    agent_id: str
    question: str
    answer: str
    created_at: str
    updated_at: str


class AnswerDeleted(ResponseModel):
    id: str
    deleted: bool


def answer_json(answer: CuratedAnswer) -> dict:
    return {
        "id": answer.id,
        "agentId": answer.agent_id,
        "question": answer.question,
        "answer": answer.answer,
        "createdAt": answer.created_at,
        "updatedAt": answer.updated_at,
    }


@routes.get("/agents/{id}/answers", response=list[AnswerOut], envelope=True, errors=(404,))
async def list_answers(call: Call):
    """List an agent's curated answers, newest first."""
    found = await _answers(call).for_agent(call.team_id, call.params["id"])
    return envelope_response([answer_json(a) for a in found])


@routes.post(
    "/agents/{id}/answers",
    body=AnswerCreate,
    response=AnswerOut,
    envelope=True,
    status=201,
    errors=(403, 404, 409),
)
async def post_answer(call: Call):
    """Add a curated answer: visitors asking a question close to it get it."""
    body: AnswerCreate = call.body
    given = AnswerDraft(body.question, body.answer)
    created = await _answers(call).create(call.team_id, call.params["id"], given)
    return envelope_response(answer_json(created), status=201)


@routes.get(f"/answers/{{id:{ANSWER_ID}}}", response=AnswerOut, envelope=True, errors=(404,))
async def get_answer(call: Call):
    """Get a curated answer."""
    found = await _answers(call).get(call.team_id, call.params["id"])
    return envelope_response(answer_json(found))


@routes.patch(
    f"/answers/{{id:{ANSWER_ID}}}",
    body=AnswerPatch,
    response=AnswerOut,
    envelope=True,
    errors=(404, 409),
)
async def patch_answer(call: Call):
    """Change a curated answer's question and/or answer."""
    body: AnswerPatch = call.body
    updated = await _answers(call).update(
        call.team_id, call.params["id"], body.question, body.answer
    )
    return envelope_response(answer_json(updated))


@routes.delete(f"/answers/{{id:{ANSWER_ID}}}", response=AnswerDeleted, envelope=True, errors=(404,))
async def delete_answer(call: Call):
    """Delete a curated answer."""
    await _answers(call).delete(call.team_id, call.params["id"])
    return envelope_response({"id": call.params["id"], "deleted": True})
