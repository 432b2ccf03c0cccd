"""The HTTP server around the app: aiohttp's runner, answering unparsable requests itself.

aiohttp parses each request in its connection handler, before any route runs. A request it
cannot parse (a request line or header longer than the limit, too many headers, a bad
method or Content-Length) never reaches the app: `RequestHandler.handle_error` answers it
in plain text and logs the parser's traceback. aiohttp has no option or hook for that
answer, so this runner's server builds connection handlers of a subclass whose
`handle_error` answers the JSON envelope and logs one line. The subclass adds no state, and
each handler aiohttp builds (its own constructor and arguments) only gets the subclass as
its type: what aiohttp changes in how handlers are made stays in force.
"""

from __future__ import annotations

import logging
from http import HTTPStatus

from aiohttp import web
from aiohttp.http_exceptions import HttpProcessingError, LineTooLong
from aiohttp.web_protocol import RequestHandler

from agentsvc.api.errors import (
    ApiError,
    BadRequest,
    HeadersTooLarge,
    InternalError,
    error_body,
    status_of,
)
from agentsvc.api.request_log import JsonAccessLogger, access_log, request_id
from agentsvc.config import Settings

log = logging.getLogger(__name__)

# aiohttp's 8190-byte default refuses a request line the API's own bounds allow: query
# strings up to 2,448 characters (an OAuth callback) percent-encode to up to 12 bytes each.
MAX_LINE_BYTES = 32 * 1024
MAX_HEADERS = 128  # aiohttp's default, set here so the message can state it


def refused_request_error(exc: HttpProcessingError) -> ApiError:
    """The envelope error for a request aiohttp's parser refused."""
    if isinstance(exc, LineTooLong):
        # The parser does not say which line: the request line and headers share the limit.
        return HeadersTooLarge(f"The request line or a header is over {MAX_LINE_BYTES} bytes")
    reason = (exc.message or "").split("\n", 1)[0].rstrip(": ")
    if reason.lower().startswith("too many headers"):
        return HeadersTooLarge(f"More than {MAX_HEADERS} headers")
    # The reason's first line only: the rest repeats the client's bytes under a caret.
    return BadRequest(f"Malformed HTTP request: {reason[:120]}" if reason else None)


def _status_error(status: int) -> ApiError:
    if status >= 500:
        error = InternalError()
    else:
        error = ApiError(HTTPStatus(status).phrase)
        error.code = HTTPStatus(status).phrase.upper().replace(" ", "_")
    error.status = status
    return error


class EnvelopeRequestHandler(RequestHandler):
    """A connection handler whose errors before routing answer the JSON envelope."""

    __slots__ = ()

    def handle_error(
        self,
        request: web.BaseRequest,
        status: int = 500,
        exc: BaseException | None = None,
        message: str | None = None,
    ) -> web.StreamResponse:
        """Answer a request aiohttp could not parse or handle: one log line, the envelope."""
        if isinstance(exc, HttpProcessingError):
            error = refused_request_error(exc)
            log.info("refused a malformed request from %s: %s", request.remote, error.message)
        else:
            # Unexpected: aiohttp's own handling logs the traceback (and refuses to answer
            # when part of a response was sent); its plain-text answer is replaced.
            super().handle_error(request, status, exc, message)
            error = _status_error(status)
        response = web.Response(
            status=status_of(error),
            body=error_body(error.code, error.message),
            content_type="application/json",
            headers={"X-Request-Id": request_id(request)},  # the access log's id
        )
        response.force_close()
        return response


class EnvelopeServer(web.Server):
    """aiohttp's low-level server, making `EnvelopeRequestHandler` connections."""

    def __call__(self) -> RequestHandler:
        handler = super().__call__()
        handler.__class__ = EnvelopeRequestHandler  # same layout: the subclass adds no slots
        return handler


class ServiceRunner(web.AppRunner):
    """`web.AppRunner` whose server is an `EnvelopeServer`."""

    async def _make_server(self) -> web.Server:
        # BaseRunner's extension point; the app builds its server as usual (startup, request
        # factory, handler arguments), then serves with the envelope-answering handlers.
        server = await super()._make_server()
        server.__class__ = EnvelopeServer
        return server


def make_runner(app: web.Application, settings: Settings) -> web.AppRunner:
    """The runner `agentsvc serve` uses: limits, access log, the envelope before routing."""
    return ServiceRunner(
        app,
        access_log=access_log if settings.server.access_log else None,
        access_log_class=JsonAccessLogger,
        max_line_size=MAX_LINE_BYTES,
        max_field_size=MAX_LINE_BYTES,
        max_headers=MAX_HEADERS,
    )
