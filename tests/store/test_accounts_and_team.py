"""store/accounts.py, store/team.py, store/api_keys.py: users, teams, members and keys."""

from __future__ import annotations

import pytest

from agentsvc.db import ConstraintViolation
from agentsvc.ids import new_id
from agentsvc.store import accounts, api_keys, team
from tests.support.store_builders import LATER, NOW, owner


async def test_users_are_found_by_email_whatever_its_case(db):
    who = await owner(db, "Ann@Example.com")
    user = await accounts.get_user_by_email(db.reader, "ann@example.COM")
    assert user is not None and user.id == who.user_id
    assert await accounts.get_user_by_email(db.reader, "bob@example.com") is None
    assert await accounts.count_users(db.reader) == 1


async def test_an_email_is_taken_once(db):
    await owner(db, "ann@example.com")
    with pytest.raises(ConstraintViolation):
        async with db.write() as tx:
            await accounts.insert_user(
                tx, id=new_id("user"), email="ANN@example.com", name="", password_hash=None, now=NOW
            )
    assert await accounts.count_users(db.reader) == 1


async def test_plan_password_and_role(db):
    who = await owner(db)
    async with db.write() as tx:
        await accounts.set_plan(tx, who.team_id, "free", LATER)
        await accounts.set_password(tx, who.user_id, "hash", LATER)
    assert (await accounts.get_team(db.reader, who.team_id)).plan == "free"
    assert (await accounts.get_owned_team(db.reader, who.user_id)).id == who.team_id
    assert await accounts.get_role(db.reader, who.team_id, who.user_id) == "owner"
    assert await accounts.get_role(db.reader, "team_other", who.user_id) is None


async def test_members_join_list_and_leave(db):
    first = await owner(db, "a@example.com")
    second = await owner(db, "b@example.com")
    async with db.write() as tx:
        added = await team.add_membership(
            tx,
            id="membership_x",
            team_id=first.team_id,
            user_id=second.user_id,
            role="member",
            now=LATER,
        )
        again = await team.add_membership(
            tx,
            id="membership_y",
            team_id=first.team_id,
            user_id=second.user_id,
            role="member",
            now=LATER,
        )
    assert (added, again) == (True, False)
    members = await team.list_members(db.reader, first.team_id)
    assert sorted(m.role for m in members) == ["member", "owner"]
    assert await team.is_member(db.reader, first.team_id, second.user_id)
    assert {t[0] for t in await team.teams_of_user(db.reader, second.user_id)} == {
        first.team_id,
        second.team_id,
    }
    async with db.write() as tx:
        assert await team.delete_membership(tx, first.team_id, "membership_x")
        assert not await team.delete_membership(tx, second.team_id, "membership_x")
    assert not await team.is_member(db.reader, first.team_id, second.user_id)


async def test_api_keys_resolve_list_and_revoke_within_their_team(db):
    who = await owner(db)
    other = await owner(db, "other@example.com")
    async with db.write() as tx:
        await api_keys.insert(
            tx,
            id="api_key_1",
            team_id=who.team_id,
            user_id=who.user_id,
            name="ci",
            key_hash="h1",
            prefix="asvc_abcd",
            last4="wxyz",
            now=NOW,
        )
    found = await api_keys.get_owner(db.reader, "h1")
    assert found is not None
    assert await api_keys.get_owner(db.reader, "nope") is None
    assert [k.id for k in await api_keys.list_for_team(db.reader, who.team_id)] == ["api_key_1"]
    assert await api_keys.list_for_team(db.reader, other.team_id) == []
    assert await api_keys.get(db.reader, other.team_id, "api_key_1") is None
    async with db.write() as tx:
        assert not await api_keys.revoke(tx, other.team_id, "api_key_1", LATER)
        assert await api_keys.revoke(tx, who.team_id, "api_key_1", LATER)
    assert await api_keys.get_owner(db.reader, "h1") is None
