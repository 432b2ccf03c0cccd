"""The audit log (owner only), and who a call's actor is for the services that record."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field

from agentsvc.api import app_keys
from agentsvc.api.conversations import PAGINATION_SCHEMA
from agentsvc.api.cursors import MAX_CURSOR_LENGTH, decode_cursor, encode_cursor
from agentsvc.api.models import QueryModel, ResponseModel
from agentsvc.api.routing import Call, RouteTable, envelope_response
from agentsvc.services import audit
from agentsvc.services.audit import Actor, AuditService
from agentsvc.store.audit_log import LoggedEntry

routes = RouteTable("audit-log")


def _audit(call: Call) -> AuditService:
    return call.app[app_keys.audit_key]


def actor_of(call: Call) -> Actor:
    """The caller as the audit log names them: user, team, key or session, address."""
    principal = call.principal
    assert principal is not None
    return Actor(
        user_id=principal.user_id,
        team_id=principal.team_id,
        key_id=principal.key_id,
        session_id=principal.session_id,
        ip=call.request.remote,
    )


class AuditQuery(QueryModel):
    action: Annotated[
        str | None,
        Field(
            max_length=83,
            pattern=audit.ACTION_PATTERN,
            description="only this action, e.g. agent.deleted",
        ),
    ] = None
    limit: Annotated[int, Field(ge=1, le=100)] = 50
    cursor: Annotated[str | None, Field(min_length=1, max_length=MAX_CURSOR_LENGTH)] = None


class AuditActor(ResponseModel):
    user_id: str | None
    email: str | None
    name: str | None
    via: str = Field(description="apiKey, session, or system")
    key_id: str | None
    key_name: str | None
    ip: str | None


class AuditTarget(ResponseModel):
    type: str | None
    id: str | None
    label: str | None = Field(
        description="a name, URL or address; an end user only as sha256: of their reference"
    )


class AuditEntryOut(ResponseModel):
    id: str
    action: str
    actor: AuditActor
    target: AuditTarget
    details: dict[str, Any] | None
    created_at: str


def entry_json(logged: LoggedEntry) -> dict[str, Any]:
    entry = logged.entry
    via = "apiKey" if entry.actor_key_id else "session" if entry.actor_session_id else "system"
    return {
        "id": entry.id,
        "action": entry.action,
        "actor": {
            "userId": entry.actor_user_id,
            "email": logged.actor_email,
            "name": logged.actor_name,
            "via": via,
            "keyId": entry.actor_key_id,
            "keyName": logged.key_name,
            "ip": entry.actor_ip,
        },
        "target": {
            "type": entry.target_type,
            "id": entry.target_id,
            "label": entry.target_label,
        },
        "details": entry.details,
        "createdAt": entry.created_at,
    }


def _next_cursor(entries: list[LoggedEntry], more: bool) -> str | None:
    # The key of the last entry is its time and its place in the order of recording.
    if not more or not entries:
        return None
    return encode_cursor(entries[-1].created_at, str(entries[-1].seq))


CURSOR_PAGINATION_SCHEMA = {
    "type": "object",
    "required": ["limit", "nextCursor"],
    "properties": {
        "limit": PAGINATION_SCHEMA["properties"]["limit"],
        "nextCursor": PAGINATION_SCHEMA["properties"]["nextCursor"],
    },
}


@routes.get(
    "/audit-log",
    query=AuditQuery,
    response=list[AuditEntryOut],
    envelope=True,
    owner_only=True,
    errors=(400, 403),
    extra={"envelope_extra": {"properties_extra": {"pagination": CURSOR_PAGINATION_SCHEMA}}},
)
async def get_audit_log(call: Call):
    """Who did what in the team, newest first (owner only)."""
    query: AuditQuery = call.query
    entries, more = await _audit(call).list_entries(
        call.team_id, query.action, query.limit, decode_cursor(query.cursor)
    )
    return envelope_response(
        [entry_json(e) for e in entries],
        pagination={"limit": query.limit, "nextCursor": _next_cursor(entries, more)},
    )
