"""Team membership: context, invitations (by e-mail, or a link the owner shares), acceptance
(in steps), removal, expiry.

An invitation's token is derived from the instance's secret key and the invitation's id
(`SecretBox.derive`), and only its hash is stored: the owner can read the link again while
the invitation is pending (to share it by hand when no mail leaves the server), and the
database alone never reveals it. A person who arrives through an invitation joins the
inviting team and gets no (empty) team of their own.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, replace

from agentsvc.config import Settings
from agentsvc.db import Database, Tx
from agentsvc.errors import Conflict, Forbidden, NotFound, Unauthorized, ValidationFailed
from agentsvc.ids import new_id, now_iso
from agentsvc.mail import UnsafeHeader, check_address
from agentsvc.passwords import MIN_PASSWORD_LENGTH, hash_password_async, verify_password_async
from agentsvc.services import audit, changes
from agentsvc.services.audit import Actor
from agentsvc.services.team.access import Principal
from agentsvc.services.team.accounts import display_name
from agentsvc.services.team.sessions import SignedIn, hash_token, normalise_email, start_session
from agentsvc.store import accounts, api_keys, invitations, sessions
from agentsvc.store import team as team_store
from agentsvc.store.accounts import Team, User
from agentsvc.store.invitations import Invitation
from agentsvc.store.team import Member

log = logging.getLogger(__name__)

ACCEPT_PATH = "/accept-invitation"


def token_context(invitation_id: str) -> str:
    """What an invitation's token is derived from (with the instance's secret key)."""
    return f"invitation:{invitation_id}"


def accept_link(settings: Settings, token: str) -> str:
    """The address an invitee opens to accept."""
    return f"{settings.server.public_url.rstrip('/')}{ACCEPT_PATH}?token={token}"


@dataclass(frozen=True, slots=True)
class TeamContext:
    team: Team
    owner: User
    members: list[Member]


@dataclass(frozen=True, slots=True)
class Accepted:
    """An accepted invitation: who joined which team with which role."""

    user: User
    team_id: str
    role: str


@dataclass(frozen=True, slots=True)
class Joined:
    """An accepted invitation, and the session started for an invitee who was not signed
    in (None for a signed-in caller, whose session moves to the team joined)."""

    accepted: Accepted
    signed_in: SignedIn | None


@dataclass(frozen=True, slots=True)
class Invitee:
    """The invitation's id, whom it is for, as what, and its time and expiry."""

    id: str
    email: str
    role: str
    now: str
    expires_at: str


@dataclass(frozen=True, slots=True)
class Invited:
    """A stored invitation with the team and the member who sent it."""

    invitation: Invitation
    team: Team
    inviter: User


@dataclass(frozen=True, slots=True)
class InvitationAnswer:
    """What an invitee sends to accept: the link's token, and for a new account its
    password and name (an existing account proves itself with its password)."""

    token: str
    password: str | None = None
    name: str | None = None


@dataclass(frozen=True, slots=True)
class MemberChange:
    """What members change of their own membership (None: unchanged)."""

    notify_handoffs: bool | None = None
    name: str | None = None
    notify_browser: bool | None = None  # the desk's browser notifications, and its sound
    notify_sound: bool | None = None


async def team_context(db: Database, team_id: str) -> TeamContext:
    """The team, its owner and its members."""
    team = await accounts.get_team(db.reader, team_id)
    assert team is not None  # a principal's team exists
    owner = await accounts.get_user(db.reader, team.owner_user_id)
    assert owner is not None
    return TeamContext(team, owner, await team_store.list_members(db.reader, team_id))


async def list_members(db: Database, team_id: str) -> list[Member]:
    """The team's members, owner first."""
    return await team_store.list_members(db.reader, team_id)


def _one_line(text: str) -> str:
    # Names go into a mail subject: no line break or control character gets through.
    return " ".join("".join(c if c.isprintable() else " " for c in text).split())


