"""The guarded MCP client: list and call the tools of Streamable HTTP MCP servers.

The official SDK speaks the protocol; it sends its HTTP through an httpx2 client built here
with the guards of `outbound.py`: http/https only, no credentials in the URL, header values
without line breaks, and (unless `[outbound] allow_private`) only public addresses, checked
on the resolved addresses of every connection inside the network backend (the socket is
opened to the very address that was checked, so DNS rebinding cannot slip through). The
SDK follows redirects within an endpoint's origin; this transport refuses every 3xx before
the SDK sees it. Everything a server sends for one listing or call shares one byte budget,
and the whole exchange one deadline, so a huge answer or an endless event stream ends as
an error instead of filling memory or holding a task.
"""

from __future__ import annotations

import asyncio
import logging
import socket
from collections.abc import AsyncIterator, Iterable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import httpcore2
import httpx2
import mcp_types
from aiohttp import ThreadedResolver
from aiohttp.abc import AbstractResolver
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from pydantic import ValidationError

from agentsvc import __version__
from agentsvc.outbound import (
    USER_AGENT,
    GuardedResolver,
    OutboundError,
    RefusedAddress,
    check_headers,
    check_url,
    forbidden_reason,
    literal_address,
)

log = logging.getLogger(__name__)

# Pages of tools/list read before a listing is given up as endless.
MAX_LIST_PAGES = 50

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


class McpFailure(Exception):
    """A listing or call that was refused or failed; the message says why, for people."""

    def __init__(self, message: str, kind: str = "failed"):
        super().__init__(message)
        self.message = message
        # "refused" (address guard), "invalid" (URL/header), "redirect", "too_large",
        # "timeout", "connect", "protocol" (not MCP, or an MCP error), "failed"
        self.kind = kind


@dataclass(frozen=True, slots=True)
class ListedTool:
    """A tool as the server lists it."""

    name: str
    description: str
    input_schema: Any


@dataclass(frozen=True, slots=True)
class CallOutcome:
    """What a tools/call returned: its content blocks (plain dicts), structured content,
    and whether the server flagged it as an error."""

    content: list[dict[str, Any]]
    structured: Any
    is_error: bool


class _Budget:
    """The bytes a server may still send in one exchange, and why it was cut off, if it was."""

    def __init__(self, cap: int):
        self.cap = cap
        self.left = cap
        self.refusal: McpFailure | None = None

    def refuse(self, failure: McpFailure) -> McpFailure:
        if self.refusal is None:
            self.refusal = failure
        return self.refusal


def _mapped(exc: Exception) -> Exception:
    for core, mapped in _CORE_ERRORS:
        if isinstance(exc, core):
            return mapped(str(exc))
    return exc


class _CappedStream(httpx2.AsyncByteStream):
    """A response body that stops the exchange once the budget is spent."""

    def __init__(self, inner: Any, budget: _Budget):
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
    """HTTP/1.1 over the guarded backend; refuses redirects; counts every response byte."""

    def __init__(self, backend: _GuardedBackend, budget: _Budget):
        self._budget = budget
        self._pool = httpcore2.AsyncConnectionPool(
            ssl_context=httpx2.create_ssl_context(trust_env=False),
            max_connections=4,
            network_backend=backend,
        )

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        if self._budget.refusal is not None:
            raise self._budget.refusal
        core_request = httpcore2.Request(
            method=request.method,
            url=httpcore2.URL(
                scheme=request.url.raw_scheme,
                host=request.url.raw_host,
                port=request.url.port,
                target=request.url.raw_path,
            ),
            headers=request.headers.raw,
            content=request.stream,  # type: ignore[arg-type]
            extensions=request.extensions,
        )
        try:
            response = await self._pool.handle_async_request(core_request)
        except (httpcore2.TimeoutException, httpcore2.NetworkError, httpcore2.ProtocolError) as exc:
            raise _mapped(exc) from exc
        if 300 <= response.status < 400:
            await response.aclose()
            location = next(
                (v.decode("latin-1") for k, v in response.headers if k.lower() == b"location"),
                "",
            )
            where = f" to {location[:200]}" if location else ""
            raise self._budget.refuse(
                McpFailure(
                    f"the server answered {response.status} (a redirect{where}); redirects are "
                    "not followed: use the final address as the MCP URL",
                    "redirect",
                )
            )
        return httpx2.Response(
            status_code=response.status,
            headers=response.headers,
            stream=_CappedStream(response.stream, self._budget),
            extensions=response.extensions,
        )

    async def aclose(self) -> None:
        await self._pool.aclose()


def _leaves(exc: BaseException) -> list[BaseException]:
    if isinstance(exc, BaseExceptionGroup):
        return [leaf for sub in exc.exceptions for leaf in _leaves(sub)]
    return [exc]


