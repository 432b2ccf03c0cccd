"""The SDK side of the guarded MCP client (`mcp_client.py`): an httpx2 transport whose
connections open only to checked addresses, refuse redirects and count every byte, and the
SDK's client over it. Imported on the first MCP exchange, not at start-up: the SDK takes
about as long to import as the rest of the service.
"""

from __future__ import annotations

import asyncio
import logging
import socket
from collections.abc import AsyncIterator, Iterable, Mapping
from contextlib import asynccontextmanager
from typing import Any

import httpcore2
import httpx2
import mcp_types
import orjson
from aiohttp import ThreadedResolver
from aiohttp.abc import AbstractResolver
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from pydantic import ValidationError

from agentsvc import __version__, telemetry
from agentsvc.mcp_client import (
    Budget,
    Exchange,
    McpClient,
    McpFailure,
    one_line,
    quiet_sdk_loggers,
)
from agentsvc.outbound import (
    USER_AGENT,
    GuardedResolver,
    RefusedAddress,
    forbidden_reason,
    literal_address,
    why_not_connected,
)

log = logging.getLogger("agentsvc.mcp_client")
quiet_sdk_loggers()  # what a hostile server makes the SDK log is one WARNING line

# Loading the system's CA certificates takes ~20 ms of CPU: once per process (this module
# is imported in a worker thread), not once per connection pool.
_SSL_CONTEXT = httpx2.create_ssl_context(trust_env=False)

_CORE_ERRORS: tuple[tuple[type[Exception], type[httpx2.HTTPError]], ...] = (
    (httpcore2.ConnectTimeout, httpx2.ConnectTimeout),
    (httpcore2.ReadTimeout, httpx2.ReadTimeout),
    (httpcore2.WriteTimeout, httpx2.WriteTimeout),
    (httpcore2.PoolTimeout, httpx2.PoolTimeout),
    (httpcore2.ConnectError, httpx2.ConnectError),
    (httpcore2.ReadError, httpx2.ReadError),
    (httpcore2.WriteError, httpx2.WriteError),
    (httpcore2.RemoteProtocolError, httpx2.RemoteProtocolError),
    (httpcore2.LocalProtocolError, httpx2.LocalProtocolError),
    (httpcore2.UnsupportedProtocol, httpx2.UnsupportedProtocol),
    (httpcore2.ProtocolError, httpx2.ProtocolError),
    (httpcore2.NetworkError, httpx2.NetworkError),
    (httpcore2.TimeoutException, httpx2.TimeoutException),
)


def _mapped(exc: Exception) -> Exception:
    for core, mapped in _CORE_ERRORS:
        if isinstance(exc, core):
            return mapped(str(exc))
    return exc


class _CappedStream(httpx2.AsyncByteStream):
    """A response body that stops the exchange once the budget is spent."""

    def __init__(self, inner: Any, budget: Budget):
        self._inner = inner
        self._budget = budget

    async def __aiter__(self) -> AsyncIterator[bytes]:
        try:
            async for chunk in self._inner:
                self._budget.left -= len(chunk)
                if self._budget.left < 0:
                    raise self._budget.refuse(
                        McpFailure(
                            f"the server sent more than {self._budget.cap} bytes", "too_large"
                        )
                    )
                yield chunk
        except httpcore2.TimeoutException as exc:
            raise _mapped(exc) from exc
        except (httpcore2.NetworkError, httpcore2.ProtocolError) as exc:
            raise _mapped(exc) from exc

    async def aclose(self) -> None:
        await self._inner.aclose()


class _GuardedBackend(httpcore2.AsyncNetworkBackend):
    """Opens TCP connections only to addresses the outbound rules allow."""

    def __init__(self, allow_private: bool, resolver: AbstractResolver | None):
        self._inner = httpcore2.AnyIOBackend()
        self._allow_private = allow_private
        self._resolver = resolver

    async def _addresses(self, host: str, port: int) -> list[str]:
        literal = literal_address(host)
        if literal is not None:
            reason = None if self._allow_private else forbidden_reason(literal)
            if reason:
                raise RefusedAddress(f"address {literal} refused: it {reason}")
            return [str(literal)]
        resolver = self._resolver or ThreadedResolver()
        if not self._allow_private:
            # Refuses the host when any address it resolves to is not public.
            resolver = GuardedResolver(resolver)
        results = await resolver.resolve(host, port, socket.AF_UNSPEC)
        return [r["host"] for r in results]

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,  # noqa: ASYNC109 - httpcore's interface
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore2.AsyncNetworkStream:
        try:
            addresses = await asyncio.wait_for(self._addresses(host, port), timeout)
        except OSError as exc:
            if isinstance(exc, RefusedAddress):
                raise
            raise httpcore2.ConnectError(f"could not resolve {host}: {exc}") from exc
        except TimeoutError as exc:
            raise httpcore2.ConnectTimeout(f"resolving {host} timed out") from exc
        last: Exception | None = None
        for address in addresses:
            try:
                # The checked address itself: the name is not resolved a second time.
                return await self._inner.connect_tcp(
                    address,
                    port,
                    timeout=timeout,
                    local_address=local_address,
                    socket_options=socket_options,
                )
            except httpcore2.ConnectError as exc:
                last = exc
        raise last or httpcore2.ConnectError(f"{host} has no address")

    async def sleep(self, seconds: float) -> None:
        await self._inner.sleep(seconds)


