"""The team feature's service objects: the team (members, invitations, roles, display
names, the first owner), signing in (passwords, magic links, GitHub and Google, sessions)
and API keys. runtime.py builds each once with its collaborators; handlers call methods."""

from __future__ import annotations

from dataclasses import dataclass

import aiohttp

from agentsvc.config import Settings
from agentsvc.db import Database
from agentsvc.ids import new_id, now_iso
from agentsvc.mail import Mailer
from agentsvc.secretbox import SecretBox
from agentsvc.services.audit import Actor
from agentsvc.services.team import api_keys, avatars, first_owner, membership, oauth, sessions
from agentsvc.services.team.access import Principal
from agentsvc.services.team.accounts import CreatedKey, optional_display_name
from agentsvc.services.team.membership import (
    Accepted,
    InvitationAnswer,
    Invitee,
    Joined,
    MemberChange,
    TeamContext,
)
from agentsvc.services.team.sessions import SignedIn, after, hash_token
from agentsvc.services.team.trust import location_for
from agentsvc.storage import FileStore
from agentsvc.store import invitations as invitation_store
from agentsvc.store.accounts import Team
from agentsvc.store.api_keys import ApiKey
from agentsvc.store.avatars import Avatar
from agentsvc.store.invitations import Invitation
from agentsvc.store.team import Member


@dataclass(frozen=True, slots=True)
class Shared:
    """An invitation and the link to accept it (None once it is no longer pending, or
    when it was made under another secret key)."""

    invitation: Invitation
    link: str | None


class TeamService:
    """A team's members and invitations, and the instance's first owner."""

    def __init__(
        self, db: Database, mailer: Mailer, settings: Settings, box: SecretBox, files: FileStore
    ):
        self._db = db
        self._mailer = mailer
        self._settings = settings
        self._box = box
        self._files = files  # members' pictures

    async def context(self, team_id: str) -> TeamContext:
        """The team, its owner and its members."""
        return await membership.team_context(self._db, team_id)

    async def members(self, team_id: str) -> list[Member]:
        """The team's members, owner first."""
        return await membership.list_members(self._db, team_id)

    def _token(self, invitation_id: str) -> str:
        return self._box.derive(membership.token_context(invitation_id))

    async def invite(
        self, principal: Principal, email: str, role: str, actor: Actor | None = None
    ) -> Shared:
        """Invite an address to the team and e-mail it a link (returned too, for the owner
        to share by hand); an earlier pending one is replaced."""
        email = membership.mailable_address(email)
        ttl = self._settings.auth.invitation_ttl_seconds
        now = now_iso()
        invitee = Invitee(new_id("invitation"), email, role, now, after(ttl, now))
        token = self._token(invitee.id)
        async with self._db.write() as tx:
            invited = await membership.insert_invitation(
                tx, principal, invitee, hash_token(token), actor
            )
        link = membership.accept_link(self._settings, token)
        subject, text = membership.invitation_mail(invited, link, ttl)
        self._mailer.send_soon(email, subject, text)
        return Shared(invited.invitation, link)

    async def invitations(self, team_id: str) -> list[Shared]:
        """The team's invitations, newest first, whatever their status; the pending ones
        with their link."""
        found = await membership.list_invitations(self._db, team_id)
        hashes = await invitation_store.pending_token_hashes(self._db.reader, team_id)
        return [Shared(i, self._link(i, hashes.get(i.id))) for i in found]

    def _link(self, invitation: Invitation, stored_hash: str | None) -> str | None:
        # Only a token that still matches the stored hash is a working link (an invitation
        # made before tokens were derived, or under another secret key, has none).
        if invitation.status != "pending" or stored_hash is None:
            return None
        token = self._token(invitation.id)
        if hash_token(token) != stored_hash:
            return None
        return membership.accept_link(self._settings, token)

    async def cancel_invitation(
        self, team_id: str, invitation_id: str, actor: Actor | None = None
    ) -> Invitation:
        """Cancel a pending invitation; its link stops working."""
        return await membership.cancel_invitation(self._db, team_id, invitation_id, actor)

    async def accept_invitation(
        self, answer: InvitationAnswer, principal: Principal | None, ip: str | None = None
    ) -> Joined:
        """Accept an invitation for the signed-in user, or for the invitee's (new) account.

        Signed in, the user's address must be the invited one, and the session moves to
        the team joined. Not signed in, an existing account proves itself with its
        password, a new account (with no team of its own) is created with the given
        password, and a session starts in the team joined. The token works once.
        """
        name = optional_display_name(answer.name)
        invitation = await membership.pending_invitation(self._db, answer.token)
        user, password_hash = await membership.accepting_user(
            self._db, invitation, principal, answer.password
        )
        now = now_iso()
        async with self._db.write() as tx:
            await membership.claim(tx, invitation, now)
            if user is not None:
                user = await membership.named(tx, user, name, now)
            else:
                # No team of their own: the invited team is theirs to work in.
                user = await membership.new_member_account(
                    tx, invitation.email, name, password_hash, now
                )
            joined = Actor(
                user.id,
                invitation.team_id,
                principal.key_id if principal else None,
                principal.session_id if principal else None,
                ip,
            )
            role = await membership.join(tx, invitation, user, joined)
        accepted = Accepted(user, invitation.team_id, role)
        if principal is None:
            # The invitee is signed in, acting in the team just joined.
            signed_in = await membership.sign_in_to_team(self._db, self._settings, accepted)
            return Joined(accepted, signed_in)
        if principal.session_id is not None:
            await membership.move_session(self._db, principal.session_id, accepted.team_id)
        return Joined(accepted, None)

    async def update_own_member(
        self,
        caller: Principal,
        member_ref: str,
        change: MemberChange,
        actor: Actor | None = None,
    ) -> Member:
        """Change the caller's own handoff e-mails and display name."""
        return await membership.update_own_member(self._db, caller, member_ref, change, actor)

    async def rename_team(self, team_id: str, name: str, actor: Actor | None = None) -> Team:
        """Rename the team (owners), recorded in the audit log."""
        return await membership.rename_team(self._db, team_id, name, actor)

    async def set_avatar(self, user_id: str, content_type: str, data: bytes) -> Avatar:
        """Keep the user's new picture (PNG, JPEG, WebP or GIF of at most 256 KB)."""
        return await avatars.set_avatar(self._db, self._files, user_id, content_type, data)

    async def delete_avatar(self, user_id: str) -> None:
        """Remove the user's picture."""
        await avatars.delete_avatar(self._db, self._files, user_id)

    async def avatar(self, avatar_id: str) -> avatars.Picture:
        """A picture by its id, opened to be sent, or NotFound."""
        return await avatars.get_avatar(self._db, self._files, avatar_id)

    async def remove_member(
        self, team_id: str, member_id: str, actor: Actor | None = None
    ) -> Member:
        """Remove a member: membership, sessions in the team and API keys go at once."""
        return await membership.remove_member(self._db, team_id, member_id, actor)

    async def needs_owner(self) -> bool:
        """True while no user exists (a fresh install)."""
        return await first_owner.needs_owner(self._db)

    async def create_owner(self, *, email: str, password: str, name: str) -> SignedIn:
        """Create the first user with their own team, signed in; refused once any user
        exists."""
        return await first_owner.create_owner(
            self._db, self._settings, email=email, password=password, name=name
        )


