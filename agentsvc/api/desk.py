"""Support desk endpoints: members' private notes, the team's canned responses, the inbox
list and reading a conversation, and who the visitor is."""

from __future__ import annotations

import base64
import binascii
from typing import Annotated, Literal

import orjson
from pydantic import ConfigDict, Field
from pydantic.json_schema import SkipJsonSchema

from agentsvc.api import app_keys
from agentsvc.api.conversations import (
    Assignee,
    NoteOut,
    Status,
    avatar_url,
    note_json,
    public_origin,
)
from agentsvc.api.cursors import MAX_CURSOR_LENGTH
from agentsvc.api.models import NON_BLANK, QueryModel, RequestModel, ResponseModel
from agentsvc.api.routing import Call, RouteTable, envelope_response, json_response
from agentsvc.errors import ValidationFailed
from agentsvc.services.agents import identity as identity_service
from agentsvc.services.desk.canned import MAX_PER_TEAM, CannedChange
from agentsvc.services.desk.service import DeskService
from agentsvc.store.canned_responses import CannedResponse
from agentsvc.store.conversations import Conversation
from agentsvc.store.inbox import InboxQuery, InboxRow
from agentsvc.text_patterns import SHORTCUT_PATTERN

routes = RouteTable("desk")


def _desk(call: Call) -> DeskService:
    return call.app[app_keys.desk_key]


async def _team_conversation(call: Call) -> Conversation:
    return await _desk(call).conversation(call.team_id, call.params["id"])


class NoteBody(RequestModel):
    content: Annotated[str, Field(min_length=1, max_length=20_000, pattern=NON_BLANK)]


@routes.post(
    "/conversations/{id}/notes",
    body=NoteBody,
    response=NoteOut,
    envelope=True,
    status=201,
    errors=(400, 404),
)
async def post_note(call: Call):
    """Add a private note for the team: never shown to the visitor nor given to the model."""
    conv = await _team_conversation(call)
    assert call.principal is not None
    note = await _desk(call).add_note(conv, call.principal.user_id, call.body.content)
    return envelope_response(note_json(note, public_origin(call)), status=201)


# ── the inbox ──────────────────────────────────────────────────────────────────────────


class InboxParams(QueryModel):
    view: Literal["mine", "unassigned", "waiting", "all"] = Field(
        "all",
        description="mine: assigned to you and not closed; unassigned: waiting or with a"
        " person and nobody assigned; waiting: a person was asked for; all: waiting or with"
        " a person",
    )
    q: Annotated[str, Field(min_length=1, max_length=200)] | None = Field(
        None, description="words found in the title, the visitor's name or e-mail"
    )
    limit: Annotated[int, Field(ge=1, le=100)] = 50
    cursor: Annotated[str, Field(min_length=1, max_length=MAX_CURSOR_LENGTH)] | None = Field(
        None, description="`nextCursor` of the previous page"
    )


class InboxVisitor(ResponseModel):
    name: str | None
    email: str | None
    verified: bool = Field(description="the name and e-mail are vouched for")


class LastMessage(ResponseModel):
    preview: str = Field(description="the message's first 140 characters")
    author_type: Literal["visitor", "ai", "human"]
    created_at: str


class InboxItem(ResponseModel):
    id: str
    title: str
    agent_id: str
    agent_name: str
    status: Status
    assignee: Assignee | None
    visitor: InboxVisitor
    waiting_since: str | None = Field(description="when a person was asked for (or null)")
    last_message: LastMessage | None
    unread: int = Field(description="the visitor's messages since you last read it")
    updated_at: str


class ReadOut(ResponseModel):
    conversation_id: str
    unread: Literal[0]


def _encode_cursor(row: InboxRow) -> str:
    key = row.handoff_at if row.group == 0 else row.updated_at
    raw = orjson.dumps([row.group, key or "", row.id])
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _decode_cursor(cursor: str | None) -> tuple[int, str, str] | None:
    if cursor is None:
        return None
    try:
        key = orjson.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
    except (binascii.Error, ValueError):
        key = None
    if not (
        isinstance(key, list)
        and len(key) == 3
        and key[0] in (0, 1)
        and isinstance(key[1], str)
        and isinstance(key[2], str)
        and key[2]
    ):
        raise ValidationFailed("cursor: not a cursor returned by this API (use nextCursor)")
    return key[0], key[1], key[2]


