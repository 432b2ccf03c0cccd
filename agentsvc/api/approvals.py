"""Tool calls a person approves first: the team's list, one call, the live list of waiting
calls (SSE, for the inbox), and a member's decision (approve, maybe with an edited input,
or deny with a reason)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field
from pydantic.json_schema import SkipJsonSchema

from agentsvc.api import app_keys
from agentsvc.api.audit import CURSOR_PAGINATION_SCHEMA, actor_of
from agentsvc.api.cursors import MAX_CURSOR_LENGTH, decode_cursor, next_cursor
from agentsvc.api.models import NON_BLANK, QueryModel, RequestModel, ResponseModel
from agentsvc.api.progress_stream import progress_stream
from agentsvc.api.routing import Call, RouteTable, envelope_response
from agentsvc.api.streams import streaming_of
from agentsvc.services.approvals.service import ApprovalsService, Decision
from agentsvc.store.approvals import Approval

routes = RouteTable("approvals")

# Ids carry their prefix, so /approvals/events is never read as an approval's id.
APPROVAL_PATH = "/approvals/{id:apr_[A-Za-z0-9_-]+}"
Id = Annotated[str, Field(min_length=1, max_length=100)]


def _approvals(call: Call) -> ApprovalsService:
    return call.app[app_keys.approvals_key]


class ApprovalsQuery(QueryModel):
    status: Literal["pending", "approved", "denied", "expired"] | None = Field(
        None, description="only calls in this state (pending: the longest wait first)"
    )
    agent_id: Id | None = None
    conversation_id: Id | None = None
    limit: Annotated[int, Field(ge=1, le=100)] = 50
    cursor: Annotated[str, Field(min_length=1, max_length=MAX_CURSOR_LENGTH)] | None = Field(
        None, description="`pagination.nextCursor` of the previous page"
    )


class ApproveBody(RequestModel):
    input: dict[str, Any] | SkipJsonSchema[None] = Field(
        None,
        description="the input to run the tool with instead of the model's (checked against"
        " the tool's inputSchema); absent: the model's",
    )


class DenyBody(RequestModel):
    reason: Annotated[str, Field(min_length=1, max_length=1_000, pattern=NON_BLANK)] = Field(
        description="why, in a few words: the agent reads it and tells the visitor"
    )


class DecidedBy(ResponseModel):
    id: str | None
    name: str = Field(description="the member's name (empty when they have none)")


class ApprovalOut(ResponseModel):
    id: str
    status: Literal["pending", "approved", "denied", "expired"]
    agent_id: str
    agent_name: str
    conversation_id: str
    conversation_title: str
    tool_id: str | None
    tool_name: str
    tool_use_id: str
    input: dict[str, Any] = Field(description="the input the model gave")
    edited_input: dict[str, Any] | None = Field(
        description="the input a member approved instead (null: the model's ran)"
    )
    reason: str | None = Field(description="a denial's reason, or why the call expired")
    decided_by: DecidedBy | None = Field(description="null while pending and when expired")
    decided_at: str | None
    expires_at: str = Field(description="when a pending call is denied if nobody decides")
    ran_at: str | None = Field(description="when the approved call's tool began to run")
    output: Any = Field(description="what the tool gave (null until it ran)")
    is_error: bool | None
    created_at: str


def approval_json(found: Approval) -> dict[str, Any]:
    decided_by = None
    if found.decided_by is not None:
        decided_by = {"id": found.decided_by, "name": found.decided_by_name or ""}
    return {
        "id": found.id,
        "status": found.status,
        "agentId": found.agent_id,
        "agentName": found.agent_name,
        "conversationId": found.conversation_id,
        "conversationTitle": found.conversation_title,
        "toolId": found.tool_id,
        "toolName": found.tool_name,
        "toolUseId": found.tool_use_id,
        "input": found.input,
        "editedInput": found.edited_input,
        "reason": found.reason,
        "decidedBy": decided_by,
        "decidedAt": found.decided_at,
        "expiresAt": found.expires_at,
        "ranAt": found.ran_at,
        "output": found.output,
        "isError": found.is_error,
        "createdAt": found.created_at,
    }


@routes.get(
    "/approvals",
    query=ApprovalsQuery,
    response=list[ApprovalOut],
    envelope=True,
    errors=(400,),
    extra={"envelope_extra": {"properties_extra": {"pagination": CURSOR_PAGINATION_SCHEMA}}},
)
async def list_approvals(call: Call):
    """The team's tool calls that wait or waited for a person's approval (pending ones the
    longest wait first, the others newest first)."""
    query: ApprovalsQuery = call.query
    filters = {
        "status": query.status,
        "agent_id": query.agent_id,
        "conversation_id": query.conversation_id,
    }
    found, more = await _approvals(call).list(
        call.team_id, filters, decode_cursor(query.cursor), query.limit
    )
    return envelope_response(
        [approval_json(a) for a in found],
        pagination={"limit": query.limit, "nextCursor": next_cursor(found, more)},
    )


@routes.get(
    "/approvals/events",
    stream=True,
    extra={
        "description": "Server-Sent Events: `approvals` {approvals: [...]} with the team's"
        " pending calls (at most 100, the longest wait first) when the stream opens and each"
        " time they change; it closes after `[handoff] max_stream_seconds` (the client"
        " reconnects)."
    },
)
async def approval_events(call: Call):
    """Follow the team's pending approvals live (what the inbox shows)."""
    updates = _approvals(call).pending_updates(call.team_id)
    return await progress_stream(
        call,
        ({"approvals": [approval_json(a) for a in found]} async for found in updates),
        "approvals",
        # A live list like the inbox's: it lasts as long as the inbox's streams.
        max_seconds=streaming_of(call).handoff.max_stream_seconds,
    )


@routes.get(APPROVAL_PATH, response=ApprovalOut, envelope=True, errors=(404,))
async def get_approval(call: Call):
    """One tool call waiting, or that waited, for approval."""
    found = await _approvals(call).get(call.team_id, call.params["id"])
    return envelope_response(approval_json(found))


@routes.post(
    APPROVAL_PATH + "/approve",
    body=ApproveBody,
    response=ApprovalOut,
    envelope=True,
    errors=(400, 404, 409),
)
async def approve(call: Call):
    """Approve the call (any member): its tool runs, with `input` instead of the model's
    when given, and the agent's turn goes on. 409 when it was decided already or its time
    ran out."""
    body: ApproveBody = call.body
    decision = Decision(approve=True, edited_input=body.input)
    found = await _approvals(call).decide(actor_of(call), call.params["id"], decision)
    return envelope_response(approval_json(found))


@routes.post(
    APPROVAL_PATH + "/deny",
    body=DenyBody,
    response=ApprovalOut,
    envelope=True,
    errors=(400, 404, 409),
)
async def deny(call: Call):
    """Deny the call with a reason (any member): it does not run, and the agent reads the
    reason. 409 when it was decided already or its time ran out."""
    body: DenyBody = call.body
    decision = Decision(approve=False, reason=body.reason.strip())
    found = await _approvals(call).decide(actor_of(call), call.params["id"], decision)
    return envelope_response(approval_json(found))
