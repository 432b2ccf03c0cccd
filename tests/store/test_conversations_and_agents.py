"""store/conversations.py, store/conversation_lists.py and store/agents.py."""

from __future__ import annotations

from agentsvc.store import agents, conversation_lists, conversations
from agentsvc.store.conversations import StoredMessage
from tests.support.store_builders import LATER, NOW, add_agent, conversation, owner


def message(conversation_id: str, n: int, role: str = "user") -> StoredMessage:
    return StoredMessage(
        id=f"message_{conversation_id}_{n}",
        conversation_id=conversation_id,
        role=role,
        content=f"m{n}",
        tool_calls=[{"name": "t"}] if role == "assistant" else None,
        usage=None,
        sources=None,
        status="complete",
        model=None,
        rating=None,
        created_at=NOW,
    )


async def test_conversations_page_newest_first_with_counts_and_total(db):
    who = await owner(db)
    async with db.write() as tx:
        for n in range(5):
            await conversations.insert_conversation(tx, conversation(who, n, f"2026-11-2{n}T00"))
        await conversations.insert_message(tx, message("conversation_4", 1))
        await conversations.insert_message(tx, message("conversation_4", 2, "assistant"))
    page, more = await conversation_lists.list_for_agent(db.reader, who.agent_id, 2, 0)
    assert more and await conversations.count_for_agent(db.reader, who.agent_id) == 5
    assert [c.id for c in page] == ["conversation_4", "conversation_3"]
    assert [c.message_count for c in page] == [2, 0]
    late, more = await conversation_lists.list_for_agent(db.reader, who.agent_id, 2, 10)
    assert (late, more) == ([], False)
    after = (page[-1].created_at, page[-1].id)
    rest, more = await conversation_lists.list_for_agent(db.reader, who.agent_id, 5, 0, after)
    assert [c.id for c in rest] == ["conversation_2", "conversation_1", "conversation_0"]
    assert not more
    async with db.write() as tx:
        await conversations.delete(tx, who.team_id, "conversation_0")
    assert await conversations.count_for_agent(db.reader, who.agent_id) == 4


async def test_messages_keep_their_order_json_and_ratings(db):
    who = await owner(db)
    async with db.write() as tx:
        await conversations.insert_conversation(tx, conversation(who, 1))
        for n in range(3):
            await conversations.insert_message(
                tx, message("conversation_1", n, "assistant" if n % 2 else "user")
            )
        assert await conversations.rate_message(
            tx, "conversation_1", "message_conversation_1_1", "up", LATER
        )
        assert not await conversations.rate_message(
            tx, "conversation_x", "message_conversation_1_1", "up", LATER
        )
    stored = await conversations.list_messages(db.reader, "conversation_1")
    assert [m.content for m in stored] == ["m0", "m1", "m2"]
    assert stored[1].tool_calls == [{"name": "t"}] and stored[1].rating == "up"


async def test_a_conversation_of_another_team_is_neither_read_nor_deleted(db):
    who = await owner(db)
    other = await owner(db, "other@example.com")
    async with db.write() as tx:
        await conversations.insert_conversation(tx, conversation(who, 1))
        await conversations.insert_message(tx, message("conversation_1", 1))
        assert not await conversations.delete(tx, other.team_id, "conversation_1")
    assert await conversations.get(db.reader, other.team_id, "conversation_1") is None
    assert (await conversations.get(db.reader, who.team_id, "conversation_1")).title == "c1"
    assert await conversations.get_for_agent(db.reader, other.agent_id, "conversation_1") is None
    async with db.write() as tx:
        assert await conversations.delete(tx, who.team_id, "conversation_1")
    assert await conversations.list_messages(db.reader, "conversation_1") == []


async def test_agents_are_scoped_to_their_team(db):
    who = await owner(db)
    other = await owner(db, "other@example.com")
    assert await agents.get(db.reader, other.team_id, who.agent_id) is None
    assert (await agents.get_public(db.reader, who.agent_id)).team_id == who.team_id
    async with db.write() as tx:
        assert not await agents.update(tx, other.team_id, who.agent_id, {"name": "X"}, LATER)
        assert await agents.update(tx, who.team_id, who.agent_id, {"name": "Sales"}, LATER)
        assert not await agents.delete(tx, other.team_id, who.agent_id)
    assert (await agents.get(db.reader, who.team_id, who.agent_id)).name == "Sales"


async def test_agents_list_newest_first_and_slugs_like_a_base(db):
    who = await owner(db)
    async with db.write() as tx:
        await add_agent(tx, who.team_id, "Shop", slug="shop")
        await add_agent(tx, who.team_id, "Shop", slug="shop-2")
    listed = await agents.list_for_team(db.reader, who.team_id)
    assert len(listed) == 3
    assert set(await agents.slugs_like(db.reader, who.team_id, "shop")) >= {"shop", "shop-2"}
    async with db.write() as tx:
        assert await agents.delete(tx, who.team_id, who.agent_id)
    assert len(await agents.list_for_team(db.reader, who.team_id)) == 2
