"""An agent's versions: the list, one version, the diff of two, and restoring one."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field
from pydantic.json_schema import SkipJsonSchema

from agentsvc.api.agents import DraftOut, agent_json, agents_service, draft_json
from agentsvc.api.audit import CURSOR_PAGINATION_SCHEMA, actor_of
from agentsvc.api.cursors import MAX_CURSOR_LENGTH, decode_cursor, encode_cursor
from agentsvc.api.models import QueryModel, RequestModel, ResponseModel
from agentsvc.api.routing import Call, RouteTable, envelope_response
from agentsvc.errors import Forbidden, NotFound, ValidationFailed
from agentsvc.services.agents import versions
from agentsvc.services.agents.service import AgentsService, version_view
from agentsvc.store.agent_versions import AgentVersion

routes = RouteTable("agents")

VERSIONS = "/agents/{id}/versions"
VERSION = VERSIONS + "/{n}"


def _number(call: Call, name: str) -> int:
    text = call.params[name]
    if not (text.isascii() and text.isdigit() and len(text) <= 9 and int(text) > 0):
        raise NotFound(f"This agent has no version {text[:20]!r}")
    return int(text)


def _ref(call: Call, name: str) -> int | str:
    """A version's number, or "draft"."""
    return "draft" if call.params[name] == "draft" else _number(call, name)


class PublishBody(RequestModel):
    note: Annotated[str, Field(max_length=500)] | SkipJsonSchema[None] = Field(
        None, description="what changed, for the versions' list"
    )
    force: bool | SkipJsonSchema[None] = Field(
        None, description="the owner only: publish without the publish gate's evaluation"
    )


class VersionsQuery(QueryModel):
    limit: Annotated[int, Field(ge=1, le=100)] = 50
    cursor: Annotated[str | None, Field(min_length=1, max_length=MAX_CURSOR_LENGTH)] = None


class VersionAuthor(ResponseModel):
    user_id: str | None = Field(description="the member who made it (null: the server)")
    name: str | None = Field(description="the member's name now")
    via: Literal["apiKey", "session", "system"]
    key_name: str | None = Field(description="the API key's name, when made through one")


class VersionOut(ResponseModel):
    number: int
    created_at: str
    author: VersionAuthor
    note: str
    live: bool = Field(description="the version the agent answers with now")


class HandoffSnapshot(ResponseModel):
    enabled: bool
    business_hours: dict[str, Any] | None
    offline_message: str
    notify: dict[str, Any]


class Snapshot(ResponseModel):
    system_prompt: str
    model: str
    temperature: float
    language: str
    handoff: HandoffSnapshot
    tools: list[dict[str, Any]] | None = Field(
        description="the agent's tools as GET /tools shows them (without a form's signing"
        " secret); null for a version older than tools' keeping"
    )


class VersionDetail(VersionOut):
    snapshot: Snapshot = Field(description="what the agent did in this version")


class FieldChange(ResponseModel):
    field: Literal[tuple(versions.FIELDS)]  # type: ignore[valid-type]
    before: Any
    after: Any
    lines: list[str] | None = Field(
        None,
        description="systemPrompt only: a unified diff of its lines (two lines of context);"
        " null when either side is over 5,000 lines",
    )
    added: list[str] | None = Field(None, description="tools only: the tools added, by name")
    removed: list[str] | None = Field(None, description="tools only: the tools removed")
    changed: list[str] | None = Field(None, description="tools only: the tools changed")


class VersionDiff(ResponseModel):
    from_: int | Literal["draft"] = Field(alias="from")
    to: int | Literal["draft"]
    changes: list[FieldChange]


class PublishedOut(ResponseModel):
    version: VersionOut = Field(description="the new live version")
    agent: dict[str, Any] = Field(description="the agent, as GET /agents/{id} shows it")


class DiscardedOut(ResponseModel):
    discarded: bool
    agent: dict[str, Any] = Field(description="the agent, as GET /agents/{id} shows it")


class RestoredOut(ResponseModel):
    version: VersionOut = Field(description="the live version: the new one, or the same")
    restored: bool = Field(description="false when the agent already did what it did")
    agent: dict[str, Any] = Field(description="the agent, as GET /agents/{id} shows it")