def _author_type(row: InboxRow) -> str:
    if row.last_role == "user":
        return "visitor"
    return "ai" if row.last_author_id is None else "human"


def inbox_item_json(row: InboxRow, origin: str) -> dict:
    """One conversation as the inbox lists it."""
    assignee = None
    if row.assignee_id is not None:
        assignee = {
            "id": row.assignee_id,
            "name": row.assignee_name or "",
            "avatarUrl": avatar_url(origin, row.assignee_avatar_id),
        }
    last = None
    if row.last_created_at is not None:
        last = {
            "preview": row.last_preview or "",
            "authorType": _author_type(row),
            "createdAt": row.last_created_at,
        }
    return {
        "id": row.id,
        "title": row.title,
        "agentId": row.agent_id,
        "agentName": row.agent_name,
        "status": row.status,
        "assignee": assignee,
        "visitor": {
            "name": row.user_name,
            "email": row.user_email,
            "verified": identity_service.profile_verified(row.user_verified_by),
        },
        "waitingSince": row.handoff_at if row.status == "waiting" else None,
        "lastMessage": last,
        "unread": int(row.unread),
        "updatedAt": row.updated_at,
    }


NEXT_CURSOR_SCHEMA = {
    "nextCursor": {
        "type": ["string", "null"],
        "description": "Pass as `cursor` for the next page; null on the last page.",
    }
}


@routes.get(
    "/inbox",
    query=InboxParams,
    response=list[InboxItem],
    envelope=True,
    errors=(400,),
    extra={"envelope_extra": {"properties_extra": NEXT_CURSOR_SCHEMA}},
)
async def get_inbox(call: Call):
    """The team's inbox: waiting conversations, the longest wait first, then the rest by
    latest activity; with unread counts for the caller."""
    params: InboxParams = call.query
    assert call.principal is not None
    query = InboxQuery(
        call.team_id, call.principal.user_id, params.view, params.q, _decode_cursor(params.cursor)
    )
    rows, more = await _desk(call).inbox(query, params.limit)
    origin = public_origin(call)
    return envelope_response(
        [inbox_item_json(r, origin) for r in rows],
        nextCursor=_encode_cursor(rows[-1]) if more and rows else None,
    )


@routes.post("/conversations/{id}/read", response=ReadOut, envelope=True, errors=(404,))
async def post_read(call: Call):
    """Mark the conversation read by the caller (its unread count drops to 0)."""
    conv = await _team_conversation(call)
    assert call.principal is not None
    await _desk(call).mark_read(conv, call.principal.user_id)
    return envelope_response({"conversationId": conv.id, "unread": 0})


# ── canned responses ───────────────────────────────────────────────────────────────────

Shortcut = Annotated[str, Field(min_length=1, max_length=32, pattern=SHORTCUT_PATTERN)]
CannedTitle = Annotated[str, Field(min_length=1, max_length=80, pattern=NON_BLANK)]
CannedContent = Annotated[str, Field(min_length=1, max_length=5_000, pattern=NON_BLANK)]
CANNED_PATH = "/team/canned-responses/{id}"


class CannedIn(RequestModel):
    shortcut: Shortcut = Field(description="typed after `/` in a reply: a-z, 0-9, _ and -")
    title: CannedTitle
    content: CannedContent


class CannedPatch(RequestModel):
    model_config = ConfigDict(json_schema_extra={"minProperties": 1})

    shortcut: Shortcut | SkipJsonSchema[None] = None
    title: CannedTitle | SkipJsonSchema[None] = None
    content: CannedContent | SkipJsonSchema[None] = None


class CannedResponseOut(ResponseModel):
    id: str
    shortcut: str
    title: str
    content: str
    created_at: str
    updated_at: str


class Deleted(ResponseModel):
    success: bool


