"""Support desk endpoints: members' private notes, the team's canned responses, the inbox
list and reading a conversation, and who the visitor is."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from agentsvc.api import app_keys
from agentsvc.api.conversations import NoteOut, note_json, public_origin
from agentsvc.api.models import NON_BLANK, RequestModel
from agentsvc.api.routing import Call, RouteTable, envelope_response
from agentsvc.services.desk.service import DeskService
from agentsvc.store.conversations import Conversation

routes = RouteTable("desk")


def _desk(call: Call) -> DeskService:
    return call.app[app_keys.desk_key]


async def _team_conversation(call: Call) -> Conversation:
    return await call.app[app_keys.handoff_key].for_team(call.team_id, call.params["id"])


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
