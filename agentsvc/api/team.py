"""Team endpoints (bare bodies): context, members, invitations, acceptance, removal."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import ConfigDict, Field
from pydantic.json_schema import SkipJsonSchema

from agentsvc.api import app_keys, auth
from agentsvc.api.audit import actor_of
from agentsvc.api.models import RequestModel, ResponseModel
from agentsvc.api.routing import Call, RouteTable, json_response
from agentsvc.api.session_auth import UserOut, limit_sign_in, user_json
from agentsvc.errors import ValidationFailed
from agentsvc.passwords import MAX_PASSWORD_LENGTH
from agentsvc.services.team import membership as team_service
from agentsvc.services.team.accounts import MAX_DISPLAY_NAME
from agentsvc.store.invitations import Invitation
from agentsvc.store.team import Member
from agentsvc.text_patterns import DISPLAY_NAME_PATTERN, SHOWN_DISPLAY_NAME_PATTERN

routes = RouteTable("team")

# A display name as accounts.display_name checks it, stated in the schema: at most 80
# characters, no control characters or line breaks; a required one shows some character.
OptionalDisplayName = Annotated[
    str, Field(max_length=MAX_DISPLAY_NAME, pattern=DISPLAY_NAME_PATTERN)
]
DisplayName = Annotated[
    str, Field(min_length=1, max_length=MAX_DISPLAY_NAME, pattern=SHOWN_DISPLAY_NAME_PATTERN)
]


# An invitation is mailed: the address leaves out the characters with a meaning in mail
# headers (RFC 5322's specials), which Python's email package cannot carry in `To` as
# typed ("a@[" fails there); control characters as for every address.
_MAILABLE_CHAR = r'[^@\s\u0000-\u001f\u007f-\u009f\u2028\u2029()<>\[\],;:\\"]'
MailableEmail = Annotated[
    str, Field(min_length=3, max_length=254, pattern=rf"^{_MAILABLE_CHAR}+@{_MAILABLE_CHAR}+$")
]


class InviteIn(RequestModel):
    email: MailableEmail
    role: Literal["member", "owner"] = "member"


class AcceptIn(RequestModel):
    token: Annotated[str, Field(min_length=1, max_length=200)]
    password: Annotated[str, Field(max_length=MAX_PASSWORD_LENGTH)] | SkipJsonSchema[None] = None
    name: OptionalDisplayName | SkipJsonSchema[None] = None


class MemberOut(ResponseModel):
    id: str
    member_id: str
    role: str
    email: str
    name: str
    created_at: str
    notify_handoffs: bool = Field(description="e-mailed when a visitor asks for a person")


class MemberPatch(RequestModel):
    # At least one of the two, in the document too, so schema-valid bodies are accepted.
    model_config = ConfigDict(json_schema_extra={"minProperties": 1})

    notify_handoffs: bool | SkipJsonSchema[None] = Field(
        None, description="e-mail me when a visitor asks for a person"
    )
    name: DisplayName | SkipJsonSchema[None] = Field(
        None,
        description="your display name: what visitors see of you (else the team's name)."
        f" Trimmed, 1 to {MAX_DISPLAY_NAME} characters, no control characters",
    )


class TeamContextOut(ResponseModel):
    role: str
    is_owner: bool
    owner: UserOut
    members: list[MemberOut]


class InvitationOut(ResponseModel):
    id: str
    email: str
    role: str
    status: str
    expires_at: str
    created_at: str


class AcceptedOut(ResponseModel):
    success: bool
    team_id: str
    role: str
    user: UserOut


class Success(ResponseModel):
    success: bool


def member_json(member: Member) -> dict:
    return {
        "id": member.user_id,
        "memberId": member.member_id,
        "role": member.role,
        "email": member.email,
        "name": member.name,
        "createdAt": member.created_at,
        "notifyHandoffs": bool(member.notify_handoffs),
    }


def invitation_json(invitation: Invitation) -> dict:
    return {
        "id": invitation.id,
        "email": invitation.email,
        "role": invitation.role,
        "status": invitation.status,
        "expiresAt": invitation.expires_at,
        "createdAt": invitation.created_at,
    }


@routes.get("/team/context", response=TeamContextOut)
async def get_team_context(call: Call):
    """The caller's role, the team's owner and its members."""
    assert call.principal is not None
    context = await team_service.team_context(call.app[app_keys.db_key], call.team_id)
    return json_response(
        {
            "role": call.principal.role,
            "isOwner": call.principal.is_owner,
            "owner": user_json(context.owner),
            "members": [member_json(m) for m in context.members],
        }
    )


@routes.get("/team/members", response=list[MemberOut])
async def get_team_members(call: Call):
    """Every member of the team, the owner first."""
    members = await team_service.list_members(call.app[app_keys.db_key], call.team_id)
    return json_response([member_json(m) for m in members])


@routes.post(
    "/team/invite",
    body=InviteIn,
    response=InvitationOut,
    status=201,
    owner_only=True,
    errors=(409,),
)
async def post_team_invite(call: Call):
    """Invite an address (owner only); it receives an e-mail with a link to accept."""
    assert call.principal is not None
    invitation = await team_service.invite(
        call.app[app_keys.db_key],
        call.app[app_keys.mailer_key],
        call.app[app_keys.settings_key],
        call.principal,
        call.body.email,
        call.body.role,
        actor_of(call),
    )
    return json_response(invitation_json(invitation), status=201)


@routes.get("/team/invitations", response=list[InvitationOut], owner_only=True)
async def get_team_invitations(call: Call):
    """The team's invitations, newest first, with their status (owner only)."""
    found = await team_service.list_invitations(call.app[app_keys.db_key], call.team_id)
    return json_response([invitation_json(i) for i in found])


