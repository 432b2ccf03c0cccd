"""Retention: conversations and submissions older than their agent's `retentionDays` are
purged (with their files), and the event webhooks' old delivery log goes too, with the
channels' finished replies and the ids of the messages they received long ago.

Run by the scheduler every `[privacy] retention_sweep_seconds`, once for all the processes
of a shared database. Deletes go in batches, each its own transaction, so a long purge
never holds the writer for long.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from agentsvc.db import Database
from agentsvc.errors import NotFound
from agentsvc.ids import iso, now_iso
from agentsvc.services import audit, changes
from agentsvc.services.audit import Actor
from agentsvc.services.channels import email_files
from agentsvc.services.forms.files import remove_folder
from agentsvc.storage import FileStore
from agentsvc.store import agents as agents_store
from agentsvc.store import attachments as attachments_store
from agentsvc.store import channels as channels_store
from agentsvc.store import purge, webhook_deliveries
from agentsvc.store import submissions as sub_store
from agentsvc.store.agents import Agent

log = logging.getLogger(__name__)

BATCH = 500
MIN_DAYS, MAX_DAYS = 1, 36500


@dataclass(slots=True)
class Purged:
    conversations: int = 0
    submissions: int = 0
    deliveries: int = 0


async def _purge_agent(
    db: Database, files: FileStore, agent_id: str, team_id: str, before: str
) -> Purged:
    """Purge the agent's conversations idle and submissions made `before`; count them."""
    done = Purged()
    while True:
        ids = await purge.idle_conversations(db.reader, agent_id, before, BATCH)
        if not ids:
            break
        folders = await attachments_store.folders_of_conversations(db.reader, ids)
        async with db.write() as tx:
            gone = await purge.delete_conversations(tx, team_id, ids)
        done.conversations += gone
        await email_files.remove_unlisted(db, files, folders)
        if not gone:
            break
    while True:
        ids = await purge.old_submissions(db.reader, agent_id, before, BATCH)
        if not ids:
            break
        with_files = [s.id for s in await sub_store.get_submissions(db.reader, ids) if s.files]
        async with db.write() as tx:
            gone = await purge.delete_submissions(tx, team_id, ids)
        done.submissions += gone
        for sub_id in with_files:
            await remove_folder(files, sub_id)
        if not gone:
            break
    return done


async def purge_expired(
    db: Database, files: FileStore, delivery_log_days: float, now: datetime | None = None
) -> Purged:
    """Purge what retention no longer keeps, as of `now`; return how much went."""
    now = now or datetime.now(UTC)
    done = Purged()
    for agent_id, team_id, days in await purge.agents_with_retention(db.reader):
        before = iso(now - timedelta(days=days))
        purged = await _purge_agent(db, files, agent_id, team_id, before)
        done.conversations += purged.conversations
        done.submissions += purged.submissions
    before = iso(now - timedelta(days=delivery_log_days))
    for prune in (webhook_deliveries.prune, channels_store.prune):
        while True:
            async with db.write() as tx:
                gone = await prune(tx, before, BATCH)
            done.deliveries += gone
            if gone < BATCH:
                break
    if done.conversations or done.submissions:
        log.info(
            "retention: purged %d conversation(s) and %d submission(s)",
            done.conversations,
            done.submissions,
        )
    return done


async def set_retention_days(db: Database, actor: Actor, agent_id: str, days: int | None) -> Agent:
    """Keep the agent's conversations and submissions `days` days (None: forever)."""
    async with db.write() as tx:
        agent = await agents_store.get(tx, actor.team_id, agent_id)
        if agent is None:
            raise NotFound("Agent not found")
        if agent.retention_days != days:
            await agents_store.update(
                tx, actor.team_id, agent_id, {"retention_days": days}, now_iso()
            )
            await audit.record_in(
                tx,
                actor,
                "agent.retention_changed",
                target_type="agent",
                target_id=agent_id,
                label=agent.name,
                details={"from": agent.retention_days, "to": days},
            )
        updated = await agents_store.get(tx, actor.team_id, agent_id)
    await db.announce(changes.agent(agent_id))
    assert updated is not None
    return updated
