"""The counters behind list totals and form analytics (migration 6): always equal to a
count of the rows they stand for, through inserts, status changes, deletes, agent
deletion and the upgrade of an older database."""

from __future__ import annotations

import sqlite3

from agentsvc.db.migrations import schema_at
from agentsvc.db.sqlite import SqliteDatabase
from agentsvc.store import agents, conversations
from agentsvc.store import submissions as store
from tests.support.store_builders import LATER, conversation, submission, with_form

COUNTS = {
    "conversations": "SELECT agent_id, COUNT(*) FROM conversations GROUP BY agent_id",
    "submissions": "SELECT agent_id, status, COUNT(*) FROM form_submissions"
    " GROUP BY agent_id, status",
    "fields": "SELECT s.agent_id, f.value, COUNT(*) FROM form_submissions s,"
    " json_each(s.fields_completed) f GROUP BY s.agent_id, f.value",
    "events": "SELECT agent_id, event_type, COUNT(*) FROM form_events"
    " GROUP BY agent_id, event_type",
}
TOTALS = {
    "conversations": "SELECT agent_id, conversations FROM conversation_totals"
    " WHERE conversations > 0",
    "submissions": "SELECT agent_id, status, SUM(submissions) FROM submission_totals"
    " GROUP BY agent_id, status HAVING SUM(submissions) > 0",
    "fields": "SELECT agent_id, field, SUM(completed) FROM form_field_totals"
    " GROUP BY agent_id, field HAVING SUM(completed) > 0",
    "events": "SELECT agent_id, event_type, events FROM form_event_totals WHERE events > 0",
}


PG_FIELDS = (
    "SELECT s.agent_id, f.value, COUNT(*) FROM form_submissions s,"
    " jsonb_array_elements_text(s.fields_completed::jsonb) f(value) GROUP BY s.agent_id, f.value"
)


async def assert_counters_match(db) -> None:
    for name in COUNTS:
        sql = PG_FIELDS if name == "fields" and db.reader.dialect == "postgresql" else COUNTS[name]
        counted = sorted(tuple(r) for r in await db.reader.fetchall(sql))
        kept = sorted(tuple(r) for r in await db.reader.fetchall(TOTALS[name]))
        assert kept == counted, name


async def test_counters_follow_every_write(db):
    who = await with_form(db)
    async with db.write() as tx:
        for n in range(6):
            await conversations.insert_conversation(tx, conversation(who, n))
            await store.insert_submission(tx, submission(who, n, fields=("email", "name")[: n % 3]))
            await store.insert_event(
                tx,
                tool_id="tool_1",
                agent_id=who.agent_id,
                event_type="impression",
                session_id=None,
                now=LATER,
            )
    await assert_counters_match(db)
    async with db.write() as tx:
        await store.update_submission(tx, "submission_2", {"status": "webhook_failed"}, LATER)
        await conversations.delete(tx, who.team_id, "conversation_3")
        await tx.execute("DELETE FROM form_submissions WHERE id = 'submission_4'")
        await tx.execute("DELETE FROM form_events WHERE id = 1")
    await assert_counters_match(db)
    async with db.write() as tx:
        assert await agents.delete(tx, who.team_id, who.agent_id)
    await assert_counters_match(db)
    for table in ("conversation_totals", "submission_totals", "form_field_totals"):
        assert await db.reader.fetchval(f"SELECT COUNT(*) FROM {table}") == 0  # noqa: S608


async def test_an_upgraded_database_counts_the_rows_it_already_had(tmp_path):
    path = tmp_path / "old.db"
    old = sqlite3.connect(path)
    old.executescript(schema_at(5))
    rows = """
        INSERT INTO users (id, email, created_at, updated_at)
            VALUES ('u', 'u@x.y', '2026-11-24', '2026-11-24');
        INSERT INTO teams (id, name, owner_user_id, plan, created_at, updated_at)
            VALUES ('t', 'T', 'u', 'pro', '2026-11-24', '2026-11-24');
        INSERT INTO agents (id, team_id, name, slug, model, temperature, created_at, updated_at)
            VALUES ('a', 't', 'A', 'a', 'builtin', 0.7, '2026-11-24', '2026-11-24');
        INSERT INTO conversations (id, agent_id, team_id, title, created_at, updated_at)
            VALUES ('c1', 'a', 't', 'x', '2026-11-24', '2026-11-24'),
                   ('c2', 'a', 't', 'y', '2026-11-24', '2026-11-24');
        INSERT INTO form_submissions (id, team_id, agent_id, tool_id, tool_name, form_data,
            fields_completed, execution_mode, status, created_at, updated_at)
            VALUES ('s1', 't', 'a', 'tool', 'f', '{}', '["email"]', 'webhook', 'pending',
                    '2026-11-24', '2026-11-24');
        INSERT INTO form_events (tool_id, agent_id, event_type, created_at)
            VALUES ('tool', 'a', 'started', '2026-11-24');
        """
    old.executescript(rows)
    old.commit()
    old.close()
    db = SqliteDatabase(path)
    await db.open()  # migrates: the counters are filled from the rows there are
    try:
        await assert_counters_match(db)
        assert await conversations.count_for_agent(db.reader, "a") == 2
        assert (
            await store.count_submissions(db.reader, "t", status=None, agent_id="a", tool_id=None)
            == 1
        )
    finally:
        await db.close()
