"""An agent's versions: the list, one version, the diff of two, and restoring one."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field

from agentsvc.api.agents import agent_json, agents_service
from agentsvc.api.audit import CURSOR_PAGINATION_SCHEMA, actor_of
from agentsvc.api.cursors import MAX_CURSOR_LENGTH, decode_cursor, encode_cursor
from agentsvc.api.models import QueryModel, ResponseModel
from agentsvc.api.routing import Call, RouteTable, envelope_response
from agentsvc.errors import NotFound, ValidationFailed
from agentsvc.services.agents import versions
from agentsvc.services.agents.service import version_view
from agentsvc.store.agent_versions import AgentVersion

routes = RouteTable("agents")

VERSIONS = "/agents/{id}/versions"
VERSION = VERSIONS + "/{n}"


def _number(call: Call, name: str) -> int:
    text = call.params[name]
    if not (text.isascii() and text.isdigit() and len(text) <= 9 and int(text) > 0):
        raise NotFound(f"This agent has no version {text[:20]!r}")
    return int(text)


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


class VersionDiff(ResponseModel):
    from_: int = Field(alias="from")
    to: int
    changes: list[FieldChange]


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
        if not key[1].isdigit():
            raise ValidationFailed("cursor: not a cursor returned by this API (use nextCursor)")
        below = int(key[1])
    agent = await agents_service(call).get(call.team_id, call.params["id"])
    found, more = await agents_service(call).versions(call.team_id, agent.id, query.limit, below)
    cursor = encode_cursor(found[-1].created_at, str(found[-1].number)) if more else None
    return envelope_response(
        [version_json(v, agent.version) for v in found],
        pagination={"limit": query.limit, "nextCursor": cursor},
    )


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
    """What changed from version n to version m (a prompt also as a line diff)."""
    old, new = _number(call, "n"), _number(call, "m")
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
            "agent": agent_json(call, agent),
        },
    )
