"""API errors as values, and the one function that renders the error envelope."""

from __future__ import annotations

import orjson
from aiohttp import web


class ApiError(Exception):
    """An error answered to the client with a status, a code and a message."""

    status = 500
    code = "INTERNAL_ERROR"
    default_message = "Internal server error"

    def __init__(self, message: str | None = None, *, headers: dict[str, str] | None = None):
        super().__init__(message or self.default_message)
        self.message = message or self.default_message
        self.headers = headers or {}


class ValidationFailed(ApiError):
    status = 400
    code = "VALIDATION_ERROR"
    default_message = "Invalid request"


class BadRequest(ApiError):
    """A request aiohttp's parser refused (a bad method, a malformed header)."""

    status = 400
    code = "BAD_REQUEST"
    default_message = "Malformed HTTP request"


class DuplicateName(ApiError):
    status = 400
    code = "DUPLICATE_NAME"
    default_message = "Name already in use"


class FileTooLarge(ApiError):
    status = 400
    code = "FILE_TOO_LARGE"
    default_message = "File too large"


class Unauthorized(ApiError):
    status = 401
    code = "UNAUTHORIZED"
    default_message = "Invalid API key"


class Forbidden(ApiError):
    status = 403
    code = "FORBIDDEN"
    default_message = "You do not have permission to do this"


class ToolLimitReached(ApiError):
    status = 403
    code = "TOOL_LIMIT_REACHED"
    default_message = "Tool limit reached for your plan"


class NotFound(ApiError):
    status = 404
    code = "NOT_FOUND"
    default_message = "Not found"


class Conflict(ApiError):
    """The resource is not in a state that allows this (an invitation no longer pending)."""

    status = 409
    code = "CONFLICT"
    default_message = "The resource is not in a state that allows this"


class MethodNotAllowed(ApiError):
    status = 405
    code = "METHOD_NOT_ALLOWED"
    default_message = "Method not allowed"


class PayloadTooLarge(ApiError):
    status = 413
    code = "PAYLOAD_TOO_LARGE"
    default_message = "Request body too large"


class FileQuotaExceeded(ApiError):
    status = 413
    code = "FILE_QUOTA_EXCEEDED"


class RequestTimeout(ApiError):
    status = 408
    code = "REQUEST_TIMEOUT"


class ServerBusy(ApiError):
    status = 503
    code = "SERVER_BUSY"


class UnsupportedMediaType(ApiError):
    status = 415
    code = "UNSUPPORTED_MEDIA_TYPE"
    default_message = "Content-Type must be application/json"


class HeadersTooLarge(ApiError):
    """Too many headers, or a request line or header over the server's limit."""

    status = 431
    code = "HEADERS_TOO_LARGE"
    default_message = "Request headers too large"


class RateLimited(ApiError):
    status = 429
    code = "RATE_LIMITED"
    default_message = "Rate limit exceeded"


class InternalError(ApiError):
    pass


# Every status/code pair any route may answer, for the OpenAPI document.
ERROR_CLASSES: tuple[type[ApiError], ...] = (
    ValidationFailed,
    BadRequest,
    DuplicateName,
    FileTooLarge,
    Unauthorized,
    Forbidden,
    ToolLimitReached,
    NotFound,
    MethodNotAllowed,
    Conflict,
    PayloadTooLarge,
    FileQuotaExceeded,
    RequestTimeout,
    UnsupportedMediaType,
    HeadersTooLarge,
    RateLimited,
    InternalError,
    ServerBusy,
)


def error_body(code: str, message: str) -> bytes:
    """Serialise the error envelope."""
    return orjson.dumps({"data": None, "error": {"code": code, "message": message}})


def error_response(error: ApiError) -> web.Response:
    """Render an ApiError as the JSON error envelope."""
    return web.Response(
        body=error_body(error.code, error.message),
        status=error.status,
        content_type="application/json",
        headers=error.headers,
    )