def mailable_address(email: str) -> str:
    """The invitee's address, normalised; refused before anything is stored when it cannot
    be sent to."""
    email = normalise_email(email)
    try:
        check_address(email)
    except UnsafeHeader as exc:
        raise ValidationFailed(f"email: {exc.args[0].removeprefix('to: ')}") from None
    return email


async def insert_invitation(
    tx: Tx, principal: Principal, invitee: Invitee, token_hash: str, actor: Actor | None
) -> Invited:
    """Store a pending invitation in the inviter's team (replacing an earlier pending one
    for the address) and record it; Conflict when the address is already a member."""
    existing = await accounts.get_user_by_email(tx, invitee.email)
    if existing and await team_store.is_member(tx, principal.team_id, existing.id):
        raise Conflict("email: already a member of this team")
    team = await accounts.get_team(tx, principal.team_id)
    inviter = await accounts.get_user(tx, principal.user_id)
    assert team is not None and inviter is not None
    await invitations.cancel_pending_for_email(tx, team.id, invitee.email, invitee.now)
    invitation = Invitation(
        id=invitee.id,
        team_id=team.id,
        email=invitee.email,
        role=invitee.role,
        status="pending",
        invited_by_user_id=inviter.id,
        created_at=invitee.now,
        updated_at=invitee.now,
        expires_at=invitee.expires_at,
    )
    await invitations.insert(tx, invitation, token_hash)
    await audit.record_in(
        tx,
        actor,
        "member.invited",
        target_type="invitation",
        target_id=invitation.id,
        label=invitee.email,
        details={"role": invitee.role},
    )
    return Invited(invitation, team, inviter)


def invitation_mail(invited: Invited, link: str, ttl_seconds: float) -> tuple[str, str]:
    """The invitation e-mail's subject and text."""
    inviter, invitation = invited.inviter, invited.invitation
    inviter_label = _one_line(
        f"{inviter.name} <{inviter.email}>" if inviter.name else inviter.email
    )
    team_name = _one_line(invited.team.name)
    days = ttl_seconds / 86400
    lasts = f"{days:g} days" if days >= 1 else f"{ttl_seconds:g} seconds"
    return (
        f"You are invited to join {team_name} on agentsvc"[:200],
        f"{inviter_label} invited you to join the team {team_name} as {invitation.role}.\n\n"
        f"Accept the invitation here:\n\n{link}\n\n"
        f"The link works once and expires in {lasts} (at {invitation.expires_at}).\n",
    )


def as_read(invitation: Invitation, now: str) -> Invitation:
    """The invitation as it stands at `now`: a pending one past its expiry is `expired`
    at once, whether or not the expiry job has marked it yet."""
    if invitation.status == "pending" and invitation.expires_at <= now:
        return replace(invitation, status="expired")
    return invitation


async def list_invitations(db: Database, team_id: str) -> list[Invitation]:
    """The team's invitations, newest first, whatever their status."""
    now = now_iso()
    return [as_read(i, now) for i in await invitations.list_for_team(db.reader, team_id)]


async def cancel_invitation(
    db: Database, team_id: str, invitation_id: str, actor: Actor | None = None
) -> Invitation:
    """Cancel a pending invitation; its link stops working."""
    async with db.write() as tx:
        now = now_iso()
        found = await invitations.get(tx, team_id, invitation_id)
        if found is None:
            raise NotFound("Invitation not found")
        invitation = as_read(found, now)
        if invitation.status != "pending":
            raise Conflict(f"id: the invitation is {invitation.status}, not pending")
        if not await invitations.transition(tx, invitation.id, "cancelled", now):
            raise Conflict(f"id: the invitation is {invitation.status}, not pending")
        cancelled = await invitations.get(tx, team_id, invitation_id)
        await audit.record_in(
            tx,
            actor,
            "invitation.cancelled",
            target_type="invitation",
            target_id=invitation.id,
            label=invitation.email,
        )
    assert cancelled is not None
    return cancelled


async def _expire(db: Database, invitation: Invitation) -> None:
    async with db.write() as tx:
        await invitations.transition(tx, invitation.id, "expired", now_iso())


