"""store/submissions.py: submissions, the delivery outbox with its leases, analytics."""

from __future__ import annotations

from dataclasses import replace

from agentsvc.store import submissions as store
from agentsvc.store.submissions import Attempt, Delivery
from tests.support.store_builders import LATER, NOW, owner, submission, with_form

SOON = "2026-11-24T00:00:30.000Z"


def delivery(n: int, submission_id: str, due: str = NOW) -> Delivery:
    return Delivery(
        id=f"delivery_{n}",
        submission_id=submission_id,
        position=0,
        kind="webhook",
        webhook_id=f"msg_{n}",
        spec={"url": "http://127.0.0.1/x"},
        sealed_secret=None,
        status="pending",
        attempts=0,
        cycle_start=0,
        next_attempt_at=due,
        lease_until=None,
        last_error=None,
        created_at=NOW,
        updated_at=NOW,
        completed_at=None,
    )


async def test_a_submission_and_its_deliveries_round_trip(db):
    who = await with_form(db)
    async with db.write() as tx:
        await store.insert_submission(tx, submission(who, 1))
        await store.insert_deliveries(tx, [delivery(1, "submission_1")])
        assert await store.delivery_exists(tx, "delivery_1")
    stored = await store.get_submission(db.reader, "submission_1", who.team_id)
    assert stored == submission(who, 1)
    assert await store.get_submission(db.reader, "submission_1", "team_other") is None
    assert [d.webhook_id for d in await store.deliveries_for(db.reader, "submission_1")] == [
        "msg_1"
    ]


async def test_submissions_page_newest_first_with_filters_and_total(db):
    who = await with_form(db)
    async with db.write() as tx:
        for n in range(4):
            status = "webhook_failed" if n == 1 else "pending"
            await store.insert_submission(tx, submission(who, n, status=status))
    kwargs = {"agent_id": None, "tool_id": None}
    page, more = await store.list_submissions(
        db.reader, who.team_id, status=None, limit=2, offset=0, **kwargs
    )
    assert more and [s.id for s in page] == ["submission_3", "submission_2"]
    assert await store.count_submissions(db.reader, who.team_id, status=None, **kwargs) == 4
    page, more = await store.list_submissions(
        db.reader, who.team_id, status="webhook_failed", limit=10, offset=0, **kwargs
    )
    assert (more, [s.id for s in page]) == (False, ["submission_1"])
    failed = await store.count_submissions(
        db.reader, who.team_id, status="webhook_failed", **kwargs
    )
    assert failed == 1
    assert await store.list_submissions(
        db.reader, who.team_id, status=None, limit=2, offset=9, **kwargs
    ) == ([], False)
    # The counters follow a change of status.
    async with db.write() as tx:
        await store.update_submission(tx, "submission_1", {"status": "webhook_success"}, LATER)
    assert (
        await store.count_submissions(db.reader, who.team_id, status="webhook_failed", **kwargs)
        == 0
    )
    assert await store.count_submissions(db.reader, who.team_id, status=None, **kwargs) == 4


async def test_due_deliveries_are_leased_once_until_their_lease_ends(db):
    who = await with_form(db)
    async with db.write() as tx:
        await store.insert_submission(tx, submission(who, 1))
        await store.insert_deliveries(
            tx,
            [delivery(1, "submission_1"), replace(delivery(2, "submission_1", LATER), position=1)],
        )
    async with db.write() as tx:
        claimed = await store.claim_due(tx, NOW, SOON, 10)
        assert [d.id for d in claimed] == ["delivery_1"]
        assert await store.claim_due(tx, NOW, SOON, 10) == []  # leased
        assert await store.count_pending(tx) == 2
        assert await store.next_due_at(tx) == SOON
        assert await store.release_all_leases(tx) == 1
        assert [d.id for d in await store.claim_due(tx, NOW, SOON, 10)] == ["delivery_1"]


async def test_attempts_are_logged_and_outcomes_recorded(db):
    who = await with_form(db)
    async with db.write() as tx:
        await store.insert_submission(tx, submission(who, 1))
        await store.insert_deliveries(tx, [delivery(1, "submission_1")])
        await store.record_attempt(tx, Attempt("delivery_1", 1, NOW, 200, 12, True, None, "ok"))
        await store.update_delivery(tx, "delivery_1", {"status": "success", "attempts": 1}, NOW)
        await store.update_submission(tx, "submission_1", {"status": "webhook_success"}, NOW)
    attempts = await store.attempts_for(db.reader, "submission_1")
    assert [(a.attempt, a.success, a.status_code) for a in attempts] == [(1, True, 200)]
    assert (await store.get_submission(db.reader, "submission_1")).status == "webhook_success"
    assert await store.count_pending(db.reader) == 0


async def test_analytics_count_one_agents_events_outcomes_and_fields(db):
    who = await with_form(db)
    async with db.write() as tx:
        await store.insert_submission(tx, submission(who, 1, status="webhook_success"))
        await store.insert_submission(tx, submission(who, 2, fields=("email", "name")))
        for event_type in ("impression", "impression", "started"):
            await store.insert_event(
                tx,
                tool_id="tool_1",
                agent_id=who.agent_id,
                event_type=event_type,
                session_id=None,
                now=NOW,
            )
    assert await store.event_counts(db.reader, who.agent_id) == {
        ("tool_1", "impression"): 2,
        ("tool_1", "started"): 1,
    }
    outcome = (await store.outcome_counts(db.reader, who.agent_id))["tool_1"]
    assert outcome == {"submitted": 2, "successful": 1, "failed": 0, "unseen": 0, "unstarted": 2}
    assert await store.field_counts(db.reader, who.agent_id) == {
        ("tool_1", "email"): 2,
        ("tool_1", "name"): 1,
    }
    other = await owner(db, "other@example.com")
    assert await store.outcome_counts(db.reader, other.agent_id) == {}
