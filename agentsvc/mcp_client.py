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

Calls reuse initialized sessions (`mcp_sessions.py`); listings, rare and CPU-heavy, open
one of their own in a worker thread.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from aiohttp.abc import AbstractResolver

from agentsvc import cpu, telemetry
from agentsvc.mcp_sessions import Session, SessionEnded, SessionPool
from agentsvc.outbound import OutboundError, check_headers, check_url

if TYPE_CHECKING:
    from mcp import Client

log = logging.getLogger(__name__)

# Pages of tools/list read before a listing is given up as endless.
MAX_LIST_PAGES = 50


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


class Budget:
    """The bytes a server may still send in one exchange, and why it was cut off, if it was."""

    def __init__(self, cap: int):
        self.cap = cap
        self.left = cap
        self.refusal: McpFailure | None = None

    def refuse(self, failure: McpFailure) -> McpFailure:
        if self.refusal is None:
            self.refusal = failure
        return self.refusal


@dataclass
class Exchange:
    """One listing or call: its byte budget, the traceparent of its span, and whether its
    `tools/call` surely never ran (no connection was made for it, or the server answered
    404 for a session it forgot): only then may the call be sent again."""

    budget: Budget
    trace: dict[str, str] = field(default_factory=dict)
    undelivered: bool = False
    session_lost: bool = False

    def again(self) -> Exchange:
        """The same exchange sent once more: a full budget, no marks."""
        return Exchange(Budget(self.budget.cap), self.trace)


MAX_MESSAGE_CHARS = 300  # of what a server says, in a message for people


def one_line(text: str, limit: int = MAX_MESSAGE_CHARS) -> str:
    """A server's text as one plain line: whitespace runs made one space, cut at `limit`."""
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1].rstrip() + "…"


# The SDK's loggers on the client's path. What they report at ERROR (with a traceback) is
# what a server sent: a body that is not JSON, a wrong content type... The exchange fails
# with a message for people (see mcp_transport.failure_of); the log gets one WARNING line.
SDK_LOGGERS = (
    "mcp.client.streamable_http",
    "mcp.client.client",
    "mcp.client.sse",
    "client",  # the SDK's ClientSession logs under this name
    "mcp.shared.dispatcher",
    "mcp.shared.jsonrpc_dispatcher",
)


