"""Errors at the HTTP edge: the one table from error class to status, and the envelope.

Services raise the domain errors of `agentsvc/errors.py`; the errors only HTTP knows (a
malformed request, a method not allowed, a body too large or too slow, a rate limit with
its headers) are defined here. Every handler's error is rendered by `error_response`.
"""

from __future__ import annotations

import orjson
from aiohttp import web

from agentsvc.errors import (
    AnswerLimitReached,
    CannedResponseLimitReached,
    Conflict,
    DomainError,
    DuplicateName,
    FileQuotaExceeded,
    FileTooLarge,
    Forbidden,
    NotFound,
    StorageUnavailable,
    ToolLimitReached,
    Unauthorized,
    UnsupportedMediaType,
    ValidationFailed,
)


class ApiError(DomainError):
    """An error of the HTTP layer; may carry response headers (Allow, Retry-After...).

    `status` is set only on errors made from a status aiohttp chose (see pipeline.py).
    """

    status: int | None = None

    def __init__(self, message: str | None = None, *, headers: dict[str, str] | None = None):
        super().__init__(message)
        self.headers = headers or {}


class BadRequest(ApiError):
    """A request aiohttp's parser refused (a bad method, a malformed header)."""

    code = "BAD_REQUEST"
    default_message = "Malformed HTTP request"


class MethodNotAllowed(ApiError):
    code = "METHOD_NOT_ALLOWED"
    default_message = "Method not allowed"


class PayloadTooLarge(ApiError):
    code = "PAYLOAD_TOO_LARGE"
    default_message = "Request body too large"


class RequestTimeout(ApiError):
    code = "REQUEST_TIMEOUT"
    default_message = "The request body did not arrive in time"


class ServerBusy(ApiError):
    code = "SERVER_BUSY"
    default_message = "The server is busy; try again shortly"


class HeadersTooLarge(ApiError):
    """Too many headers, or a request line or header over the server's limit."""

    code = "HEADERS_TOO_LARGE"
    default_message = "Request headers too large"


class RateLimited(ApiError):
    code = "RATE_LIMITED"
    default_message = "Rate limit exceeded"


class InternalError(ApiError):
    code = "INTERNAL_ERROR"
    default_message = "Internal server error"


# The one place an error becomes a status. Every class any route may answer is listed (the
# OpenAPI document's error responses are built from this table).
STATUS: dict[type[DomainError], int] = {
    ValidationFailed: 400,
    BadRequest: 400,
    DuplicateName: 400,
    FileTooLarge: 400,
    Unauthorized: 401,
    Forbidden: 403,
    ToolLimitReached: 403,
    AnswerLimitReached: 403,
    CannedResponseLimitReached: 403,
    NotFound: 404,
    MethodNotAllowed: 405,
    Conflict: 409,
    PayloadTooLarge: 413,
    FileQuotaExceeded: 413,
    RequestTimeout: 408,
    UnsupportedMediaType: 415,
    HeadersTooLarge: 431,
    RateLimited: 429,
    InternalError: 500,
    ServerBusy: 503,
    StorageUnavailable: 503,
}
ERROR_CLASSES: tuple[type[DomainError], ...] = tuple(STATUS)


def status_of(error: DomainError) -> int:
    """The HTTP status of an error: its own (made from aiohttp's), else the table's."""
    own = getattr(error, "status", None)
    if own is not None:
        return own
    for cls in type(error).__mro__:
        status = STATUS.get(cls)
        if status is not None:
            return status
    return 500


def error_body(code: str, message: str) -> bytes:
    """Serialise the error envelope."""
    return orjson.dumps({"data": None, "error": {"code": code, "message": message}})


def error_response(error: DomainError) -> web.Response:
    """Render an error as the JSON error envelope with its status (and headers)."""
    return web.Response(
        body=error_body(error.code, error.message),
        status=status_of(error),
        content_type="application/json",
        headers=getattr(error, "headers", None) or {},
    )
