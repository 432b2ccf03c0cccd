"""SCIM 2.0 provisioning (RFC 7643/7644): the team's token (owners), and `/scim/v2`, where
an identity provider creates, changes and removes the team's people and groups.

SCIM speaks SCIM, the one exception to the envelope: answers are `application/scim+json`,
errors are RFC 7644 §3.12's `{schemas, status, scimType, detail}`. The provider's bearer
token is checked before anything of the request is read, and each call takes a token of
the team's rate limit.
"""

from __future__ import annotations

from typing import Any

import orjson
from aiohttp import web

from agentsvc.api import app_keys, auth, scim_discovery
from agentsvc.api.audit import actor_of
from agentsvc.api.errors import status_of
from agentsvc.api.limits import take_token
from agentsvc.api.routing import Call, RouteTable, json_response
from agentsvc.api.scim_models import (
    ScimDocument,
    ScimGetQuery,
    ScimGroupIn,
    ScimGroupList,
    ScimGroupOut,
    ScimListQuery,
    ScimPatchIn,
    ScimStatusOut,
    ScimTokenOut,
    ScimUserIn,
    ScimUserList,
    ScimUserOut,
)
from agentsvc.api.session_auth import Success
from agentsvc.api.state import request_deps
from agentsvc.errors import DomainError, Unauthorized, ValidationFailed
from agentsvc.services.scim import resources
from agentsvc.services.scim.service import MAX_PAGE, Caller, GroupView, Page, ScimService, UserView

routes = RouteTable("scim")

MEDIA = "application/scim+json"
ERROR_SCHEMA = "urn:ietf:params:scim:api:messages:2.0:Error"
MAX_BODY_MB = 0.5  # a group's members come in batches; nothing needs more
NO_TOKEN = "Send the team's SCIM token as Authorization: Bearer <token>"  # noqa: S105
BAD_TOKEN = "This SCIM token is not valid: it was revoked, replaced or never made"  # noqa: S105
_SCIM_TYPES = {409: "uniqueness"}


def _scim(call: Call) -> ScimService:
    return _service(call.app)


def _service(app: web.Application) -> ScimService:
    return app[app_keys.scim_key]


def _caller(call: Call) -> Caller:
    return call.request[app_keys.scim_caller_key]


def scim_error(error: DomainError) -> web.Response:
    """An error as RFC 7644 §3.12 writes it (status as text, a scimType where one fits)."""
    status = status_of(error)
    body: dict[str, Any] = {"schemas": [ERROR_SCHEMA], "status": str(status)}
    scim_type = getattr(error, "scim_type", None) or _SCIM_TYPES.get(status)
    if scim_type is None and isinstance(error, ValidationFailed):
        syntax = error.message.startswith("body:")
        scim_type = "invalidSyntax" if syntax else "invalidValue"
    if scim_type:
        body["scimType"] = scim_type
    body["detail"] = error.message
    return web.Response(
        body=orjson.dumps(body),
        status=status,
        content_type=MEDIA,
        headers=getattr(error, "headers", None) or {},
    )


def scim_response(payload: Any, status: int = 200, location: str | None = None) -> web.Response:
    headers = {"Location": location} if location else None
    return web.Response(
        body=orjson.dumps(payload), status=status, content_type=MEDIA, headers=headers
    )


async def _authenticate(request: web.Request, _principal: object) -> None:
    """The team of the bearer token, its rate limit taken; 401 before anything is read."""
    token = auth.bearer_token(request)
    if token is None:
        raise Unauthorized(NO_TOKEN)
    caller = await _service(request.app).caller(token, request.remote)
    if caller is None:
        raise Unauthorized(BAD_TOKEN)
    per_minute = request_deps(request).settings.plans.limits(caller.plan).requests_per_minute
    if per_minute is not None:
        message = f"Rate limit of {per_minute} requests per minute exceeded"
        await take_token(request, f"team:{caller.team_id}", per_minute, message, report=True)
    request[app_keys.scim_caller_key] = caller


# -- shaping -----------------------------------------------------------------------------


def _base(call: Call) -> str:
    return _scim(call).base_url()


def user_json(view: UserView, base: str) -> dict[str, Any]:
    row = view.row
    attributes = dict(view.attributes)
    attributes.setdefault("emails", [{"value": row.email, "type": "work", "primary": True}])
    body: dict[str, Any] = {
        "schemas": [resources.USER_SCHEMA],
        "id": row.user_id,
        "userName": row.email,
        "active": row.active,
        **attributes,
        "groups": [
            {"value": gid, "display": name, "$ref": f"{base}/Groups/{gid}"}
            for gid, name in view.groups
        ],
        "meta": {
            "resourceType": "User",
            "created": row.created_at,
            "lastModified": row.updated_at,
            "location": f"{base}/Users/{row.user_id}",
        },
    }
    if row.external_id is not None:
        body["externalId"] = row.external_id
    return body