@routes.delete(
    "/team/invitations/{id:inv_[A-Za-z0-9_-]+}",
    response=InvitationOut,
    owner_only=True,
    errors=(409,),
)
async def delete_team_invitation(call: Call):
    """Cancel a pending invitation (owner only); its link stops working."""
    invitation = await team_service.cancel_invitation(
        call.app[app_keys.db_key], call.team_id, call.params["id"], actor_of(call)
    )
    return json_response(invitation_json(invitation))


@routes.post(
    "/team/invitations/accept",
    auth="optional",
    body=AcceptIn,
    response=AcceptedOut,
    errors=(401, 403, 404, 409, 429),
    response_headers=("Set-Cookie",),
)
async def post_team_invitation_accept(call: Call):
    """Accept an invitation: signed in as the invited address, or with a password."""
    body: AcceptIn = call.body
    if call.principal is None:
        auth.refuse_foreign_origin(call.request)
    await limit_sign_in(call)
    db = call.app[app_keys.db_key]
    settings = call.app[app_keys.settings_key]
    accepted = await team_service.accept_invitation(
        db, settings, body.token, call.principal, body.password, body.name, call.request.remote
    )
    response = json_response(
        {
            "success": True,
            "teamId": accepted.team_id,
            "role": accepted.role,
            "user": user_json(accepted.user),
        }
    )
    principal = call.principal
    if principal is None:
        # The invitee is signed in, acting in the team just joined.
        signed_in = await team_service.sign_in_to_team(db, settings, accepted)
        auth.set_session_cookie(call.request, response, signed_in.token)
    elif principal.session_id is not None:
        await team_service.move_session(
            db, call.app[app_keys.key_resolver_key], principal.session_id, accepted.team_id
        )
    return response


@routes.delete("/team/members/{memberId}", response=Success, owner_only=True)
async def delete_team_member(call: Call):
    """Remove a member (owner only): their sessions and API keys lose the team at once."""
    await team_service.remove_member(
        call.app[app_keys.db_key],
        call.app[app_keys.key_resolver_key],
        call.team_id,
        call.params["memberId"],
        actor_of(call),
    )
    return json_response({"success": True})


@routes.patch(
    "/team/members/{memberId}", body=MemberPatch, response=MemberOut, errors=(400, 403, 404)
)
async def patch_team_member(call: Call):
    """Change your own display name or notification choices (memberId: yours, or `me`)."""
    assert call.principal is not None
    body: MemberPatch = call.body
    if body.name is None and body.notify_handoffs is None:
        raise ValidationFailed("name: give name or notifyHandoffs (or both)")
    member = await team_service.update_own_member(
        call.app[app_keys.db_key],
        call.team_id,
        call.principal.user_id,
        call.params["memberId"],
        notify_handoffs=body.notify_handoffs,
        name=body.name,
        actor=actor_of(call),
    )
    return json_response(member_json(member))
