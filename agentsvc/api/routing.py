"""The route table: each endpoint's handler with the models it validates and answers with.

An `Endpoint` carries everything the HTTP layer needs to run a handler (authentication,
role, body and query models, body size) and everything the OpenAPI document says about it,
so the document cannot drift from what the handlers accept.
"""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import orjson
from aiohttp import web
from pydantic import BaseModel, ValidationError

from agentsvc import telemetry
from agentsvc.api import app_keys, auth
from agentsvc.api.bodies import BodySlot, is_large, read_body
from agentsvc.api.errors import PayloadTooLarge, ServerBusy, error_response
from agentsvc.api.pipeline import finish_response, from_http_exception, unexpected_error
from agentsvc.api.proxies import TrustedProxies
from agentsvc.api.state import RequestDeps, RequestState, request_deps
from agentsvc.config import Settings
from agentsvc.errors import (
    DomainError,
    Forbidden,
    UnsupportedMediaType,
    ValidationFailed,
)
from agentsvc.observability import RequestStats
from agentsvc.services.team.access import Principal
from agentsvc.validation_messages import describe_validation_error

API_PREFIX = "/api/v1"
# What the API answers while this process cannot reach its database (services/health.py).
DATABASE_AWAY_RETRY_SECONDS = 1


def database_away() -> ServerBusy:
    """The 503 of a request refused, untouched, while the database does not answer."""
    return ServerBusy(
        "This server cannot reach its database at the moment; nothing was done. Try again"
        " in a moment",
        headers={"Retry-After": str(DATABASE_AWAY_RETRY_SECONDS)},
    )


# A path parameter, `{name}` or `{name:regex}` (a regex without braces).
PATH_PARAM = re.compile(r"{([^}:]+)(?::([^}]*))?}")

AuthMode = Literal["required", "optional", "public"]


@dataclass(slots=True)
class Call:
    """One validated request, as a handler sees it."""

    request: web.Request
    principal: Principal | None
    body: Any
    query: Any
    params: Mapping[str, str]
    body_slot: BodySlot | None = None  # a large body's slot (see `api.bodies`)

    def release_body(self) -> None:
        """Drop the parsed body and give back its large-body slot; the handler must hold
        no reference to the body's big values any more."""
        self.body = None
        if self.body_slot is not None:
            self.body_slot.release()
            self.body_slot = None

    @property
    def app(self) -> web.Application:
        return self.request.app

    @property
    def team_id(self) -> str:
        assert self.principal is not None
        return self.principal.team_id


Handler = Callable[[Call], Awaitable[web.StreamResponse]]


@dataclass(slots=True)
class Endpoint:
    method: str
    path: str
    handler: Handler
    summary: str
    tag: str
    auth: AuthMode = "required"
    owner_only: bool = False
    body: type[BaseModel] | None = None
    query: type[BaseModel] | None = None
    response: Any = None  # a type pydantic can describe; None means no JSON body
    envelope: bool = False  # success body is {"data": response, "error": null}
    status: int = 200
    errors: tuple[int, ...] = ()
    stream: bool = False  # text/event-stream instead of JSON
    # Of the success body; several when a query parameter chooses (an export's format).
    media_type: str | tuple[str, ...] = "application/json"
    cors: bool = False  # callable from any site (the widget's endpoints)
    # Runs after authentication and before the body is read (a per-IP limit of a public
    # endpoint with large bodies must not wait for them), with the principal or None.
    precheck: Callable[[web.Request, Principal | None], Awaitable[None]] | None = None
    # Parses the JSON body instead of `parse_json` (e.g. leaving big values in the buffer).
    parse: Callable[[bytes | bytearray], Any] | None = None
    # A multipart/form-data body, described by this model in the OpenAPI document. The
    # framework checks its declared length only; the handler streams the parts itself
    # (`await call.request.multipart()`) and gets `call.body` None. With `body` also set,
    # the Content-Type chooses: multipart goes to the handler, anything else is JSON.
    form: type[BaseModel] | None = None
    # None: [server] max_body_mb; a callable computes the limit from the settings.
    max_body_mb: float | Callable[[Settings], float] | None = None
    below_api: bool = True  # path is under /api/v1
    response_headers: tuple[str, ...] = ()
    # Regular expressions of path parameters the service checks itself (a bad value is a
    # 400 naming the field, not a 404 of the router), for the OpenAPI document.
    path_patterns: dict[str, str] = field(default_factory=dict)
    # Renders this endpoint's errors instead of the envelope (SCIM speaks RFC 7644's).
    render_error: Callable[[DomainError], web.Response] | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def full_path(self) -> str:
        return API_PREFIX + self.path if self.below_api else self.path

    @property
    def documented_path(self) -> str:
        """The full path as documented: `{id}` without the router's pattern."""
        return PATH_PARAM.sub(r"{\1}", self.full_path)


