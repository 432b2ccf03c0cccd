"""Team endpoints (bare bodies): context, members, invitations, acceptance, removal."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import ConfigDict, Field
from pydantic.json_schema import SkipJsonSchema

from agentsvc.api import app_keys, auth
from agentsvc.api.audit import actor_of
from agentsvc.api.conversations import avatar_url, public_origin
from agentsvc.api.models import RequestModel, ResponseModel
from agentsvc.api.routing import Call, RouteTable, json_response
from agentsvc.api.session_auth import UserOut, limit_sign_in, user_json
from agentsvc.errors import ValidationFailed
from agentsvc.input_types import MAX_DISPLAY_NAME, DisplayName, OptionalDisplayName
from agentsvc.passwords import MAX_PASSWORD_LENGTH
from agentsvc.services.team.membership import InvitationAnswer, MemberChange
from agentsvc.services.team.service import Shared, TeamService
from agentsvc.store.team import Member

routes = RouteTable("team")


def _team(call: Call) -> TeamService:
    return call.app[app_keys.team_key]


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
    notify_browser: bool = Field(description="the desk notifies in the browser")
    notify_sound: bool = Field(description="the desk's notifications play a sound")
    avatar_url: str | None = Field(description="the member's picture (null without one)")


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
    notify_browser: bool | SkipJsonSchema[None] = Field(
        None, description="notify me in the browser of new waiting conversations"
    )
    notify_sound: bool | SkipJsonSchema[None] = Field(
        None, description="play a sound with the desk's notifications"
    )


class TeamPatch(RequestModel):
    name: DisplayName = Field(
        description=f"the team's name: trimmed, 1 to {MAX_DISPLAY_NAME} characters, no control"
        " characters (visitors see it for a member without a display name)"
    )


class TeamOut(ResponseModel):
    id: str
    name: str
    plan: str
    created_at: str


class TeamContextOut(ResponseModel):
    role: str
    is_owner: bool
    owner: UserOut
    members: list[MemberOut]
    public_url: str = Field(
        description="the server's public address: links, and the addresses to paste into an"
        " identity provider, are made on it"
    )


class InvitationOut(ResponseModel):
    id: str
    email: str
    role: str
    status: str
    expires_at: str
    created_at: str
    link: str | None = Field(
        description="the link to accept, while the invitation is pending (null after): the"
        " owner can share it by hand, for example when no mail leaves the server. It works"
        " once, for the invited address"
    )


class AcceptedOut(ResponseModel):
    success: bool
    team_id: str
    role: str
    user: UserOut


class Success(ResponseModel):
    success: bool


def member_json(member: Member, origin: str) -> dict:
    return {
        "id": member.user_id,
        "memberId": member.member_id,
        "role": member.role,
        "email": member.email,
        "name": member.name,
        "createdAt": member.created_at,
        "notifyHandoffs": bool(member.notify_handoffs),
        "notifyBrowser": bool(member.notify_browser),
        "notifySound": bool(member.notify_sound),
        "avatarUrl": avatar_url(origin, member.avatar_id),
    }


def invitation_json(shared: Shared) -> dict:
    invitation = shared.invitation
    return {
        "id": invitation.id,
        "email": invitation.email,
        "role": invitation.role,
        "status": invitation.status,
        "expiresAt": invitation.expires_at,
        "createdAt": invitation.created_at,
        "link": shared.link,
    }


@routes.get("/team/context", response=TeamContextOut)
async def get_team_context(call: Call):
    """The caller's role, the team's owner and its members."""
    assert call.principal is not None
    context = await _team(call).context(call.team_id)
    origin = public_origin(call)
    return json_response(
        {
            "role": call.principal.role,
            "isOwner": call.principal.is_owner,
            "owner": user_json(context.owner),
            "members": [member_json(m, origin) for m in context.members],
            "publicUrl": origin,
        }
    )


@routes.get("/team/members", response=list[MemberOut])
async def get_team_members(call: Call):
    """Every member of the team, the owner first."""
    members = await _team(call).members(call.team_id)
    origin = public_origin(call)
    return json_response([member_json(m, origin) for m in members])


@routes.post(
    "/team/invite",
    body=InviteIn,
    response=InvitationOut,
    status=201,
    owner_only=True,
    errors=(409,),
)
async def post_team_invite(call: Call):
    """Invite an address (owner only); it receives an e-mail with a link to accept, which
    the answer carries too."""
    assert call.principal is not None
    invitation = await _team(call).invite(
        call.principal, call.body.email, call.body.role, actor_of(call)
    )
    return json_response(invitation_json(invitation), status=201)


@routes.get("/team/invitations", response=list[InvitationOut], owner_only=True)
async def get_team_invitations(call: Call):
    """The team's invitations, newest first, with their status and, while pending, their
    link (owner only)."""
    found = await _team(call).invitations(call.team_id)
    return json_response([invitation_json(i) for i in found])


@routes.delete(
    "/team/invitations/{id:inv_[A-Za-z0-9_-]+}",
    response=InvitationOut,
    owner_only=True,
    errors=(409,),
)
async def delete_team_invitation(call: Call):
    """Cancel a pending invitation (owner only); its link stops working."""
    invitation = await _team(call).cancel_invitation(
        call.team_id, call.params["id"], actor_of(call)
    )
    return json_response(invitation_json(Shared(invitation, None)))


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
    answer = InvitationAnswer(body.token, body.password, body.name)
    joined = await _team(call).accept_invitation(answer, call.principal, call.request.remote)
    accepted = joined.accepted
    response = json_response(
        {
            "success": True,
            "teamId": accepted.team_id,
            "role": accepted.role,
            "user": user_json(accepted.user),
        }
    )
    if joined.signed_in is not None:
        auth.set_session_cookie(call.request, response, joined.signed_in.token)
    return response


@routes.delete("/team/members/{memberId}", response=Success, owner_only=True)
async def delete_team_member(call: Call):
    """Remove a member (owner only): their sessions and API keys lose the team at once."""
    await _team(call).remove_member(call.team_id, call.params["memberId"], actor_of(call))
    return json_response({"success": True})


@routes.patch(
    "/team/members/{memberId}", body=MemberPatch, response=MemberOut, errors=(400, 403, 404)
)
async def patch_team_member(call: Call):
    """Change your own display name or notification choices (memberId: yours, or `me`)."""
    assert call.principal is not None
    body: MemberPatch = call.body
    if not body.given():
        raise ValidationFailed("name: give name, notifyHandoffs, notifyBrowser or notifySound")
    change = MemberChange(
        notify_handoffs=body.notify_handoffs,
        name=body.name,
        notify_browser=body.notify_browser,
        notify_sound=body.notify_sound,
    )
    member = await _team(call).update_own_member(
        call.principal, call.params["memberId"], change, actor_of(call)
    )
    return json_response(member_json(member, public_origin(call)))


@routes.patch("/team", body=TeamPatch, response=TeamOut, owner_only=True, errors=(400,))
async def patch_team(call: Call):
    """Rename the team (owner only); recorded in the audit log."""
    team = await _team(call).rename_team(call.team_id, call.body.name, actor_of(call))
    return json_response(
        {"id": team.id, "name": team.name, "plan": team.plan, "createdAt": team.created_at}
    )
