"""Form endpoints: the public form, submit, client result, events; management, analytics."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from aiohttp import web
from pydantic import Field
from pydantic.json_schema import SkipJsonSchema

from agentsvc.api import app_keys
from agentsvc.api.cursors import MAX_CURSOR_LENGTH, decode_cursor, next_cursor
from agentsvc.api.downloads import SAFE_HEADERS, disposition, send_stored, served_type
from agentsvc.api.form_body import parse_submit_body
from agentsvc.api.limits import take_token
from agentsvc.api.models import QueryModel, RequestModel, ResponseModel
from agentsvc.api.routing import Call, RouteTable, json_response
from agentsvc.services.delivery.outcome import Outcome
from agentsvc.services.forms import submissions as form_submissions
from agentsvc.services.forms.service import FormsService
from agentsvc.services.forms.submissions import STATUSES, ClientReport, SubmissionQuery
from agentsvc.services.forms.submit import SubmitInput
from agentsvc.services.team.access import Principal
from agentsvc.store.deliveries import Attempt
from agentsvc.store.submissions import Delivery, Submission

routes = RouteTable("form submissions")


def _forms(app: web.Application) -> FormsService:
    return app[app_keys.forms_key]


# Submission ids only, so `/form-submissions/submit` and its siblings never match `{id}`
# (an OPTIONS or wrong-method request then names exactly the methods of its own path).
SUBMISSION_ID = r"sub_[A-Za-z0-9_-]+"

Id = Annotated[str, Field(min_length=1, max_length=200)]
Status = Literal[STATUSES]  # type: ignore[valid-type]
EpochMs = Annotated[float, Field(ge=0, le=253_402_300_799_000)]


SessionId = Annotated[str, Field(min_length=1, max_length=200)]


class SubmitBody(RequestModel):
    tool_id: Id
    conversation_id: Id | SkipJsonSchema[None] = None
    session_id: SessionId | SkipJsonSchema[None] = None
    form_data: dict[str, Any]
    fields_completed: Annotated[list[Annotated[str, Field(max_length=200)]], Field(max_length=200)]
    impression_at: EpochMs | SkipJsonSchema[None] = None
    started_at: EpochMs | SkipJsonSchema[None] = None
    trigger_id: Id | SkipJsonSchema[None] = Field(
        None,
        description="the widget trigger that showed the form (analytics); kept when it is"
        " one of the agent's triggers",
    )

    nullable = frozenset({"conversationId", "sessionId", "impressionAt", "startedAt", "triggerId"})


class ClientResultBody(RequestModel):
    submission_id: Id
    success: bool
    message: Annotated[str, Field(max_length=2000)] | SkipJsonSchema[None] = None
    data: dict[str, Any] | SkipJsonSchema[None] = None
    session_id: SessionId | SkipJsonSchema[None] = None

    nullable = frozenset({"message", "data", "sessionId"})


class EventBody(RequestModel):
    tool_id: Id
    event_type: Literal["impression", "started"]
    session_id: Annotated[str, Field(max_length=200)] | SkipJsonSchema[None] = None

    nullable = frozenset({"sessionId"})


class FormQuery(QueryModel):
    agent_id: str | None = Field(None, min_length=1, max_length=100)


class ListQuery(QueryModel):
    status: Status | None = None
    agent_id: str | None = Field(None, min_length=1, max_length=100)
    tool_id: str | None = Field(None, min_length=1, max_length=100)
    limit: int = Field(20, ge=1, le=100)
    offset: int = Field(0, ge=0, le=10**12)
    # `nextCursor` of the previous page: the page after it at any depth (offset unused).
    cursor: str | None = Field(None, min_length=1, max_length=MAX_CURSOR_LENGTH)


class AnalyticsQuery(QueryModel):
    agent_id: str = Field(min_length=1, max_length=100)


class PublicForm(ResponseModel):
    tool_id: str
    tool_name: str
    form_schema: dict[str, Any]
    execution_mode: str
    client_handler: str | None


class WebhookResult(ResponseModel):
    success: bool
    error: str | None


class PostActionResult(ResponseModel):
    type: Literal["webhook", "team_chat", "email"]
    success: bool
    error: str | None


class SubmitResult(ResponseModel):
    success: bool
    submission_id: str
    status: Status
    execution_mode: str
    webhook_result: WebhookResult | None
    post_action_results: list[PostActionResult]
    client_handler: str | None


class Success(ResponseModel):
    success: bool


class SubmissionOut(ResponseModel):
    id: str
    tool_id: str
    tool_name: str
    agent_id: str
    conversation_id: str | None
    form_data: dict[str, Any]
    fields_completed: list[str]
    status: Status
    execution_mode: str
    webhook_attempts: int
    last_error: str | None
    client_result: dict[str, Any] | None
    created_at: str
    updated_at: str


class Pagination(ResponseModel):
    total: int
    limit: int
    offset: int
    next_cursor: str | None  # pass as `cursor` for the next page; null on the last


class SubmissionList(ResponseModel):
    submissions: list[SubmissionOut]
    pagination: Pagination


class AttemptOut(ResponseModel):
    attempt: int
    started_at: str
    status_code: int | None
    latency_ms: int
    success: bool
    error: str | None
    response_body: str | None


class DeliveryOut(ResponseModel):
    id: str
    type: Literal["webhook", "post_action"]
    action_type: Literal["webhook", "team_chat", "email"]
    position: int
    target: str
    webhook_id: str
    status: Literal["pending", "success", "failed"]
    attempts: int
    next_attempt_at: str | None
    last_error: str | None
    completed_at: str | None
    log: list[AttemptOut]


class SubmissionDetail(SubmissionOut):
    deliveries: list[DeliveryOut]


class AnalyticsEntry(ResponseModel):
    tool_id: str
    tool_name: str
    impressions: int
    started: int
    submitted: int
    successful: int
    failed: int
    conversion_rate: float
    completion_rate: float
    field_completion_rates: dict[str, float]


class Analytics(ResponseModel):
    analytics: list[AnalyticsEntry]


def _outcome_json(outcome: Outcome) -> dict:
    return {"success": outcome.success, "error": outcome.error}


def submission_json(sub: Submission) -> dict:
    return {
        "id": sub.id,
        "toolId": sub.tool_id,
        "toolName": sub.tool_name,
        "agentId": sub.agent_id,
        "conversationId": sub.conversation_id,
        "formData": sub.form_data,
        "fieldsCompleted": sub.fields_completed,
        "status": sub.status,
        "executionMode": sub.execution_mode,
        "webhookAttempts": sub.webhook_attempts,
        "lastError": sub.last_error,
        "clientResult": sub.client_result,
        "createdAt": sub.created_at,
        "updatedAt": sub.updated_at,
    }


_ACTION_TYPES = {"webhook": "webhook", "post_webhook": "webhook", "team_chat": "team_chat"}


def _delivery_json(d: Delivery, attempts: list[Attempt]) -> dict:
    target = d.spec.get("url") or ", ".join(d.spec.get("recipientIds") or [])
    return {
        "id": d.id,
        "type": "webhook" if d.kind == "webhook" else "post_action",
        "actionType": _ACTION_TYPES.get(d.kind, "email"),
        "position": d.position,
        "target": target,
        "webhookId": d.webhook_id,
        "status": d.status,
        "attempts": d.attempts,
        "nextAttemptAt": d.next_attempt_at if d.status == "pending" else None,
        "lastError": d.last_error,
        "completedAt": d.completed_at,
        "log": [attempt_json(a) for a in attempts if a.delivery_id == d.id],
    }


def attempt_json(a: Attempt) -> dict[str, Any]:
    """One attempt of a delivery (form webhooks and event webhooks alike)."""
    return {
        "attempt": a.attempt,
        "startedAt": a.started_at,
        "statusCode": a.status_code,
        "latencyMs": a.latency_ms,
        "success": a.success,
        "error": a.error,
        "responseBody": a.response_body,
    }


def detail_json(detail: form_submissions.SubmissionDetail) -> dict:
    return {
        **submission_json(detail.submission),
        "deliveries": [_delivery_json(d, detail.attempts) for d in detail.deliveries],
    }


async def _limit_submit(request: web.Request, principal: Principal | None) -> None:
    """Public submits are limited per IP before their (up to 25 MB) body is read; a key's
    calls count against its team's plan instead."""
    if principal is None:
        per_minute = _forms(request.app).config.submits_per_minute
        message = f"More than {per_minute} form requests per minute"
        await take_token(request, f"form-submit:ip:{request.remote}", per_minute, message)


