"""The sources feature as the API uses it: an agent's sources (checked when saved: the
address, the patterns, the plan's page limit), their syncs, pages and progress."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass, replace

from agentsvc.config import Settings
from agentsvc.db import Database
from agentsvc.errors import NotFound, ValidationFailed
from agentsvc.ids import new_id, now_iso
from agentsvc.outbound import private_host
from agentsvc.services import audit, changes
from agentsvc.services.audit import Actor
from agentsvc.services.knowledge.documents import check_agent
from agentsvc.services.knowledge.sources import urls
from agentsvc.services.knowledge.sources.globs import Globs
from agentsvc.services.knowledge.sources.sync import SourceSyncer, next_sync_at
from agentsvc.store import sources as store
from agentsvc.store.sources import PageCounts, Source, SourcePage


@dataclass(frozen=True, slots=True)
class NewSource:
    type: str
    url: str
    include: list[str]
    exclude: list[str]
    max_pages: int | None
    schedule: str


@dataclass(frozen=True, slots=True)
class SourceChanges:
    """What PATCH changes; None: unchanged."""

    include: list[str] | None = None
    exclude: list[str] | None = None
    max_pages: int | None = None
    schedule: str | None = None


@dataclass(frozen=True, slots=True)
class SourcesDeps:
    db: Database
    syncer: SourceSyncer
    settings: Settings
    semantic_on: bool  # documents removed change the agent's vectors


class SourcesService:
    """A team's agents' sources, their syncs and their pages."""

    def __init__(self, deps: SourcesDeps):
        self._deps = deps
        self._db = deps.db

    def _max_pages(self, plan_id: str, asked: int | None) -> int:
        planned = self._deps.settings.plans.limits(plan_id).source_pages
        ceiling = self._deps.settings.sources.max_pages
        limit = ceiling if planned is None else min(planned, ceiling)
        if asked is None:
            return limit
        if asked > limit:
            raise ValidationFailed(f"maxPages: at most {limit} pages a source on your plan")
        return asked

    def _check_url(self, raw: str) -> str:
        url = urls.normalise(raw)
        if url is None:
            raise ValidationFailed("url: give an http or https address of a page of the site")
        if not self._deps.settings.outbound.allow_private:
            host = private_host(url.raw_host or "")
            if host is not None:
                raise ValidationFailed(
                    f"url: {host} is a private address; set [outbound] allow_private = true"
                    " to allow it"
                )
        return str(url)

    async def create(self, actor: Actor, plan_id: str, agent_id: str, new: NewSource) -> Source:
        """Save a source and start its first sync."""
        await check_agent(self._db, actor.team_id, agent_id)
        Globs(new.include, new.exclude)  # ValidationFailed naming a pattern that does not compile
        now = now_iso()
        found = Source(
            id=new_id("source"),
            agent_id=agent_id,
            team_id=actor.team_id,
            type=new.type,
            url=self._check_url(new.url),
            include=new.include,
            exclude=new.exclude,
            max_pages=1 if new.type == "url" else self._max_pages(plan_id, new.max_pages),
            schedule=new.schedule,
            status="queued",
            error=None,
            generation=0,
            removed=0,
            lease_until=None,
            last_sync_at=None,
            next_sync_at=None,
            created_at=now,
            updated_at=now,
        )
        most = self._deps.settings.sources.max_per_agent
        async with self._db.write() as tx:
            if await store.count_of_agent(tx, agent_id) >= most:
                raise ValidationFailed(f"This agent has {most} sources, the most it may have")
            await store.insert(tx, found)
            await audit.record_in(
                tx,
                actor,
                "source.created",
                target_type="source",
                target_id=found.id,
                label=found.url,
            )
        self._deps.syncer.start(found.id)
        return found

    async def get(self, team_id: str, source_id: str) -> tuple[Source, PageCounts]:
        found = await store.get(self._db.reader, source_id)
        if found is None or found.team_id != team_id:
            raise NotFound("Source not found")
        return found, await store.counts(self._db.reader, found.id)

    async def of_agent(self, team_id: str, agent_id: str) -> list[tuple[Source, PageCounts]]:
        await check_agent(self._db, team_id, agent_id)
        found = await store.of_agent(self._db.reader, agent_id)
        return [(s, await store.counts(self._db.reader, s.id)) for s in found]

    async def update(
        self, team_id: str, plan_id: str, source_id: str, given: SourceChanges
    ) -> tuple[Source, PageCounts]:
        """Change a source's patterns, page limit or schedule (its next sync uses them)."""
        found, _ = await self.get(team_id, source_id)
        include = found.include if given.include is None else given.include
        exclude = found.exclude if given.exclude is None else given.exclude
        Globs(include, exclude)
        schedule = given.schedule or found.schedule
        max_pages = found.max_pages
        if given.max_pages is not None and found.type != "url":
            max_pages = self._max_pages(plan_id, given.max_pages)
        next_at = found.next_sync_at
        if schedule != found.schedule:
            next_at = next_sync_at(self._deps.settings.sources, schedule)
        changed = replace(
            found,
            include=include,
            exclude=exclude,
            max_pages=max_pages,
            schedule=schedule,
            next_sync_at=next_at,
            updated_at=now_iso(),
        )
        async with self._db.write() as tx:
            await store.update_settings(tx, changed)
        return await self.get(team_id, source_id)

    async def delete(self, actor: Actor, source_id: str) -> None:
        """Delete a source with its pages and the documents they made."""
        found, _ = await self.get(actor.team_id, source_id)
        async with self._db.write() as tx:
            await store.delete(tx, found.id)
            await audit.record_in(
                tx,
                actor,
                "source.deleted",
                target_type="source",
                target_id=found.id,
                label=found.url,
            )
        if self._deps.semantic_on:
            await self._db.announce(changes.vectors(found.agent_id))

    async def sync(self, team_id: str, source_id: str) -> tuple[Source, PageCounts]:
        """Start a sync now (nothing new when one is asked for or under way)."""
        found, _ = await self.get(team_id, source_id)
        async with self._db.write() as tx:
            await store.queue(tx, found.id, now_iso())
        self._deps.syncer.start(found.id)
        return await self.get(team_id, source_id)

    async def pages(self, team_id: str, source_id: str, after: str, limit: int) -> list[SourcePage]:
        found, _ = await self.get(team_id, source_id)
        return await store.pages(self._db.reader, found.id, after, limit)

    async def progress(
        self, team_id: str, source_id: str
    ) -> AsyncIterator[tuple[Source, PageCounts]]:
        """The source each time its sync moves on, until the sync ends (read from the
        database, so a sync another process works on is followed the same way)."""
        last = await self.get(team_id, source_id)
        yield last
        poll = self._deps.settings.sources.progress_poll_seconds
        while last[0].status in ("queued", "syncing"):
            await asyncio.sleep(poll)
            found = await store.get(self._db.reader, source_id)
            if found is None:
                return
            now = (found, await store.counts(self._db.reader, found.id))
            if (now[0].status, now[1], now[0].removed) != (
                last[0].status,
                last[1],
                last[0].removed,
            ):
                yield now
            last = now
