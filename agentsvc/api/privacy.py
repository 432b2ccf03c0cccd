"""End users' data (owner only): export everything of one as JSON, or erase it."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from agentsvc.api import app_keys
from agentsvc.api.audit import actor_of
from agentsvc.api.models import QueryModel, ResponseModel
from agentsvc.api.routing import Call, RouteTable, envelope_response
from agentsvc.services.privacy import end_users
from agentsvc.services.privacy.service import PrivacyService

routes = RouteTable("privacy")


def _privacy(call: Call) -> PrivacyService:
    return call.app[app_keys.privacy_key]


REF_DESCRIPTION = (
    "the end user: the widget's userId, or an e-mail address (a reference with an @ is"
    " taken as an address unless `by` says otherwise); percent-encode it"
)


class RefQuery(QueryModel):
    by: Literal["userId", "email"] | None = Field(
        None, description="how to read the reference (default: an address when it holds @)"
    )


class ErasedCounts(ResponseModel):
    conversations: int
    messages: int
    conversation_events: int
    submissions: int
    files: int
    form_deliveries: int
    webhook_events: int
    webhook_deliveries: int
    form_events: int
    mails: int


class MatchedIdentifier(ResponseModel):
    type: Literal["userId", "email", "sessionId"]
    value: str
    verified: Literal["ref", "userToken", "userHash", "apiKey"] = Field(
        description="how the identifier was tied to the reference: `ref` is the reference"
        " itself (matched exactly where it is stored, verified or not); otherwise how the"
        " user of a conversation carrying both was verified"
    )


class ErasedOut(ResponseModel):
    ref: str
    by: Literal["userId", "email"]
    matched: list[MatchedIdentifier]
    deleted: ErasedCounts
    total: int


class ExportOut(ResponseModel):
    ref: str
    by: Literal["userId", "email"]
    exported_at: str
    user_ids: list[str]
    emails: list[str]
    matched: list[MatchedIdentifier]
    conversations: list[dict[str, Any]]
    submissions: list[dict[str, Any]]


def _ref(call: Call) -> end_users.EndUserRef:
    query: RefQuery = call.query
    return end_users.parse_ref(call.params["ref"], query.by)


@routes.delete(
    "/end-users/{ref}",
    query=RefQuery,
    response=ErasedOut,
    envelope=True,
    owner_only=True,
    errors=(403,),
    extra={"description": REF_DESCRIPTION},
)
async def delete_end_user(call: Call):
    """Erase everything of one end user in the team, and count it (owner only)."""
    ref = _ref(call)
    counts, matched = await _privacy(call).erase(actor_of(call), ref)
    return envelope_response(
        {
            "ref": ref.value,
            "by": ref.by,
            "matched": matched,
            "deleted": counts,
            "total": sum(counts.values()),
        }
    )


@routes.get(
    "/end-users/{ref}/export",
    query=RefQuery,
    response=ExportOut,
    envelope=True,
    owner_only=True,
    errors=(403,),
    extra={"description": REF_DESCRIPTION},
)
async def get_end_user_export(call: Call):
    """Everything of one end user in the team, as JSON (owner only)."""
    document = await _privacy(call).export(actor_of(call), _ref(call))
    return envelope_response(document)