def group_json(view: GroupView, base: str, *, members: bool = True) -> dict[str, Any]:
    row = view.row
    body: dict[str, Any] = {
        "schemas": [resources.GROUP_SCHEMA],
        "id": row.id,
        "displayName": row.display_name,
        "meta": {
            "resourceType": "Group",
            "created": row.created_at,
            "lastModified": row.updated_at,
            "location": f"{base}/Groups/{row.id}",
        },
    }
    if members:
        body["members"] = [
            {"value": uid, "display": email, "$ref": f"{base}/Users/{uid}"}
            for uid, email in view.members
        ]
    if row.external_id is not None:
        body["externalId"] = row.external_id
    return body


def _list_json(page: Page, items: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "schemas": [scim_discovery.LIST_SCHEMA],
        "totalResults": page.total,
        "startIndex": page.start_index,
        "itemsPerPage": len(items),
        "Resources": items,
    }


def _paging(query: ScimListQuery) -> tuple[int, int]:
    start = max(1, query.start_index or 1)
    count = MAX_PAGE if query.count is None else max(0, min(query.count, MAX_PAGE))
    return start, count


def _without_members(query: ScimListQuery | ScimGetQuery) -> bool:
    excluded = (query.excluded_attributes or "").lower()
    return "members" in {a.strip() for a in excluded.split(",")}


def _body(call: Call) -> dict[str, Any]:
    return call.body.model_dump(by_alias=True, exclude_unset=True)


# -- the token (the team's owners) --------------------------------------------------------


def _status_json(status) -> dict[str, Any]:
    return {"enabled": status.enabled, "createdAt": status.created_at, "baseUrl": status.base_url}


@routes.get("/team/scim", response=ScimStatusOut)
async def get_team_scim(call: Call):
    """Whether SCIM provisioning is on for the team and the base URL to paste (never the
    token)."""
    return json_response(_status_json(await _scim(call).status(call.team_id)))


@routes.post("/team/scim-token", response=ScimTokenOut, status=201, owner_only=True)
async def post_team_scim_token(call: Call):
    """Make the team's SCIM token (owners): shown this once; an earlier one stops at once."""
    token, status = await _scim(call).create_token(call.team_id, actor_of(call))
    return json_response({"token": token, **_status_json(status)}, status=201)


@routes.delete("/team/scim-token", response=Success, owner_only=True, errors=(404,))
async def delete_team_scim_token(call: Call):
    """Revoke the team's SCIM token (owners): provisioning stops at once."""
    await _scim(call).revoke_token(call.team_id, actor_of(call))
    return json_response({"success": True})


# -- /scim/v2 ----------------------------------------------------------------------------

_SCIM: dict[str, Any] = dict(
    auth="public",
    media_type=MEDIA,
    render_error=scim_error,
    extra={"scim": True},
)
_TOKEN: dict[str, Any] = dict(
    _SCIM, precheck=_authenticate, errors=(401, 429), max_body_mb=MAX_BODY_MB
)


def _with(**changes: Any) -> dict[str, Any]:
    merged = {**_TOKEN, **changes}
    merged["errors"] = tuple(sorted({*_TOKEN["errors"], *changes.get("errors", ())}))
    return merged


@routes.get("/scim/v2/ServiceProviderConfig", response=ScimDocument, **_SCIM)
async def get_scim_config(call: Call):
    """What this SCIM service supports (no token needed)."""
    return scim_response(scim_discovery.service_provider_config(_base(call)))


@routes.get("/scim/v2/ResourceTypes", response=ScimDocument, **_SCIM)
async def get_scim_resource_types(call: Call):
    """The resource types: User and Group (no token needed)."""
    return scim_response(scim_discovery.resource_types(_base(call)))


@routes.get("/scim/v2/Schemas", response=ScimDocument, **_SCIM)
async def get_scim_schemas(call: Call):
    """The User and Group schemas, with the attributes kept (no token needed)."""
    return scim_response(scim_discovery.schemas(_base(call)))


@routes.get("/scim/v2/Users", query=ScimListQuery, response=ScimUserList, **_with())
async def list_scim_users(call: Call):
    """The team's provisioned people: `filter=userName eq "…"` or `externalId eq "…"`."""
    where = resources.parse_filter(call.query.filter, ("userName", "externalId"))
    start, count = _paging(call.query)
    page = await _scim(call).list_users(_caller(call).team_id, where, start, count)
    base = _base(call)
    return scim_response(_list_json(page, [user_json(v, base) for v in page.items]))