async def _limit_event(request: web.Request, session_id: str | None) -> None:
    """Form analytics events are limited per IP and per session, like trigger events."""
    per_minute = _forms(request.app).config.events_per_minute
    message = f"More than {per_minute} form requests per minute"
    await take_token(request, f"form-event:ip:{request.remote}", per_minute, message)
    if session_id:
        await take_token(request, f"form-event:session:{session_id}", per_minute, message)


# GET /triggers/form/... lives here: it is the form's public face. This table is placed
# before the triggers table so the fixed path wins over `/triggers/{id}`.
@routes.get(
    "/triggers/form/{toolIdOrName}",
    query=FormQuery,
    response=PublicForm,
    auth="optional",  # public; a caller's key or session lets a name go without agentId
    cors=True,
    errors=(400, 404),
    tag="triggers",
)
async def get_public_form(call: Call):
    """Get an enabled form tool for the widget (by id, or by name with agentId)."""
    query: FormQuery = call.query
    team_id = call.principal.team_id if call.principal else None
    tool = await _forms(call.app).public_form(call.params["toolIdOrName"], query.agent_id, team_id)
    mode = tool.form_execution_mode or "webhook"
    return json_response(
        {
            "toolId": tool.id,
            "toolName": tool.name,
            "formSchema": tool.form_schema,
            "executionMode": mode,
            "clientHandler": tool.form_client_handler if mode in ("client", "both") else None,
        }
    )