class _GuardedTransport(httpx2.AsyncBaseTransport):
    """HTTP/1.1 over the guarded backend; refuses redirects; counts every response byte
    against the current exchange's budget (`link.exchange`: a pooled session serves one
    call after another) and notes whether a `tools/call` reached the server."""

    def __init__(self, backend: _GuardedBackend, link: Link, keepalive_expiry: float | None):
        self._link = link
        self._pool = httpcore2.AsyncConnectionPool(
            ssl_context=_SSL_CONTEXT,
            max_connections=4,
            keepalive_expiry=keepalive_expiry,
            network_backend=backend,
        )

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        exchange = self._link.exchange
        budget = exchange.budget
        if budget.refusal is not None:
            raise budget.refusal
        if self._link.ended:
            # An ended session's goodbye (DELETE) is not sent: the server forgot it, or
            # it failed, and its close must not wait on the server.
            return httpx2.Response(204, request=request)
        if request.method == "GET" and "last-event-id" not in request.headers:
            # The stream a server may open for requests of its own (sampling, elicitation):
            # nothing here answers them, and a pooled session would hold it open between
            # calls, outside any call's budget. 405 is the spec's "no such stream".
            return httpx2.Response(405, request=request)
        calling = request.method == "POST" and _method(request) == "tools/call"
        try:
            response = await self._pool.handle_async_request(_core_request(request, exchange))
        except (httpcore2.TimeoutException, httpcore2.NetworkError, httpcore2.ProtocolError) as exc:
            if calling and isinstance(exc, httpcore2.ConnectError):
                exchange.undelivered = True  # no connection: the server never saw the call
            raise _mapped(exc) from exc
        if response.status == 404 and "mcp-session-id" in request.headers:
            # The server forgot the session (restarted, expired it): it ran nothing.
            exchange.session_lost = True
            exchange.undelivered = exchange.undelivered or calling
        if 300 <= response.status < 400:
            await response.aclose()
            raise budget.refuse(_redirect_refusal(response))
        return httpx2.Response(
            status_code=response.status,
            headers=response.headers,
            stream=_CappedStream(response.stream, budget),
            extensions=response.extensions,
        )

    async def aclose(self) -> None:
        await self._pool.aclose()


class Link:
    """What a session's transport counts against (the exchange under way), and whether the
    session was ended (mcp_sessions: nothing more is sent then)."""

    def __init__(self, exchange: Exchange):
        self.exchange = exchange
        self.ended = False


def _method(request: httpx2.Request) -> str | None:
    """The JSON-RPC method of a request's body (the SDK sends one message per POST)."""
    try:
        message = orjson.loads(request.content)
    except (orjson.JSONDecodeError, httpx2.RequestNotRead):
        return None
    return message.get("method") if isinstance(message, dict) else None


def _core_request(request: httpx2.Request, exchange: Exchange) -> httpcore2.Request:
    headers = list(request.headers.raw)
    # The W3C traceparent of the call's span (a pooled session outlives the span it opened in).
    headers += [(k.encode(), v.encode()) for k, v in exchange.trace.items()]
    return httpcore2.Request(
        method=request.method,
        url=httpcore2.URL(
            scheme=request.url.raw_scheme,
            host=request.url.raw_host,
            port=request.url.port,
            target=request.url.raw_path,
        ),
        headers=headers,
        content=request.stream,  # type: ignore[arg-type]
        extensions=request.extensions,
    )


def _redirect_refusal(response: httpcore2.Response) -> McpFailure:
    location = next(
        (v.decode("latin-1") for k, v in response.headers if k.lower() == b"location"), ""
    )
    where = f" to {location[:200]}" if location else ""
    return McpFailure(
        f"the server answered {response.status} (a redirect{where}); redirects are "
        "not followed: use the final address as the MCP URL",
        "redirect",
    )


