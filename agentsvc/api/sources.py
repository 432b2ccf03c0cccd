"""Knowledge sources: sites an agent's knowledge follows, their syncs, pages and progress."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field
from pydantic.json_schema import SkipJsonSchema

from agentsvc.api.audit import actor_of
from agentsvc.api.documents import knowledge_of
from agentsvc.api.models import QueryModel, RequestModel, ResponseModel
from agentsvc.api.progress_stream import progress_stream
from agentsvc.api.routing import Call, RouteTable, envelope_response
from agentsvc.services.knowledge.sources.service import NewSource, SourceChanges, SourcesService
from agentsvc.store.sources import PageCounts, Source, SourcePage

routes = RouteTable("sources")


Glob = Annotated[str, Field(min_length=1, max_length=300)]
Globs = Annotated[list[Glob], Field(max_length=50)]
Schedule = Literal["off", "hourly", "daily", "weekly"]
MaxPages = Annotated[int, Field(ge=1, le=1_000_000)]


def _sources(call: Call) -> SourcesService:
    return knowledge_of(call).sources  # sources are part of the knowledge feature


class KnowledgeSourceCreate(RequestModel):
    type: Literal["sitemap", "crawl", "url"] = Field(
        description="sitemap: the pages a sitemap (or sitemap index) lists; crawl: a start"
        " page and the site's pages it links to; url: one page"
    )
    url: Annotated[str, Field(min_length=1, max_length=2000)]
    include: Globs = Field([], description="globs over a page's path: `*`, `**`, `?`, `[a-z]`")
    exclude: Globs = []
    max_pages: MaxPages | SkipJsonSchema[None] = Field(
        None, description="at most this many pages (absent: as many as the plan allows)"
    )
    schedule: Schedule = "daily"


class KnowledgeSourcePatch(RequestModel):
    include: Globs | SkipJsonSchema[None] = None
    exclude: Globs | SkipJsonSchema[None] = None
    max_pages: MaxPages | SkipJsonSchema[None] = None
    schedule: Schedule | SkipJsonSchema[None] = None


class KnowledgeSourcePagesQuery(QueryModel):
    after: Annotated[str, Field(max_length=2000, description="pages after this URL")] = ""
    limit: Annotated[int, Field(ge=1, le=1000)] = 100


class KnowledgeSourcePageCounts(ResponseModel):
    found: int = Field(description="pages the last sync found")
    fetched: int = Field(description="pages it fetched (unchanged ones answer 304)")
    changed: int = Field(description="pages whose text changed, indexed again")
    failed: int
    removed: int = Field(description="pages gone from the site, removed with their documents")


class KnowledgeSourceOut(ResponseModel):
    id: str
    agent_id: str
    type: Literal["sitemap", "crawl", "url"]
    url: str
    include: list[str]
    exclude: list[str]
    max_pages: int
    schedule: Schedule
    status: Literal["queued", "syncing", "ready", "failed"]
    error: str | None
    pages: KnowledgeSourcePageCounts
    last_sync_at: str | None
    next_sync_at: str | None
    created_at: str
    updated_at: str


class KnowledgeSourcePageOut(ResponseModel):
    url: str
    status: Literal["pending", "ok", "failed", "duplicate", "skipped"]
    document_id: str | None
    last_change_at: str | None = Field(description="when a sync last found its text changed")
    fetched_at: str | None
    error: str | None


class KnowledgeSourceDeleted(ResponseModel):
    id: str
    deleted: bool


def source_json(found: Source, counts: PageCounts) -> dict[str, Any]:
    return {
        "id": found.id,
        "agentId": found.agent_id,
        "type": found.type,
        "url": found.url,
        "include": found.include,
        "exclude": found.exclude,
        "maxPages": found.max_pages,
        "schedule": found.schedule,
        "status": found.status,
        "error": found.error,
        "pages": {
            "found": counts.found,
            "fetched": counts.fetched,
            "changed": counts.changed,
            "failed": counts.failed,
            "removed": found.removed,
        },
        "lastSyncAt": found.last_sync_at,
        "nextSyncAt": found.next_sync_at,
        "createdAt": found.created_at,
        "updatedAt": found.updated_at,
    }


def page_json(page: SourcePage) -> dict[str, Any]:
    return {
        "url": page.url,
        "status": page.status,
        "documentId": page.document_id,
        "lastChangeAt": page.changed_at,
        "fetchedAt": page.fetched_at,
        "error": page.error,
    }


def _plan(call: Call) -> str:
    principal = call.principal
    assert principal is not None
    return principal.plan


@routes.post(
    "/agents/{id}/sources",
    body=KnowledgeSourceCreate,
    response=KnowledgeSourceOut,
    envelope=True,
    status=201,
    errors=(400, 404),
)
async def create_source(call: Call):
    """Add a source to the agent; its first sync starts at once (follow it at
    GET /sources/{id}/events)."""
    body: KnowledgeSourceCreate = call.body
    new = NewSource(body.type, body.url, body.include, body.exclude, body.max_pages, body.schedule)
    found = await _sources(call).create(actor_of(call), _plan(call), call.params["id"], new)
    return envelope_response(source_json(found, PageCounts()), status=201)


@routes.get("/agents/{id}/sources", response=list[KnowledgeSourceOut], envelope=True, errors=(404,))
async def list_sources(call: Call):
    """The agent's sources, newest first."""
    found = await _sources(call).of_agent(call.team_id, call.params["id"])
    return envelope_response([source_json(s, c) for s, c in found])