def canned_json(canned: CannedResponse) -> dict:
    return {
        "id": canned.id,
        "shortcut": canned.shortcut,
        "title": canned.title,
        "content": canned.content,
        "createdAt": canned.created_at,
        "updatedAt": canned.updated_at,
    }


@routes.get("/team/canned-responses", response=list[CannedResponseOut])
async def get_canned_responses(call: Call):
    """The team's canned responses, by shortcut (any member)."""
    found = await _desk(call).canned_responses(call.team_id)
    return json_response([canned_json(c) for c in found])


@routes.post(
    "/team/canned-responses",
    body=CannedIn,
    response=CannedResponseOut,
    status=201,
    errors=(403, 409),
    extra={
        "description": f"At most {MAX_PER_TEAM} per team (then 403"
        " CANNED_RESPONSE_LIMIT_REACHED); a shortcut the team has is 409 CONFLICT."
    },
)
async def post_canned_response(call: Call):
    """Add a canned response for the team (any member)."""
    body: CannedIn = call.body
    canned = await _desk(call).create_canned(
        call.team_id, CannedChange(body.shortcut, body.title, body.content)
    )
    return json_response(canned_json(canned), status=201)


@routes.patch(CANNED_PATH, body=CannedPatch, response=CannedResponseOut, errors=(404, 409))
async def patch_canned_response(call: Call):
    """Change a canned response's shortcut, title or content (any member)."""
    body: CannedPatch = call.body
    if body.shortcut is None and body.title is None and body.content is None:
        raise ValidationFailed("body: give shortcut, title or content")
    canned = await _desk(call).update_canned(
        call.team_id, call.params["id"], CannedChange(body.shortcut, body.title, body.content)
    )
    return json_response(canned_json(canned))


@routes.delete(CANNED_PATH, response=Deleted, errors=(404,))
async def delete_canned_response(call: Call):
    """Delete a canned response (any member)."""
    await _desk(call).delete_canned(call.team_id, call.params["id"])
    return json_response({"success": True})


# ── who the visitor is ──────────────────────────────────────────────────────────────────


class PreviousConversation(ResponseModel):
    id: str
    title: str
    status: Status
    created_at: str


class SubmissionRef(ResponseModel):
    id: str
    form_name: str
    created_at: str


class VisitorOut(ResponseModel):
    name: str | None
    email: str | None
    user_id: str | None
    verified: bool = Field(description="the name and e-mail are vouched for")
    verified_by: Literal["userToken", "userHash", "apiKey"] | None
    page_url: str | None = Field(description="the page the conversation started on")
    referrer: str | None
    language: str | None
    attributes: dict[str, str | float | bool] = Field(
        description="what the site gave identify, as declared (the latest ones)"
    )
    previous_conversations: list[PreviousConversation] = Field(
        description="at most 20, newest first: of the same verified user id, else of the"
        " same widget session"
    )
    submissions: list[SubmissionRef] = Field(
        description="at most 20, newest first: made in this or those conversations (or this"
        " widget session)"
    )


@routes.get("/conversations/{id}/visitor", response=VisitorOut, envelope=True, errors=(404,))
async def get_visitor(call: Call):
    """Who the visitor is: identity, page, language, attributes, other conversations and
    form submissions."""
    conv = await _team_conversation(call)
    panel = await _desk(call).visitor(conv)
    told = panel.told
    return envelope_response(
        {
            "name": conv.user_name,
            "email": conv.user_email,
            "userId": conv.user_ref,
            "verified": identity_service.profile_verified(conv.user_verified_by),
            "verifiedBy": conv.user_verified_by,
            "pageUrl": told.page_url,
            "referrer": told.referrer,
            "language": told.language,
            "attributes": told.attributes or {},
            "previousConversations": [
                {"id": c.id, "title": c.title, "status": c.status, "createdAt": c.created_at}
                for c in panel.previous
            ],
            "submissions": [
                {"id": s.id, "formName": s.form_name, "createdAt": s.created_at}
                for s in panel.submissions
            ],
        }
    )