class ServerFaultFilter(logging.Filter):
    """Turns the SDK's ERROR records (and tracebacks) into one WARNING line."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno < logging.WARNING and not record.exc_info:
            return True
        message = record.getMessage()
        if record.exc_info and record.exc_info[1] is not None:
            message = f"{message} ({type(record.exc_info[1]).__name__})"
        if record.levelno > logging.WARNING:
            record.levelno, record.levelname = logging.WARNING, "WARNING"
        record.msg, record.args = "MCP: " + one_line(message), None
        record.exc_info, record.exc_text, record.stack_info = None, None, None
        return True


def quiet_sdk_loggers() -> None:
    """Put `ServerFaultFilter` on the SDK's loggers (once)."""
    for name in SDK_LOGGERS:
        logger = logging.getLogger(name)
        if not any(isinstance(f, ServerFaultFilter) for f in logger.filters):
            logger.addFilter(ServerFaultFilter())


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
        session_idle_seconds: float = 120.0,
        max_sessions: int = 100,
    ):
        self.allow_private = allow_private
        self.resolver = resolver
        self.timeout = timeout
        self.connect_timeout = connect_timeout
        self.max_response_bytes = max_response_bytes
        self.max_listed_tools = max_listed_tools
        self.sessions = SessionPool(session_idle_seconds, max_sessions)

    async def close(self) -> None:
        """End every open session (app shutdown)."""
        await self.sessions.close()

    def _checked(self, url: str, headers: Mapping[str, str]) -> dict[str, str]:
        """The headers to send; McpFailure when the URL or a header is refused."""
        try:
            check_url(url, allow_private=self.allow_private)
            return dict(check_headers(headers))
        except (OutboundError, ValueError) as exc:
            message = exc.message if isinstance(exc, OutboundError) else str(exc)
            kind = exc.kind if isinstance(exc, OutboundError) else "invalid"
            raise McpFailure(message, kind) from exc

    @asynccontextmanager
    async def _connected(self, url: str, headers: Mapping[str, str]) -> AsyncIterator[Client]:
        budget = Budget(self.max_response_bytes)
        sent = self._checked(url, headers)
        await cpu.load_modules("agentsvc.mcp_transport")  # off the loop, on the first exchange
        from agentsvc import mcp_transport  # the SDK

        try:
            async with mcp_transport.connected(self, url, sent, budget) as client:
                yield client
        except McpFailure:
            raise
        except Exception as exc:  # noqa: BLE001 - every failure becomes one message
            raise self._failure(exc, budget, url) from None

    def _failure(self, exc: BaseException, budget: Budget, url: str) -> McpFailure:
        """One message for people from whatever ended the exchange."""
        from agentsvc import mcp_transport

        if budget.refusal is not None:
            return budget.refusal
        leaves = _leaves(exc)
        for leaf in leaves:
            if isinstance(leaf, McpFailure):
                return leaf
            if isinstance(leaf, SessionEnded):
                return McpFailure("the call was stopped: the service is shutting down", "failed")
        for leaf in leaves:
            failure = mcp_transport.failure_of(leaf, self.timeout, url)
            if failure is not None:
                return failure
        log.warning("MCP exchange with %s failed unexpectedly", url, exc_info=exc)
        return McpFailure("the exchange with the MCP server failed unexpectedly", "failed")

    async def list_tools(self, url: str, headers: Mapping[str, str]) -> list[ListedTool]:
        """Every tool the server lists (all pages); McpFailure when that cannot be done.

        The exchange runs on an event loop of its own in a low-priority worker thread
        (agentsvc/cpu.py): the SDK validates the listing and walks every schema in it as
        it arrives, CPU-bound work that takes seconds for a listing of large schemas (up
        to the byte budget) and would stall every other request on the app's loop."""
        return await cpu.exchange(asyncio.run, self._list_tools(url, headers))

    async def _list_tools(self, url: str, headers: Mapping[str, str]) -> list[ListedTool]:
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
        self,
        url: str,
        headers: Mapping[str, str],
        name: str,
        arguments: dict[str, Any],
        *,
        team: str = "",
    ) -> CallOutcome:
        """Call one tool on a session kept for (team, URL, headers); McpFailure when the call
        cannot be made or completed. Sent a second time only when it surely never ran."""
        sent = self._checked(url, headers)
        await cpu.load_modules("agentsvc.mcp_transport")  # off the loop, on the first exchange
        key = (team, url, tuple(sorted((k.lower(), v) for k, v in sent.items())))
        exchange = Exchange(Budget(self.max_response_bytes), telemetry.inject({}))
        try:
            async with asyncio.timeout(self.timeout):
                result = await self._call(key, url, sent, exchange, name, arguments)
        except McpFailure:
            raise
        except Exception as exc:  # noqa: BLE001 - the deadline, as today's message
            raise self._failure(exc, exchange.budget, url) from None
        content = [block.model_dump(mode="json", by_alias=True) for block in result.content]
        return CallOutcome(content, result.structured_content, bool(result.is_error))

    async def _call(
        self,
        key: tuple,
        url: str,
        sent: dict[str, str],
        exchange: Exchange,
        name: str,
        arguments: dict[str, Any],
    ) -> Any:
        from agentsvc import mcp_transport

        keepalive = self.sessions.idle_seconds or None  # 0: no reuse, yet one call's requests
        for attempt in range(2):
            # Once more only on a new session: others kept for the key may be as stale.
            session = self.sessions.take(key) if attempt == 0 else None
            reused = session is not None
            if session is None:
                link = mcp_transport.Link(exchange)
                session = self.sessions.open(
                    key,
                    lambda link=link: mcp_transport.session(
                        self, url, sent, link, keepalive_expiry=keepalive
                    ),
                    link,
                )
            session.link.exchange = exchange
            try:
                result = await session.run(lambda client: client.call_tool(name, arguments))
            except Exception as exc:  # noqa: BLE001 - every failure becomes one message
                self._after_failure(session, exc, exchange, mcp_transport.answered(exc))
                if reused and exchange.undelivered and attempt == 0:
                    exchange = exchange.again()  # the call never ran: once more, a new session
                    continue
                raise self._failure(exc, exchange.budget, url) from None
            except BaseException:
                self.sessions.discard(session)  # cancelled mid-call (the deadline, a shutdown)
                raise
            self.sessions.give_back(session)
            return result
        raise AssertionError("unreachable")

    def _after_failure(
        self, session: Session, exc: Exception, exchange: Exchange, answered: bool
    ) -> None:
        """Keep a session whose server answered the call with an error; end any other."""
        if answered and not exchange.session_lost and exchange.budget.refusal is None:
            self.sessions.give_back(session)
        else:
            self.sessions.discard(session)
