"""store/mail_outbox.py and store/identity.py."""

from __future__ import annotations

from agentsvc.store import identity, mail_outbox
from agentsvc.store.mail_outbox import OutboxMessage
from tests.support.store_builders import LATER, NOW, owner


async def test_kept_mail_is_listed_newest_first_and_by_address(db):
    async with db.write() as tx:
        for n, to in enumerate(["a@example.com", "b@example.com", "A@example.com"]):
            await mail_outbox.insert(
                tx,
                OutboxMessage(
                    id=f"mail_{n}",
                    to_address=to,
                    subject=f"s{n}",
                    body="sealed",
                    reason="no smtp",
                    created_at=NOW,
                ),
            )
    assert [m.id for m in await mail_outbox.list_recent(db.reader)] == [
        "mail_2",
        "mail_1",
        "mail_0",
    ]
    mine = await mail_outbox.list_recent(db.reader, "a@EXAMPLE.com", limit=10)
    assert [m.id for m in mine] == ["mail_2", "mail_0"]
    assert len(await mail_outbox.list_recent(db.reader, limit=1)) == 1


async def test_an_identity_secret_is_set_cleared_and_kept_in_its_team(db):
    who = await owner(db)
    other = await owner(db, "other@example.com")
    assert await identity.get_sealed(db.reader, who.agent_id) is None
    async with db.write() as tx:
        assert not await identity.set_sealed(tx, other.team_id, who.agent_id, "x", LATER)
        assert await identity.set_sealed(tx, who.team_id, who.agent_id, "sealed", LATER)
    assert await identity.get_sealed(db.reader, who.agent_id) == "sealed"
    async with db.write() as tx:
        assert await identity.set_sealed(tx, who.team_id, who.agent_id, None, LATER)
    assert await identity.get_sealed(db.reader, who.agent_id) is None