class RouteTable:
    """A list of endpoints filled by decorators in each api module."""

    def __init__(self, tag: str):
        self.tag = tag
        self.endpoints: list[Endpoint] = []

    def route(self, method: str, path: str, **meta: Any) -> Callable[[Handler], Handler]:
        def register(handler: Handler) -> Handler:
            summary = meta.pop("summary", None) or (handler.__doc__ or "").strip().split("\n")[0]
            tag = meta.pop("tag", self.tag)
            endpoint = Endpoint(
                method=method, path=path, handler=handler, summary=summary, tag=tag, **meta
            )
            self.endpoints.append(endpoint)
            return handler

        return register

    def get(self, path: str, **meta: Any):
        return self.route("GET", path, **meta)

    def post(self, path: str, **meta: Any):
        return self.route("POST", path, **meta)

    def put(self, path: str, **meta: Any):
        return self.route("PUT", path, **meta)

    def patch(self, path: str, **meta: Any):
        return self.route("PATCH", path, **meta)

    def delete(self, path: str, **meta: Any):
        return self.route("DELETE", path, **meta)


def json_response(
    payload: Any, status: int = 200, headers: Mapping[str, str] | None = None
) -> web.Response:
    """A bare JSON response, serialised with orjson."""
    return web.Response(
        body=orjson.dumps(payload),
        status=status,
        content_type="application/json",
        headers=headers,
    )


def envelope_response(payload: Any, status: int = 200, **extra: Any) -> web.Response:
    """A `{"data": ..., "error": null}` response (plus top-level extras such as pagination)."""
    return json_response({"data": payload, "error": None, **extra}, status=status)


def envelope_bytes(payload: Any) -> bytes:
    """The body of `envelope_response(payload)`, for an answer kept as bytes."""
    return orjson.dumps({"data": payload, "error": None})


_JSON_HEADERS = {"Content-Type": "application/json"}


def bytes_response(body: bytes) -> web.Response:
    """A 200 JSON response of a body serialised before (see `envelope_bytes`)."""
    return web.Response(body=body, headers=_JSON_HEADERS)


def _parse_query(model: type[BaseModel], request: web.Request) -> BaseModel:
    data: dict[str, Any] = {}
    for name in request.query:
        values = request.query.getall(name)
        data[name] = values if len(values) > 1 else values[0]
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise ValidationFailed(describe_validation_error(exc, "query.", model)) from exc


def parse_json(raw: bytes | bytearray) -> Any:
    """Parse a JSON request body or raise VALIDATION_ERROR.

    A text holding the NUL character (U+0000) is refused: PostgreSQL cannot store one (it
    was a 500 there), no text needs one, and a spreadsheet skips it to run what follows.
    """
    try:
        data = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        if not raw.strip():
            raise ValidationFailed("body: a JSON object is required") from None
        raise ValidationFailed(f"body: malformed JSON ({exc.args[0]})") from exc
    # JSON can only carry a NUL escaped: bodies without the escape are not walked.
    if b"\\u0000" in raw and (where := _nul_at(data)) is not None:
        field = ".".join(where) or "body"
        raise ValidationFailed(f"{field}: must not contain the NUL character (U+0000)")
    return data


def _nul_at(data: Any) -> tuple[str, ...] | None:
    """The path of the first text (value or key) holding a NUL character, or None (walked
    with a stack: a body may nest as deep as the JSON parser allows)."""
    stack: list[tuple[Any, tuple[str, ...]]] = [(data, ())]
    while stack:
        value, path = stack.pop()
        if isinstance(value, str):
            if "\x00" in value:
                return path
        elif isinstance(value, dict):
            for key in value:
                if "\x00" in key:
                    return path
            stack.extend((item, (*path, key)) for key, item in reversed(value.items()))
        elif isinstance(value, list):
            stack.extend((item, (*path, str(i))) for i, item in reversed(list(enumerate(value))))
    return None


def validate_model(model: type[BaseModel], data: Any, prefix: str = "") -> BaseModel:
    """Validate data with a request model, turning errors into VALIDATION_ERROR."""
    if not isinstance(data, dict):
        raise ValidationFailed(f"{prefix or 'body'}: must be a JSON object")
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise ValidationFailed(describe_validation_error(exc, prefix, model)) from exc


@dataclass(frozen=True, slots=True)
class _Bound:
    """What an endpoint's wrapper reads from an application, once per application (the
    wrappers are shared by the applications of a process: see `app.py`)."""

    deps: RequestDeps
    stats: RequestStats
    proxies: TrustedProxies
    body_mb: float  # the endpoint's body limit


