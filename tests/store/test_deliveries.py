"""store/deliveries.py: one outbox for every kind; here event webhooks' table, claimed,
attempted and restarted through the same SQL as form deliveries."""

from __future__ import annotations

from agentsvc.store import submissions as form_store
from agentsvc.store import webhook_deliveries, webhooks
from agentsvc.store.deliveries import Attempt
from agentsvc.store.webhooks import Webhook
from tests.support.store_builders import LATER, NOW, owner

SOON = "2026-11-24T00:00:30.000Z"
OUTBOX = webhook_deliveries.OUTBOX


async def with_event(db, deliveries: int = 2) -> None:
    who = await owner(db)
    async with db.write() as tx:
        for n in range(deliveries):
            await webhooks.insert(
                tx,
                Webhook(
                    id=f"wh_{n}",
                    team_id=who.team_id,
                    url=f"http://127.0.0.1/{n}",
                    events=["form.submitted"],
                    description="",
                    sealed_secret="sealed",
                    created_by=who.user_id,
                    created_at=NOW,
                    updated_at=NOW,
                ),
            )
        await webhook_deliveries.insert_event(
            tx,
            event_id="evt_1",
            team_id=who.team_id,
            event_type="form.submitted",
            payload="{}",
            conversation_id=None,
            submission_id=None,
            now=NOW,
        )
        await webhook_deliveries.insert_deliveries(
            tx,
            event_id="evt_1",
            team_id=who.team_id,
            targets=[(f"whd_{n}", f"wh_{n}") for n in range(deliveries)],
            now=NOW,
        )


async def test_each_kind_claims_only_its_own_rows(db):
    await with_event(db)
    async with db.write() as tx:
        assert await form_store.OUTBOX.claim_due(tx, NOW, SOON, 10) == []
        claimed = await OUTBOX.claim_due(tx, NOW, SOON, 10)
        assert [d.id for d in claimed] == ["whd_0", "whd_1"]
        assert all(d.lease_until == SOON for d in claimed)
        assert await OUTBOX.claim_due(tx, NOW, SOON, 10) == []  # leased
    assert await OUTBOX.count_pending(db.reader) == 2
    assert await form_store.OUTBOX.count_pending(db.reader) == 0
    assert await OUTBOX.next_due_at(db.reader) == SOON


async def test_a_claim_takes_at_most_the_limit_and_leases_end(db):
    await with_event(db)
    async with db.write() as tx:
        assert len(await OUTBOX.claim_due(tx, NOW, SOON, 1)) == 1
        assert [d.id for d in await OUTBOX.claim_due(tx, SOON, LATER, 10)] == ["whd_0", "whd_1"]
        assert await OUTBOX.release_all_leases(tx) == 2
        assert await OUTBOX.next_due_at(tx) == NOW


async def test_an_attempt_is_logged_and_the_row_moves_on(db):
    await with_event(db, deliveries=1)
    attempt = Attempt("whd_0", 1, NOW, 500, 7, False, "HTTP 500", "oops")
    async with db.write() as tx:
        assert await OUTBOX.delivery_exists(tx, "whd_0")
        assert not await OUTBOX.delivery_exists(tx, "whd_gone")
        await OUTBOX.record_attempt(tx, attempt)
        fields = {"status": "failed", "attempts": 1, "last_status_code": 500}
        await OUTBOX.update_delivery(tx, "whd_0", fields, LATER)
    assert await OUTBOX.attempts_of(db.reader, "whd_0") == [attempt]
    found = await webhook_deliveries.get(db.reader, "wh_0", "whd_0")
    assert found is not None
    assert (found.delivery.status, found.delivery.updated_at) == ("failed", LATER)
    assert await OUTBOX.count_pending(db.reader) == 0


async def test_a_restart_waits_for_a_running_attempt(db):
    await with_event(db, deliveries=1)
    async with db.write() as tx:
        await OUTBOX.claim_due(tx, NOW, SOON, 10)
        assert not await OUTBOX.restart(tx, "whd_0", NOW)  # an attempt holds it
        await OUTBOX.update_delivery(tx, "whd_0", {"status": "failed", "attempts": 3}, NOW)
        assert await OUTBOX.restart(tx, "whd_0", SOON)  # its lease ended
    found = await webhook_deliveries.get(db.reader, "wh_0", "whd_0")
    assert found is not None
    restarted = found.delivery
    assert (restarted.status, restarted.cycle_start, restarted.next_attempt_at) == (
        "pending",
        3,
        SOON,
    )
