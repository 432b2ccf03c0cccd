"""store/sessions.py, store/sign_in.py and store/invitations.py: tokens and their expiry."""

from __future__ import annotations

from agentsvc.store import invitations, sessions, sign_in
from agentsvc.store.invitations import Invitation
from tests.support.store_builders import LATER, NOW, owner

PAST = "2026-11-23T00:00:00.000Z"
FUTURE = "2026-11-25T00:00:00.000Z"


async def test_a_session_is_found_until_it_expires_and_is_deleted_once(db):
    who = await owner(db)
    async with db.write() as tx:
        await sessions.insert(
            tx,
            id="session_1",
            token_hash="h",
            user_id=who.user_id,
            team_id=who.team_id,
            now=NOW,
            expires_at=FUTURE,
        )
    assert (await sessions.get_owner(db.reader, "h", NOW)) is not None
    assert await sessions.get_owner(db.reader, "h", "2026-11-26T00:00:00.000Z") is None
    async with db.write() as tx:
        await sessions.extend(tx, "session_1", "2026-11-27T00:00:00.000Z")
    assert await sessions.get_owner(db.reader, "h", "2026-11-26T00:00:00.000Z") is not None
    async with db.write() as tx:
        assert await sessions.delete_by_hash(tx, "h")
        assert not await sessions.delete_by_hash(tx, "h")


async def test_expired_sessions_and_sessions_of_a_removed_member_go(db):
    who = await owner(db)
    async with db.write() as tx:
        for n, expires in enumerate((PAST, FUTURE, FUTURE)):
            await sessions.insert(
                tx,
                id=f"session_{n}",
                token_hash=f"h{n}",
                user_id=who.user_id,
                team_id=who.team_id,
                now=NOW,
                expires_at=expires,
            )
        assert await sessions.delete_expired(tx, NOW) == 1
        assert await sessions.delete_for_member(tx, who.team_id, who.user_id) == 2


async def test_a_magic_link_is_used_once_and_only_while_live(db):
    who = await owner(db)
    async with db.write() as tx:
        await sign_in.insert_magic_link(
            tx, token_hash="m", user_id=who.user_id, callback_url="/", now=NOW, expires_at=LATER
        )
        await sign_in.insert_magic_link(
            tx, token_hash="old", user_id=who.user_id, callback_url="/", now=PAST, expires_at=PAST
        )
        assert await sign_in.consume_magic_link(tx, "old", NOW) is None
        assert await sign_in.consume_magic_link(tx, "m", NOW) == (who.user_id, "/")
        assert await sign_in.consume_magic_link(tx, "m", NOW) is None


async def test_an_oauth_state_belongs_to_its_provider_and_is_consumed_once(db):
    async with db.write() as tx:
        await sign_in.insert_oauth_state(
            tx,
            state_hash="s",
            provider="github",
            code_verifier="v",
            callback_url="/x",
            now=NOW,
            expires_at=LATER,
        )
        assert await sign_in.consume_oauth_state(tx, "s", "google", NOW) is None
        assert await sign_in.consume_oauth_state(tx, "s", "github", NOW) == ("v", "/x")
        assert await sign_in.consume_oauth_state(tx, "s", "github", NOW) is None


async def test_invitations_move_from_pending_once_and_expire(db):
    who = await owner(db)
    other = await owner(db, "other@example.com")

    def invitation(n: int, expires_at: str) -> Invitation:
        return Invitation(
            id=f"invitation_{n}",
            team_id=who.team_id,
            email=f"x{n}@example.com",
            role="member",
            status="pending",
            invited_by_user_id=who.user_id,
            created_at=NOW,
            updated_at=NOW,
            expires_at=expires_at,
        )

    async with db.write() as tx:
        await invitations.insert(tx, invitation(1, FUTURE), "t1")
        await invitations.insert(tx, invitation(2, PAST), "t2")
        assert await invitations.transition(tx, "invitation_1", "accepted", NOW)
        assert not await invitations.transition(tx, "invitation_1", "revoked", NOW)
        assert await invitations.expire_due(tx, NOW) == 1
    assert (await invitations.get_by_token(db.reader, "t1")).status == "accepted"
    assert (await invitations.get(db.reader, who.team_id, "invitation_2")).status == "expired"
    assert await invitations.get(db.reader, other.team_id, "invitation_2") is None
    assert len(await invitations.list_for_team(db.reader, who.team_id)) == 2