@routes.get("/sources/{id}", response=KnowledgeSourceOut, envelope=True, errors=(404,))
async def get_source(call: Call):
    """A source and its last sync's figures."""
    return envelope_response(
        source_json(*await _sources(call).get(call.team_id, call.params["id"]))
    )


@routes.patch(
    "/sources/{id}",
    body=KnowledgeSourcePatch,
    response=KnowledgeSourceOut,
    envelope=True,
    errors=(400, 404),
)
async def update_source(call: Call):
    """Change a source's patterns, page limit or schedule (its next sync follows them)."""
    body: KnowledgeSourcePatch = call.body
    given = SourceChanges(body.include, body.exclude, body.max_pages, body.schedule)
    found = await _sources(call).update(call.team_id, _plan(call), call.params["id"], given)
    return envelope_response(source_json(*found))


@routes.delete("/sources/{id}", response=KnowledgeSourceDeleted, envelope=True, errors=(404,))
async def delete_source(call: Call):
    """Delete a source, its pages and the documents they made."""
    await _sources(call).delete(actor_of(call), call.params["id"])
    return envelope_response({"id": call.params["id"], "deleted": True})


@routes.post(
    "/sources/{id}/sync", response=KnowledgeSourceOut, envelope=True, status=202, errors=(404,)
)
async def sync_source(call: Call):
    """Sync the source now (nothing new when a sync is asked for or under way)."""
    found = await _sources(call).sync(call.team_id, call.params["id"])
    return envelope_response(source_json(*found), status=202)


@routes.get(
    "/sources/{id}/pages",
    query=KnowledgeSourcePagesQuery,
    response=list[KnowledgeSourcePageOut],
    envelope=True,
    errors=(404,),
)
async def list_pages(call: Call):
    """The source's pages in URL order: each one's status, last change and error."""
    query: KnowledgeSourcePagesQuery = call.query
    found = await _sources(call).pages(call.team_id, call.params["id"], query.after, query.limit)
    return envelope_response([page_json(p) for p in found])


@routes.get("/sources/{id}/events", stream=True, errors=(404,))
async def source_events(call: Call):
    """The sync's progress as Server-Sent Events: `progress` each time it moves on, then
    `end` with the source as GET /sources/{id} shows it."""
    sources = _sources(call)
    await sources.get(call.team_id, call.params["id"])  # 404 before the stream opens
    updates = sources.progress(call.team_id, call.params["id"])
    return await progress_stream(call, (source_json(s, c) async for s, c in updates))