def version_json(version: AgentVersion, live: int) -> dict[str, Any]:
    via = "apiKey" if version.author_key_id else "session" if version.author_user_id else "system"
    return {
        "number": version.number,
        "createdAt": version.created_at,
        "author": {
            "userId": version.author_user_id,
            "name": version.author_name or None,
            "via": via,
            "keyName": version.key_name,
        },
        "note": version.note,
        "live": version.number == live,
    }


@routes.get(
    VERSIONS,
    query=VersionsQuery,
    response=list[VersionOut],
    envelope=True,
    errors=(400, 404),
    extra={"envelope_extra": {"properties_extra": {"pagination": CURSOR_PAGINATION_SCHEMA}}},
)
async def list_versions(call: Call):
    """The agent's versions, newest first."""
    query: VersionsQuery = call.query
    below = None
    key = decode_cursor(query.cursor)
    if key is not None:
        if not (key[1].isascii() and key[1].isdigit() and len(key[1]) <= 9):
            raise ValidationFailed("cursor: not a cursor returned by this API (use nextCursor)")
        below = int(key[1])
    agent = await agents_service(call).get(call.team_id, call.params["id"])
    found, more = await agents_service(call).versions(call.team_id, agent.id, query.limit, below)
    cursor = encode_cursor(found[-1].created_at, str(found[-1].number)) if more else None
    return envelope_response(
        [version_json(v, agent.version) for v in found],
        pagination={"limit": query.limit, "nextCursor": cursor},
    )


@routes.get(VERSIONS + "/draft", response=DraftOut, envelope=True, errors=(404,))
async def get_draft(call: Call):
    """The agent's draft: what it will do once published (404 without one)."""
    agent = await agents_service(call).get(call.team_id, call.params["id"])
    return envelope_response(draft_json(AgentsService.draft_of(agent)))


@routes.post(
    "/agents/{id}/publish",
    body=PublishBody,
    response=PublishedOut,
    envelope=True,
    errors=(400, 403, 404, 409),
)
async def publish(call: Call):
    """Make the agent's draft live, as its next version (409 without a draft)."""
    body: PublishBody = call.body
    if body.force and not (call.principal and call.principal.is_owner):
        raise Forbidden("Only the team owner can publish past the publish gate (force)")
    agent, version = await agents_service(call).publish(
        actor_of(call), call.params["id"], body.note or "", bool(body.force)
    )
    return envelope_response(
        {"version": version_json(version, agent.version), "agent": await agent_json(call, agent)}
    )


@routes.delete("/agents/{id}/draft", response=DiscardedOut, envelope=True, errors=(404,))
async def discard_draft(call: Call):
    """Throw the agent's draft away (the live agent stays as it is)."""
    agent = await agents_service(call).discard_draft(actor_of(call), call.params["id"])
    return envelope_response({"discarded": True, "agent": await agent_json(call, agent)})


@routes.get(VERSION, response=VersionDetail, envelope=True, errors=(404,))
async def get_version(call: Call):
    """One version of the agent, with what it did."""
    number = _number(call, "n")
    agent = await agents_service(call).get(call.team_id, call.params["id"])
    version = await agents_service(call).version(call.team_id, agent.id, number)
    return envelope_response(
        {**version_json(version, agent.version), "snapshot": version_view(version.snapshot)}
    )


@routes.get(VERSION + "/diff/{m}", response=VersionDiff, envelope=True, errors=(404,))
async def diff_versions(call: Call):
    """What changed from version n to version m (a prompt also as a line diff); either may
    be `draft`."""
    old, new = _ref(call, "n"), _ref(call, "m")
    found = await agents_service(call).diff(call.team_id, call.params["id"], old, new)
    return envelope_response({"from": old, "to": new, "changes": found})


@routes.post(VERSION + "/restore", response=RestoredOut, envelope=True, errors=(400, 404))
async def restore_version(call: Call):
    """Make the agent do what version n did again, as a new version (the same live version
    when it already does)."""
    number = _number(call, "n")
    agent, restored = await agents_service(call).restore(actor_of(call), call.params["id"], number)
    live = await agents_service(call).version(call.team_id, agent.id, agent.version)
    return envelope_response(
        {
            "version": version_json(live, agent.version),
            "restored": restored,
            "agent": await agent_json(call, agent),
        },
    )