async def pending_invitation(db: Database, token: str) -> Invitation:
    """The pending invitation of a token; NotFound, or Conflict once expired (it is marked
    so) or no longer pending."""
    invitation = await invitations.get_by_token(db.reader, hash_token(token))
    if invitation is None:
        raise NotFound("Invitation not found")
    if invitation.status == "pending" and invitation.expires_at <= now_iso():
        await _expire(db, invitation)
        raise Conflict("token: the invitation has expired")
    if invitation.status != "pending":
        raise Conflict(f"token: the invitation is {invitation.status}")
    return invitation


async def accepting_user(
    db: Database, invitation: Invitation, principal: Principal | None, password: str | None
) -> tuple[User | None, str | None]:
    """Who accepts: the signed-in user (at the invited address), or the invitee's account
    proven by its password; else no user yet, and the hash of the new account's password.
    """
    if principal is not None:
        user = await accounts.get_user(db.reader, principal.user_id)
        assert user is not None
        if normalise_email(user.email) != normalise_email(invitation.email):
            raise Forbidden("This invitation is for another e-mail address")
        return user, None
    user = await accounts.get_user_by_email(db.reader, invitation.email)
    if user is not None:
        if not await verify_password_async(user.password_hash, password or ""):
            raise Unauthorized("An account with this address exists: sign in, or give its password")
        return user, None
    if password is None:
        raise ValidationFailed("password: is required to create your account")
    if len(password) < MIN_PASSWORD_LENGTH:
        raise ValidationFailed(f"password: must be at least {MIN_PASSWORD_LENGTH} characters")
    return None, await hash_password_async(password)


async def claim(tx: Tx, invitation: Invitation, now: str) -> None:
    """Mark the invitation accepted; Conflict when it expired or was used meanwhile
    (pending and unexpired, checked again where it counts: in the accepting write)."""
    if invitation.expires_at <= now:
        await invitations.transition(tx, invitation.id, "expired", now)
        accepted = False
    else:
        accepted = await invitations.transition(tx, invitation.id, "accepted", now)
    if not accepted:
        current = await invitations.get(tx, invitation.team_id, invitation.id)
        status = current.status if current else "gone"
        raise Conflict(f"token: the invitation is {status}")


async def new_member_account(
    tx: Tx, email: str, name: str, password_hash: str | None, now: str
) -> User:
    """The account of a person who arrives through an invitation: a user with no team of
    their own (the invitation's team is the one they join)."""
    return await accounts.insert_user(
        tx, id=new_id("user"), email=email, name=name, password_hash=password_hash, now=now
    )


async def join_on_sign_up(tx: Tx, email: str, name: str, now: str) -> tuple[User, str] | None:
    """A person signing up with a verified address that has a pending invitation (the
    newest, if several): their account, joined to that team; None when none is pending."""
    pending = await invitations.pending_for_email(tx, email, now)
    if not pending:
        return None
    invitation = pending[0]
    await claim(tx, invitation, now)
    user = await new_member_account(tx, email, name, None, now)
    await join(tx, invitation, user, Actor(user.id, invitation.team_id))
    return user, invitation.team_id


async def named(tx: Tx, user: User, name: str, now: str) -> User:
    """An existing account without a name takes the one given on accepting."""
    if name and not user.name:
        await accounts.set_name(tx, user.id, name, now)
        return replace(user, name=name)
    return user


async def join(tx: Tx, invitation: Invitation, user: User, joined: Actor) -> str:
    """Add the user to the invited team and record it; return the member's role."""
    await team_store.add_membership(
        tx,
        id=new_id("membership"),
        team_id=invitation.team_id,
        user_id=user.id,
        role=invitation.role,
        now=now_iso(),  # after any team of the user's own: the invited team is the latest
    )
    role = await accounts.get_role(tx, invitation.team_id, user.id)
    await audit.record_in(
        tx,
        joined,
        "member.joined",
        target_type="member",
        target_id=user.id,
        label=user.email,
        details={"role": role or invitation.role, "invitationId": invitation.id},
    )
    return role or invitation.role


