"""services/delivery: the outbox worker drains any kind that plugs in (here a stand-in for
the channel sends to come, on the event deliveries' table), on the retry schedule, and the
signature it writes is the Standard Webhooks one."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from standardwebhooks.webhooks import Webhook

from agentsvc.config import WebhookSettings
from agentsvc.db import Database, Tx
from agentsvc.db.postgres import PostgresDatabase
from agentsvc.db.sqlite import SqliteDatabase
from agentsvc.ids import parse_iso
from agentsvc.services.delivery.outbox import Deliverer
from agentsvc.services.delivery.outcome import Outcome
from agentsvc.services.delivery.signing import signature_headers
from agentsvc.store import webhook_deliveries, webhooks
from agentsvc.store.webhook_deliveries import EventDelivery
from agentsvc.store.webhooks import Webhook as StoredWebhook
from tests.support import pg
from tests.support.store_builders import NOW, owner


@pytest.fixture
async def db(tmp_path: Path) -> AsyncIterator[Database]:
    if pg.SERVER_URL:
        database: Database = PostgresDatabase(pg.fresh_database_url())
    else:
        database = SqliteDatabase(tmp_path / "outbox.db")
    await database.open()
    try:
        yield database
    finally:
        await database.close()


class ChannelSends:
    """A kind of delivery as a channel would add one: sends scripted outcomes."""

    outbox = webhook_deliveries.OUTBOX
    noun = "channel send"
    timeout_seconds = 5.0

    def __init__(self, outcomes: list[Outcome]):
        self.outcomes = outcomes
        self.sent: list[str] = []
        self.log: list[tuple[str, str]] = []

    async def load(self, rows: list[EventDelivery]) -> list[EventDelivery]:
        return rows

    def row(self, item: EventDelivery) -> EventDelivery:
        return item

    def label(self, item: EventDelivery) -> str:
        return "channel"

    async def send(self, item: EventDelivery) -> Outcome:
        self.sent.append(item.id)
        outcome = self.outcomes.pop(0)
        if outcome.error == "boom":
            raise RuntimeError("a bug in the kind")
        return outcome

    def columns(self, outcome: Outcome) -> dict[str, Any]:
        return {}

    async def recorded(
        self, tx: Tx, item: EventDelivery, fields: dict[str, Any], outcome: Outcome, now: str
    ) -> str:
        self.log.append((item.id, fields.get("status", "pending")))
        return f"recorded {fields['attempts']}"


async def pending_delivery(db: Database) -> None:
    """One pending row, due now."""
    who = await owner(db)
    async with db.write() as tx:
        await webhooks.insert(
            tx,
            StoredWebhook(
                id="wh_1",
                team_id=who.team_id,
                url="http://127.0.0.1/hook",
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
            tx, event_id="evt_1", team_id=who.team_id, targets=[("whd_1", "wh_1")], now=NOW
        )


async def the_row(db: Database) -> EventDelivery:
    found = await webhook_deliveries.get(db.reader, "wh_1", "whd_1")
    assert found is not None
    return found.delivery


def deliverer(db: Database, told: list[tuple[str, str]], schedule: list[float]) -> Deliverer:
    settings = WebhookSettings(retry_schedule_seconds=schedule)
    return Deliverer(db, settings, jobs=None, on_attempt=lambda *pair: told.append(pair))


async def test_a_new_kind_is_retried_on_schedule_then_fails(db):
    await pending_delivery(db)
    told: list[tuple[str, str]] = []
    worker = deliverer(db, told, [0, 0])
    kind = ChannelSends([Outcome(False, 502, "HTTP 502"), Outcome(False, error="boom")])
    worker.serve(kind)
    assert await worker.pending_count() == 1
    assert await worker.deliver_due() == 2  # the retry came due at once
    assert kind.sent == ["whd_1", "whd_1"]
    assert told == [("channel", "retry"), ("channel", "failed")]
    assert kind.log == [("whd_1", "pending"), ("whd_1", "failed")]
    attempts = await webhook_deliveries.OUTBOX.attempts_of(db.reader, "whd_1")
    assert [(a.attempt, a.status_code, a.error) for a in attempts] == [
        (1, 502, "HTTP 502"),
        (2, None, "internal error: RuntimeError"),
    ]
    row = await the_row(db)
    assert (row.status, row.attempts, row.lease_until) == ("failed", 2, None)
    assert await worker.pending_count() == 0


async def test_a_kind_attempts_at_once_through_its_queue(db):
    await pending_delivery(db)
    told: list[tuple[str, str]] = []
    worker = deliverer(db, told, [0, 60])
    queue = worker.serve(ChannelSends([Outcome(True, 200, body="ok")]))
    attempted = await queue.attempt(await the_row(db))
    assert attempted.outcome.success and attempted.recorded == "recorded 1"
    assert told == [("channel", "success")]
    assert await worker.deliver_due() == 0  # nothing left to claim


class Jobs:
    """The scheduler's door as the worker sees it: which wake-ups it was asked for."""

    def __init__(self) -> None:
        self.woken: list[datetime] = []

    def wake(self, job_id: str, at: datetime, fn: Any) -> None:
        self.woken.append(at)

    def cancel(self, job_id: str) -> None:
        return None