class McpClient:
    """Lists and calls MCP tools with the outbound guards (one instance for the app)."""

    def __init__(
        self,
        *,
        allow_private: bool = False,
        resolver: AbstractResolver | None = None,
        timeout: float = 30.0,
        connect_timeout: float = 5.0,
        max_response_bytes: int = 1024 * 1024,
        max_listed_tools: int = 200,
    ):
        self.allow_private = allow_private
        self._resolver = resolver
        self.timeout = timeout
        self.connect_timeout = connect_timeout
        self.max_response_bytes = max_response_bytes
        self.max_listed_tools = max_listed_tools

    @asynccontextmanager
    async def _connected(self, url: str, headers: Mapping[str, str]) -> AsyncIterator[Client]:
        budget = _Budget(self.max_response_bytes)
        try:
            check_url(url, allow_private=self.allow_private)
            sent = dict(check_headers(headers))
        except (OutboundError, ValueError) as exc:
            message = exc.message if isinstance(exc, OutboundError) else str(exc)
            kind = exc.kind if isinstance(exc, OutboundError) else "invalid"
            raise McpFailure(message, kind) from exc
        transport = _GuardedTransport(_GuardedBackend(self.allow_private, self._resolver), budget)
        http = httpx2.AsyncClient(
            transport=transport,
            headers={"User-Agent": USER_AGENT, **sent},
            timeout=httpx2.Timeout(self.timeout, connect=self.connect_timeout),
            follow_redirects=False,
            trust_env=False,
        )
        try:
            async with asyncio.timeout(self.timeout), http:
                client = Client(
                    streamable_http_client(url, http_client=http),
                    cache=None,
                    read_timeout_seconds=self.timeout,
                    client_info=mcp_types.Implementation(name="agentsvc", version=__version__),
                )
                async with client:
                    yield client
        except McpFailure:
            raise
        except Exception as exc:  # noqa: BLE001 - every failure becomes one message
            raise self._failure(exc, budget, url) from None

    def _failure(self, exc: BaseException, budget: _Budget, url: str) -> McpFailure:
        """One message for people from whatever ended the exchange."""
        if budget.refusal is not None:
            return budget.refusal
        leaves = _leaves(exc)
        for leaf in leaves:
            if isinstance(leaf, McpFailure):
                return leaf
            if isinstance(leaf, RefusedAddress):
                return McpFailure(f"refused: {leaf}", "refused")
        for leaf in leaves:
            if isinstance(leaf, TimeoutError | httpx2.TimeoutException):
                return McpFailure(f"timed out after {self.timeout:g} s", "timeout")
            if isinstance(leaf, httpx2.ConnectError):
                host = httpx2.URL(url).host
                return McpFailure(f"could not connect to {host}: {leaf}", "connect")
            if isinstance(leaf, MCPError):
                message = leaf.error.message
                return McpFailure(f"the MCP server answered an error: {message}", "protocol")
            if isinstance(leaf, ValidationError):
                return McpFailure("the server's answer is not valid MCP", "protocol")
            if isinstance(leaf, httpx2.HTTPError):
                return McpFailure(f"the request failed: {leaf}", "failed")
        log.warning("MCP exchange with %s failed unexpectedly", url, exc_info=exc)
        return McpFailure("the exchange with the MCP server failed unexpectedly", "failed")

    async def list_tools(self, url: str, headers: Mapping[str, str]) -> list[ListedTool]:
        """Every tool the server lists (all pages); McpFailure when that cannot be done."""
        listed: list[ListedTool] = []
        async with self._connected(url, headers) as client:
            cursor: str | None = None
            for _ in range(MAX_LIST_PAGES):
                page = await client.list_tools(cursor=cursor, cache_mode="bypass")
                for tool in page.tools:
                    listed.append(ListedTool(tool.name, tool.description or "", tool.input_schema))
                if len(listed) > self.max_listed_tools:
                    raise McpFailure(
                        f"the server lists more than {self.max_listed_tools} tools", "too_large"
                    )
                cursor = page.next_cursor
                if cursor is None:
                    return listed
            raise McpFailure(f"the server's tool list goes on past {MAX_LIST_PAGES} pages")

    async def call_tool(
        self, url: str, headers: Mapping[str, str], name: str, arguments: dict[str, Any]
    ) -> CallOutcome:
        """Call one tool; McpFailure when the call cannot be made or completed."""
        async with self._connected(url, headers) as client:
            result = await client.call_tool(name, arguments)
        content = [block.model_dump(mode="json", by_alias=True) for block in result.content]
        return CallOutcome(content, result.structured_content, bool(result.is_error))