async def update_own_member(
    db: Database,
    caller: Principal,
    member_ref: str,
    change: MemberChange,
    actor: Actor | None = None,
) -> Member:
    """Change the caller's own membership: whether they are e-mailed about handoffs, and
    their display name (what visitors see of them; it is the user's, in every team)."""
    team_id, caller_id = caller.team_id, caller.user_id
    notify_handoffs, name = change.notify_handoffs, change.name
    if name is not None:
        name = display_name(name)
    async with db.write() as tx:
        member = await team_store.find_member(
            tx, team_id, caller_id if member_ref == "me" else member_ref
        )
        if member is None:
            raise NotFound("Member not found")
        if member.user_id != caller_id:
            raise Forbidden("Members choose their own notifications and name")
        if notify_handoffs is not None:
            await team_store.set_notify_handoffs(tx, team_id, caller_id, notify_handoffs)
        await team_store.set_desk_notifications(
            tx, team_id, caller_id, change.notify_browser, change.notify_sound
        )
        if name is not None and name != member.name:
            await accounts.set_name(tx, caller_id, name, now_iso())
            await audit.record_in(
                tx,
                actor,
                "member.renamed",
                target_type="member",
                target_id=member.member_id,
                label=name,
                details={"userId": member.user_id, "from": member.name, "to": name},
            )
        found = await team_store.find_member(tx, team_id, caller_id)
    assert found is not None
    return found


async def rename_team(db: Database, team_id: str, name: str, actor: Actor | None = None) -> Team:
    """Rename the team (the owner's call): trimmed, 1 to 80 characters, no control
    characters; recorded in the audit log."""
    name = display_name(name)
    async with db.write() as tx:
        team = await accounts.get_team(tx, team_id)
        assert team is not None  # a principal's team exists
        if name != team.name:
            await accounts.set_team_name(tx, team_id, name, now_iso())
            await audit.record_in(
                tx,
                actor,
                "team.renamed",
                target_type="team",
                target_id=team_id,
                label=name,
                details={"from": team.name, "to": name},
            )
        renamed = await accounts.get_team(tx, team_id)
    assert renamed is not None
    await db.announce(changes.PRINCIPALS)  # sessions show the team's name
    return renamed


async def remove_member(
    db: Database, team_id: str, member_id: str, actor: Actor | None = None
) -> Member:
    """Remove a member: membership, sessions in the team and API keys go at once."""
    async with db.write() as tx:
        member = await team_store.get_member(tx, team_id, member_id)
        if member is None:
            raise NotFound("Member not found")
        team = await accounts.get_team(tx, team_id)
        assert team is not None
        if member.user_id == team.owner_user_id:
            raise Forbidden("The team owner cannot be removed")
        await team_store.delete_membership(tx, team_id, member_id)
        await sessions.delete_for_member(tx, team_id, member.user_id)
        await api_keys.revoke_for_member(tx, team_id, member.user_id, now_iso())
        await audit.record_in(
            tx,
            actor,
            "member.removed",
            target_type="member",
            target_id=member.member_id,
            label=member.email,
            details={"userId": member.user_id, "role": member.role},
        )
    # Cached principals of that user would otherwise live on for a moment.
    await db.announce(changes.PRINCIPALS)
    return member


async def expire_invitations(db: Database) -> int:
    """Mark pending invitations past their time expired (the scheduler's job)."""
    async with db.write() as tx:
        count = await invitations.expire_due(tx, now_iso())
    if count:
        log.info("expired %d invitation(s)", count)
    return count


async def sign_in_to_team(db: Database, settings: Settings, accepted: Accepted) -> SignedIn:
    """Start a session for a user who just accepted, acting in the team joined."""
    async with db.write() as tx:
        return await start_session(tx, settings, accepted.user, accepted.team_id)


async def move_session(db: Database, session_id: str, team_id: str) -> None:
    """Make a session act in the team its user just joined."""
    async with db.write() as tx:
        await sessions.set_team(tx, session_id, team_id)
    await db.announce(changes.PRINCIPALS)