def _bind(endpoint: Endpoint, deps: RequestDeps) -> _Bound:
    settings = deps.settings
    if callable(endpoint.max_body_mb):
        body_mb = endpoint.max_body_mb(settings)
    else:
        body_mb = endpoint.max_body_mb or settings.server.max_body_mb
    proxies = TrustedProxies(settings.server.trusted_proxies)
    return _Bound(deps, deps.metrics.request_stats, proxies, body_mb)


async def _authorize(endpoint: Endpoint, request: web.Request) -> Principal | None:
    """The caller (None where authentication is optional and none was sent), its team's
    rate limit taken, a session's origin checked on changes, the owner's role where
    needed."""
    principal = await auth.authenticate(request)
    if principal is None:
        if endpoint.auth == "required":
            raise auth.missing_credential(request)
        return None
    await auth.enforce_rate_limit(request, principal)
    if endpoint.method != "GET":
        auth.check_origin(request, principal)
    if endpoint.owner_only and not principal.is_owner:
        raise Forbidden("Only the team owner can do this")
    return principal


async def _read_json(
    endpoint: Endpoint, request: web.Request, bound: _Bound
) -> tuple[Any, BodySlot | None]:
    """The body validated by the endpoint's model, and the large-body slot it holds (given
    back here if reading or validating fails)."""
    assert endpoint.body is not None
    max_mb = bound.body_mb
    server = bound.deps.settings.server
    slot: BodySlot | None = None
    try:
        # Only endpoints allowing more than the general limit ever need a slot.
        if max_mb > server.max_body_mb and is_large(
            request, int(max_mb * 2**20), int(server.max_body_mb * 2**20)
        ):
            slot = await bound.deps.body_slots.acquire()
            raw = await read_body(request, max_mb, server.large_body_read_seconds)
        else:
            raw = await read_body(request, max_mb)
        body = validate_model(endpoint.body, (endpoint.parse or parse_json)(raw))
    except BaseException:
        if slot is not None:
            slot.release()
        raise
    return body, slot


def _streamed_form(endpoint: Endpoint, request: web.Request, bound: _Bound) -> bool:
    """True when the body is a multipart form the handler streams itself (its declared
    length checked here); UNSUPPORTED_MEDIA_TYPE when only a form is accepted."""
    if request.content_type == "multipart/form-data":
        max_mb = bound.body_mb
        if request.content_length is not None and request.content_length > max_mb * 2**20:
            raise PayloadTooLarge(f"Request body over {max_mb:g} MB")
        return True
    if endpoint.body is None:
        raise UnsupportedMediaType("Content-Type must be multipart/form-data")
    return False


def make_handler(endpoint: Endpoint) -> Callable[[web.Request], Awaitable[web.StreamResponse]]:
    """Wrap an endpoint's handler with authentication, limits, validation, the error
    envelope and the service's headers (see `pipeline`)."""
    route = endpoint.documented_path  # what aiohttp calls the resource's canonical path

    async def handle(request: web.Request) -> web.StreamResponse:
        # One coroutine for the whole request: every extra layer costs on every request.
        # Its span, with traces on; off, `server_span` hands back a shared do-nothing one.
        with telemetry.server_span(request.method, route, request.headers) as span:
            deps = request_deps(request)
            bound = deps.bound.get(handle)
            if bound is None:
                bound = deps.bound[handle] = _bind(endpoint, deps)
            if bound.proxies:
                request = bound.proxies.client_of(request)
            state = RequestState(time.perf_counter(), endpoint.cors, route, bound.stats)
            request[app_keys.request_state_key] = state
            slot: BodySlot | None = None
            try:
                principal = None
                if not deps.health.serving and endpoint.below_api:
                    raise database_away()  # nothing done: a load balancer may try another process
                if endpoint.auth != "public":
                    principal = await _authorize(endpoint, request)
                if endpoint.precheck is not None:
                    await endpoint.precheck(request, principal)
                query = _parse_query(endpoint.query, request) if endpoint.query else None
                body = None
                streamed = endpoint.form is not None and _streamed_form(endpoint, request, bound)
                if endpoint.body is not None and not streamed:
                    body, slot = await _read_json(endpoint, request, bound)
                call = Call(request, principal, body, query, request.match_info, slot)
                body = None  # the handler may drop it (`Call.release_body`)
                response = await endpoint.handler(call)
            except DomainError as exc:
                response = (endpoint.render_error or error_response)(exc)
            except web.HTTPException as exc:
                if exc.status < 400:
                    raise
                response = (endpoint.render_error or error_response)(from_http_exception(exc))
            except (asyncio.CancelledError, ConnectionResetError):
                raise
            except Exception:
                response = unexpected_error(request)
            finally:
                if slot is not None:
                    slot.release()
            if not response.prepared:  # a stream finishes its own, before its first byte
                finish_response(request, response, state)
            span.answered(response.status)
            return response

    handle.endpoint = endpoint  # type: ignore[attr-defined]
    return handle