class SignInService:
    """Signing in and out: passwords, magic links, GitHub and Google; the session's teams."""

    def __init__(
        self, db: Database, settings: Settings, mailer: Mailer, http: aiohttp.ClientSession
    ):
        self._db = db
        self._settings = settings
        self._mailer = mailer
        self._oauth = oauth.OAuthSignIn(db, http, settings)

    async def sign_in_with_password(self, email: str, password: str) -> SignedIn:
        """Check e-mail and password; unknown address and wrong password fail alike."""
        return await sessions.sign_in_with_password(self._db, self._settings, email, password)

    async def change_password(self, principal: Principal, current: str | None, new: str) -> None:
        """Set or change the signed-in user's password; their other sessions end."""
        await sessions.change_password(self._db, principal, current, new)

    async def sign_out(self, token: str) -> None:
        """End the session of this token (nothing happens for an unknown token)."""
        await sessions.sign_out(self._db, token)

    async def session_info(self, principal: Principal) -> dict:
        """The signed-in user, the team acted in with its role, and every team of the user."""
        return await sessions.session_info(self._db, principal)

    async def switch_team(self, principal: Principal, team_id: str) -> Principal:
        """Make the caller's session act in another team of the user; return its principal."""
        return await sessions.switch_team(self._db, principal, team_id)

    def providers(self) -> list[str]:
        """The external sign-in providers with credentials, in a stable order."""
        return oauth.configured_providers(self._settings)

    @property
    def mail_delivery(self) -> str:
        """How sign-in links leave: `smtp`, or `log` without an [smtp] host."""
        return "smtp" if self._settings.smtp.host else "log"

    async def request_magic_link(self, email: str, callback_url: str) -> None:
        """E-mail a single-use sign-in link when the address has an account."""
        await sessions.request_magic_link(
            self._db, self._mailer, self._settings, email, callback_url
        )

    async def use_magic_link(self, token: str) -> tuple[SignedIn, str]:
        """Consume a magic link and start a session; return it and where to go (relative
        when on public_url's origin: a link opened at localhost stays there)."""
        signed_in, callback = await sessions.use_magic_link(self._db, self._settings, token)
        return signed_in, location_for(self._settings, callback)

    def check_provider(self, provider: str) -> None:
        """NotFound for an unknown or unconfigured provider."""
        oauth.provider_settings(self._settings, provider)

    async def start_oauth(self, provider: str, callback_url: str) -> oauth.Started:
        """Store a state with its PKCE verifier; return the provider's authorize address."""
        return await self._oauth.start(provider, callback_url)

    async def finish_oauth(
        self, provider: str, *, code: str, state: str, browser_state: str | None
    ) -> tuple[SignedIn, str]:
        """Verify state and PKCE, exchange the code, sign in by verified e-mail; return the
        session and the callback."""
        return await self._oauth.finish(
            provider, code=code, state=state, browser_state=browser_state
        )


class ApiKeysService:
    """The dashboard's API keys: list (masked), create (shown once), revoke at once."""

    def __init__(self, db: Database):
        self._db = db

    async def list_keys(self, principal: Principal) -> list[ApiKey]:
        """The owner sees every live key of the team; a member sees their own."""
        return await api_keys.list_keys(self._db, principal)

    async def create_key(
        self, principal: Principal, name: str, actor: Actor | None = None
    ) -> CreatedKey:
        """Create a key acting for the caller in the caller's team, with the caller's role."""
        return await api_keys.create_key(self._db, principal, name, actor)

    async def revoke_key(
        self, principal: Principal, key_id: str, actor: Actor | None = None
    ) -> None:
        """Revoke a key so that it stops working at once; members revoke only their own."""
        await api_keys.revoke_key(self._db, principal, key_id, actor)