async def test_a_row_written_during_a_run_is_sent_by_that_run_without_a_job(db):
    await pending_delivery(db)
    team_id = await db.reader.fetchval("SELECT team_id FROM webhooks WHERE id = 'wh_1'")
    jobs = Jobs()
    settings = WebhookSettings(retry_schedule_seconds=[0, 60])
    worker = Deliverer(db, settings, jobs=jobs)  # type: ignore[arg-type]

    class Waking(ChannelSends):
        async def send(self, item: EventDelivery) -> Outcome:
            if item.id == "whd_1":  # another row is written meanwhile, and wakes the worker
                async with db.write() as tx:
                    await webhook_deliveries.insert_deliveries(
                        tx,
                        event_id="evt_1",
                        team_id=team_id,
                        targets=[("whd_2", "wh_1")],
                        now=NOW,
                    )
                worker.wake(datetime.now(UTC))
            return await super().send(item)

    kind = Waking([Outcome(True, 200, body="ok"), Outcome(True, 200, body="ok")])
    worker.serve(kind)
    assert await worker.deliver_due() == 2
    assert kind.sent == ["whd_1", "whd_2"]
    assert jobs.woken == []  # nothing left, nothing scheduled


def test_the_lease_outlasts_the_slowest_kind():
    worker = Deliverer(None, WebhookSettings(timeout_seconds=10), jobs=None)  # type: ignore[arg-type]
    assert worker.lease_seconds == 70
    worker.serve(ChannelSends([]))  # its sends take up to 5 s: no change
    assert worker.lease_seconds == 70
    slow = ChannelSends([])
    slow.timeout_seconds = 45.0
    worker.serve(slow)
    assert worker.lease_seconds == 105
    assert Deliverer(None, WebhookSettings(lease_seconds=7), jobs=None).lease_seconds == 7  # type: ignore[arg-type]


def test_signature_headers_verify_as_standard_webhooks():
    secret = "whsec_" + "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
    body = b'{"type": "form.submitted"}'
    headers = signature_headers(secret, "msg_1", body)
    assert list(headers) == ["webhook-id", "webhook-timestamp", "webhook-signature"]
    assert Webhook(secret).verify(body, headers) == {"type": "form.submitted"}


async def test_a_row_that_waited_past_its_lease_is_sent_once_by_two_processes(db):
    """A claim holds more rows than are sent at once (32): with receivers that take their
    time, the last ones wait for a slot past their lease, and another process takes them
    over. The first renews a waiting row's lease before its attempt, or leaves the row to
    the process that took it: each row is sent once. (The rounds are held by events, not
    timed: a busy machine only makes the test wait longer.)"""
    await pending_delivery(db)
    team_id = await db.reader.fetchval("SELECT team_id FROM webhooks WHERE id = 'wh_1'")
    ids = [f"whd_{n:03}" for n in range(2, 99)]  # 98 rows with whd_1: four rounds of 32
    async with db.write() as tx:
        targets = [(delivery_id, "wh_1") for delivery_id in ids]
        await webhook_deliveries.insert_deliveries(
            tx, event_id="evt_1", team_id=team_id, targets=targets, now=NOW
        )
    sent: list[str] = []

    class Held(ChannelSends):
        """Sends whose rounds of 32 wait for the test's go-ahead, one event a round."""

        def __init__(self, rounds: list[asyncio.Event]):
            super().__init__([])
            self.rounds = rounds
            self.calls = 0

        async def send(self, item: EventDelivery) -> Outcome:
            sent.append(item.id)
            round_ = self.calls // 32
            self.calls += 1
            if round_ < len(self.rounds):
                await self.rounds[round_].wait()
            return Outcome(True, 200, body="ok")

    async def sent_at_least(count: int) -> None:
        while len(sent) < count:
            await asyncio.sleep(0.02)

    async def recorded() -> int:
        return await db.reader.fetchval(
            "SELECT count(*) FROM webhook_deliveries WHERE status = 'success'"
        )

    async def at(moment: datetime) -> None:
        await asyncio.sleep(max(0.0, (moment - datetime.now(UTC)).total_seconds()))

    lease_seconds = 2.0
    settings = WebhookSettings(retry_schedule_seconds=[0, 60], lease_seconds=lease_seconds)
    first, second = Deliverer(db, settings, jobs=None), Deliverer(db, settings, jobs=None)
    go = [asyncio.Event(), asyncio.Event()]
    first.serve(Held(go))
    second.serve(Held([]))
    running = asyncio.ensure_future(first.deliver_due())
    await sent_at_least(32)  # claimed; the first round is being sent
    lease_end = parse_iso(
        await db.reader.fetchval("SELECT lease_until FROM webhook_deliveries WHERE id = 'whd_098'")
    )
    # The first round ends past half the lease: the second round's rows renew theirs.
    await at(lease_end - timedelta(seconds=lease_seconds * 0.4))
    go[0].set()
    await sent_at_least(64)  # the second round began (its leases renewed)
    while await recorded() < 32:  # the first round is recorded
        await asyncio.sleep(0.02)
    # The claim's lease ran out: the other process takes the rows still waiting, only those.
    await at(lease_end + timedelta(seconds=0.05))
    assert await second.deliver_due() == 34
    go[1].set()
    assert await running == 98
    assert sorted(sent) == sorted(["whd_1", *ids])  # each once
    rows = await db.reader.fetchall(
        "SELECT status, attempts FROM webhook_deliveries WHERE webhook_id = 'wh_1'"
    )
    assert {(status, attempts) for status, attempts in rows} == {("success", 1)}