@routes.post(
    "/form-submissions/submit",
    body=SubmitBody,
    response=SubmitResult,
    auth="optional",
    cors=True,
    errors=(400, 404, 408, 413, 429, 503),
    max_body_mb=lambda settings: settings.server.submit_max_body_mb,
    precheck=_limit_submit,
    parse=parse_submit_body,
)
async def post_submission(call: Call):
    """Submit a form: stored with its deliveries, the webhook tried at once."""
    body: SubmitBody = call.body
    forms = _forms(call.app)
    stored = await forms.store_submission(
        SubmitInput(
            tool_id=body.tool_id,
            conversation_id=body.conversation_id,
            session_id=body.session_id,
            team_id=call.principal.team_id if call.principal else None,
            form_data=body.form_data,
            fields_completed=list(body.fields_completed),
            impression_at=body.impression_at,
            started_at=body.started_at,
            trigger_id=body.trigger_id,
        )
    )
    # The submitted values (files included) are on disk now: the next large body may be
    # read while the first attempts run.
    del body
    call.release_body()
    result = await forms.deliver_first(stored)
    sub = result.submission
    return json_response(
        {
            "success": True,
            "submissionId": sub.id,
            "status": result.status,
            "executionMode": sub.execution_mode,
            "webhookResult": _outcome_json(result.webhook) if result.webhook else None,
            "postActionResults": [
                {"type": kind, **_outcome_json(outcome)} for kind, outcome in result.post_actions
            ],
            "clientHandler": sub.client_handler,
        }
    )


@routes.post(
    "/form-submissions/client-result",
    body=ClientResultBody,
    response=Success,
    auth="optional",
    cors=True,
    errors=(400, 404, 409),
)
async def post_client_result(call: Call):
    """Report the outcome of the widget's client-side form handler."""
    body: ClientResultBody = call.body
    report = ClientReport(
        body.submission_id, body.success, body.message, body.data, body.session_id
    )
    await _forms(call.app).report_client_result(
        report, call.principal.team_id if call.principal else None
    )
    return json_response({"success": True})


@routes.post(
    "/form-submissions/event",
    body=EventBody,
    response=Success,
    auth="public",
    cors=True,
    status=202,
    errors=(400, 404, 429),
)
async def post_form_event(call: Call):
    """Count a form impression or start (analytics)."""
    body: EventBody = call.body
    await _limit_event(call.request, body.session_id)
    await _forms(call.app).record_event(body.tool_id, body.event_type, body.session_id)
    return json_response({"success": True}, status=202)


@routes.get("/form-submissions/analytics", query=AnalyticsQuery, response=Analytics, errors=(404,))
async def get_analytics(call: Call):
    """Form analytics of an agent: one entry per form tool."""
    query: AnalyticsQuery = call.query
    entries = await _forms(call.app).analytics(call.team_id, query.agent_id)
    return json_response({"analytics": entries})


@routes.get("/form-submissions", query=ListQuery, response=SubmissionList)
async def list_submissions(call: Call):
    """List the team's submissions, newest first."""
    query: ListQuery = call.query
    subs, total, more = await _forms(call.app).list_submissions(
        call.team_id,
        SubmissionQuery(
            status=query.status,
            agent_id=query.agent_id,
            tool_id=query.tool_id,
            limit=query.limit,
            offset=query.offset,
            after=decode_cursor(query.cursor),
        ),
    )
    return json_response(
        {
            "submissions": [submission_json(s) for s in subs],
            "pagination": {
                "total": total,
                "limit": query.limit,
                "offset": query.offset,
                "nextCursor": next_cursor(subs, more),
            },
        }
    )


@routes.get(f"/form-submissions/{{id:{SUBMISSION_ID}}}", response=SubmissionDetail, errors=(404,))
async def get_submission(call: Call):
    """Get a submission with its deliveries and every attempt."""
    detail = await _forms(call.app).detail(call.team_id, call.params["id"])
    return json_response(detail_json(detail))


@routes.post(
    f"/form-submissions/{{id:{SUBMISSION_ID}}}/redeliver",
    response=SubmissionDetail,
    errors=(400, 404),
)
async def post_redeliver(call: Call):
    """Queue the failed deliveries of a submission again and try them now."""
    detail = await _forms(call.app).redeliver(call.team_id, call.params["id"])
    return json_response(detail_json(detail))


@routes.get(
    f"/form-submissions/{{id:{SUBMISSION_ID}}}/files/{{field}}",
    media_type="application/octet-stream",
    response_headers=("Content-Disposition",),
    errors=(404, 503),
)
async def get_submission_file(call: Call):
    """Download a file a visitor submitted in a form field, as an attachment with the name
    it was sent with."""
    found = await _forms(call.app).open_file(call.team_id, call.params["id"], call.params["field"])
    headers = {
        "Content-Type": served_type(found.content_type),
        "Content-Disposition": disposition(found.name),
        **SAFE_HEADERS,
    }
    return await send_stored(call.request, found.size, found.chunks, headers)