@routes.post(
    "/scim/v2/Users", body=ScimUserIn, response=ScimUserOut, status=201, **_with(errors=(403, 409))
)
async def post_scim_user(call: Call):
    """Provision a person at one of the team's SSO domains: they become a member."""
    fields = resources.user_from_resource(_body(call))
    view = await _scim(call).create_user(_caller(call), fields)
    body = user_json(view, _base(call))
    return scim_response(body, 201, body["meta"]["location"])


@routes.get("/scim/v2/Users/{id}", query=ScimGetQuery, response=ScimUserOut, **_with())
async def get_scim_user(call: Call):
    """A provisioned person."""
    view = await _scim(call).get_user(_caller(call).team_id, call.params["id"])
    return scim_response(user_json(view, _base(call)))


@routes.put("/scim/v2/Users/{id}", body=ScimUserIn, response=ScimUserOut, **_with(errors=(403,)))
async def put_scim_user(call: Call):
    """Replace a person's attributes; `active: false` takes them out of the team."""
    fields = resources.user_from_resource(_body(call))
    view = await _scim(call).replace_user(_caller(call), call.params["id"], fields)
    return scim_response(user_json(view, _base(call)))


@routes.patch("/scim/v2/Users/{id}", body=ScimPatchIn, response=ScimUserOut, **_with(errors=(403,)))
async def patch_scim_user(call: Call):
    """Change a person by PATCH operations (Entra ID's and Okta's forms); `active: false`
    takes them out of the team, `active: true` brings them back as a member."""
    view = await _scim(call).patch_user(_caller(call), call.params["id"], _body(call))
    return scim_response(user_json(view, _base(call)))


@routes.delete("/scim/v2/Users/{id}", status=204, **_with(errors=(403,)))
async def delete_scim_user(call: Call):
    """Deprovision a person: out of the team, sessions and API keys in it ended."""
    await _scim(call).delete_user(_caller(call), call.params["id"])
    return web.Response(status=204)


@routes.get("/scim/v2/Groups", query=ScimListQuery, response=ScimGroupList, **_with())
async def list_scim_groups(call: Call):
    """The team's groups: `filter=displayName eq "…"`."""
    where = resources.parse_filter(call.query.filter, ("displayName",))
    start, count = _paging(call.query)
    name = where[1] if where else None
    page = await _scim(call).list_groups(_caller(call).team_id, name, start, count)
    base, members = _base(call), not _without_members(call.query)
    items = [group_json(v, base, members=members) for v in page.items]
    return scim_response(_list_json(page, items))


@routes.post(
    "/scim/v2/Groups",
    body=ScimGroupIn,
    response=ScimGroupOut,
    status=201,
    **_with(errors=(403, 409)),
)
async def post_scim_group(call: Call):
    """Create a group; its members get the role `roleMapping` gives its displayName."""
    fields = resources.group_from_resource(_body(call))
    view = await _scim(call).create_group(_caller(call), fields)
    body = group_json(view, _base(call))
    return scim_response(body, 201, body["meta"]["location"])


@routes.get("/scim/v2/Groups/{id}", query=ScimGetQuery, response=ScimGroupOut, **_with())
async def get_scim_group(call: Call):
    """A group with its members."""
    view = await _scim(call).get_group(_caller(call).team_id, call.params["id"])
    return scim_response(group_json(view, _base(call), members=not _without_members(call.query)))


@routes.put("/scim/v2/Groups/{id}", body=ScimGroupIn, response=ScimGroupOut, **_with(errors=(409,)))
async def put_scim_group(call: Call):
    """Replace a group's name and members."""
    fields = resources.group_from_resource(_body(call))
    view = await _scim(call).replace_group(_caller(call), call.params["id"], fields)
    return scim_response(group_json(view, _base(call)))


@routes.patch(
    "/scim/v2/Groups/{id}", body=ScimPatchIn, response=ScimGroupOut, **_with(errors=(409,))
)
async def patch_scim_group(call: Call):
    """Add or remove members (Entra ID's and Okta's forms), or rename the group."""
    changes = resources.group_changes(_body(call))
    view = await _scim(call).patch_group(_caller(call), call.params["id"], changes)
    return scim_response(group_json(view, _base(call)))


@routes.delete("/scim/v2/Groups/{id}", status=204, **_with())
async def delete_scim_group(call: Call):
    """Delete a group: its members' roles follow their other groups."""
    await _scim(call).delete_group(_caller(call), call.params["id"])
    return web.Response(status=204)