@asynccontextmanager
async def connected(
    settings: McpClient, url: str, headers: Mapping[str, str], budget: Budget
) -> AsyncIterator[Client]:
    """The SDK's client over the guarded transport for one listing, within its deadline."""
    link = Link(Exchange(budget, telemetry.inject({})))
    async with asyncio.timeout(settings.timeout), session(settings, url, headers, link) as client:
        yield client


@asynccontextmanager
async def session(
    settings: McpClient,
    url: str,
    headers: Mapping[str, str],
    link: Link,
    keepalive_expiry: float | None = None,
) -> AsyncIterator[Client]:
    """An initialized session of the SDK's client over the guarded transport (no deadline of
    its own: the caller's bounds each exchange)."""
    transport = _GuardedTransport(
        _GuardedBackend(settings.allow_private, settings.resolver), link, keepalive_expiry
    )
    http = httpx2.AsyncClient(
        transport=transport,
        headers={"User-Agent": USER_AGENT, **headers},
        timeout=httpx2.Timeout(settings.timeout, connect=settings.connect_timeout),
        follow_redirects=False,
        trust_env=False,
    )
    async with http:
        client = Client(
            streamable_http_client(url, http_client=http),
            cache=None,
            read_timeout_seconds=settings.timeout,
            client_info=mcp_types.Implementation(name="agentsvc", version=__version__),
        )
        async with client:
            yield client


def answered(exc: BaseException) -> bool:
    """Whether a call's failure is the server's JSON-RPC answer (its session still fine)."""
    return isinstance(exc, MCPError)


NOT_MCP = "the MCP server's answer was not valid MCP"
# What the SDK says (in an MCPError of its own) about an answer it could not read.
_UNREADABLE = ("Failed to parse JSON response", "Failed to parse SSE message")
_LIBRARY_WORDING = ("validation error", "pydantic", "input_value=", "[type=")


def _where(exc: ValidationError) -> str:
    """Where in the answer the first fault is (`: at tools.0.name`), without pydantic's
    wording."""
    errors = exc.errors(include_url=False, include_input=False)
    loc = ".".join(str(part) for part in errors[0]["loc"]) if errors else ""
    return f" (at {one_line(loc, 100)})" if loc else ""


def _error_message(code: int, text: str) -> str:
    """One plain line for a JSON-RPC error: the SDK's own about an unreadable answer, or
    what the server said."""
    if text.startswith(_UNREADABLE):
        if "recursion limit" in text:
            return f"{NOT_MCP}: its JSON nests too deep"
        if "Invalid JSON" in text or "json_invalid" in text:
            return f"{NOT_MCP}: its body is not JSON"
        return f"{NOT_MCP}: it is not a JSON-RPC message"
    if text.startswith("Unexpected content type:"):
        kind = one_line(text.removeprefix("Unexpected content type:"), 100) or "none"
        return f"{NOT_MCP}: it came as {kind}, not JSON or an event stream"
    if any(word in text for word in _LIBRARY_WORDING):
        return NOT_MCP
    said = one_line(text)
    return (
        f"the MCP server answered an error: {said}"
        if said
        else (f"the MCP server answered error {code} without a message")
    )


def _os_reason(error: BaseException) -> str:
    """The system's reason under an HTTP client's connect error, in words: httpx wraps
    httpcore's error, which wraps an OSError ("All connection attempts failed") that wraps
    the one with the reason."""
    found: OSError | None = None
    cause: BaseException | None = error
    for _ in range(6):
        if cause is None:
            break
        if isinstance(cause, OSError):
            found = cause
            if cause.errno is not None:
                break
        cause = cause.__cause__ or cause.__context__
    return why_not_connected(found) if found is not None else "the connection failed"


def failure_of(leaf: BaseException, timeout: float, url: str) -> McpFailure | None:
    """The message for people of one of the errors that ended an exchange, if it is known."""
    if isinstance(leaf, RefusedAddress):
        return McpFailure(f"refused: {leaf}", "refused")
    if isinstance(leaf, TimeoutError | httpx2.TimeoutException):
        return McpFailure(f"timed out after {timeout:g} s", "timeout")
    if isinstance(leaf, httpx2.ConnectError):
        host = httpx2.URL(url).host
        return McpFailure(f"could not connect to {host}: {_os_reason(leaf)}", "connect")
    if isinstance(leaf, MCPError):
        return McpFailure(_error_message(leaf.error.code, leaf.error.message), "protocol")
    if isinstance(leaf, ValidationError):
        return McpFailure(f"{NOT_MCP}{_where(leaf)}", "protocol")
    if isinstance(leaf, httpx2.HTTPError):
        return McpFailure(f"the request failed: {leaf}", "failed")
    return None
