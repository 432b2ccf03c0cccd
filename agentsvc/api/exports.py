"""Streamed downloads: an agent's conversations (a row per message) and form submissions,
as CSV or JSON Lines.

Everything that can fail with a clear error (the agent, the filters, the team's slot among
its exports running at once) is checked before the response starts. Then rows are read a
batch at a time and written as they are encoded, so the server holds about one batch
whatever the export's size. A failure after the start cannot change the status any more:
the connection is cut, so the client sees an incomplete download rather than a short file.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from typing import Any, Literal, Protocol

import aiohttp
from aiohttp import web
from pydantic import Field

from agentsvc.api import app_keys
from agentsvc.api.audit import actor_of
from agentsvc.api.errors import RateLimited
from agentsvc.api.list_filters import AgentId, ConversationFilterQuery
from agentsvc.api.models import QueryModel
from agentsvc.api.pipeline import finish_response
from agentsvc.api.routing import Call, RouteTable
from agentsvc.services.exports.formats import MEDIA_TYPES, CsvEncoder, jsonl_rows
from agentsvc.services.exports.service import ExportsService
from agentsvc.services.exports.submissions import SubmissionFilter
from agentsvc.services.forms.submissions import STATUSES
from agentsvc.store.agents import Agent

log = logging.getLogger(__name__)

routes = RouteTable("exports")


def _exports(call: Call) -> ExportsService:
    return call.app[app_keys.exports_key]


Format = Literal["csv", "jsonl"]
FORMAT_DESCRIPTION = "csv (RFC 4180, formulas defused) or jsonl (one JSON object per line)"
EXPORT_MEDIA_TYPES = ("text/csv", "application/x-ndjson")
SLOT_RETRY_AFTER_SECONDS = 5  # an export of a few hundred thousand rows takes seconds


class ConversationExportQuery(ConversationFilterQuery):
    agent_id: AgentId
    format: Format = Field("csv", description=FORMAT_DESCRIPTION)


class SubmissionExportQuery(QueryModel):
    agent_id: AgentId
    format: Format = Field("csv", description=FORMAT_DESCRIPTION)
    status: Literal[STATUSES] | None = None  # type: ignore[valid-type]
    tool_id: str | None = Field(None, min_length=1, max_length=100)


class Export(Protocol):
    agent: Agent
    columns: tuple[str, ...]
    plain: frozenset[str]  # columns CSV writes as they are (values the service makes)

    @property
    def filename(self) -> str: ...

    def batches(self, flat: bool = False) -> AsyncIterator[list[dict[str, Any]]]: ...


async def _stream(
    call: Call, export: Export, fmt: str, action: str, filters: list[str]
) -> web.StreamResponse:
    """Hold one of the team's export slots, record the export in the audit log and stream
    it (see the module). The log names the filters used, never their values (a search or a
    userId may be an end user's)."""
    exports = _exports(call)
    if not await exports.hold_slot(call.team_id):
        raise RateLimited(
            f"At most {exports.max_per_team} exports of a team at once; try again when one"
            " has finished",
            headers={"Retry-After": str(SLOT_RETRY_AFTER_SECONDS)},
        )
    try:
        details = {"format": fmt, "filters": filters}
        await exports.record(actor_of(call), action, export.agent.id, export.filename, details)
        response = web.StreamResponse(
            headers={
                "Content-Type": MEDIA_TYPES[fmt],
                "Content-Disposition": f'attachment; filename="{export.filename}.{fmt}"',
                "Cache-Control": "no-store",
                "X-Content-Type-Options": "nosniff",
            }
        )
        finish_response(call.request, response)
        await response.prepare(call.request)
        try:
            await _write(response, export, fmt)
        except (ConnectionError, aiohttp.ClientConnectionResetError):
            return response  # the client went away: nothing more to send
        except Exception:
            log.exception("export %s failed after it started", export.filename)
            if call.request.transport is not None:
                call.request.transport.abort()  # a cut download, never a short file
            return response
        await response.write_eof()
        return response
    finally:
        # Shielded: a download cancelled at shutdown still gives its slot back.
        await asyncio.shield(exports.release_slot(call.team_id))


async def _read_ahead(
    batches: AsyncIterator[list[dict[str, Any]]],
) -> AsyncIterator[list[dict[str, Any]]]:
    """The batches, the next one read (in the database's thread or server) while the
    current one is encoded and written."""
    pending = asyncio.ensure_future(anext(batches))
    try:
        while True:
            try:
                batch = await pending
            except StopAsyncIteration:
                return
            pending = asyncio.ensure_future(anext(batches))
            yield batch
    finally:
        if not pending.done():
            pending.cancel()
            with contextlib.suppress(asyncio.CancelledError, StopAsyncIteration):
                await pending


async def _write(response: web.StreamResponse, export: Export, fmt: str) -> None:
    if fmt == "csv":
        encoder = CsvEncoder(export.columns, export.plain)
        await response.write(encoder.header())
        async for rows in _read_ahead(export.batches(flat=True)):
            await response.write(encoder.rows(rows))
    else:
        async for rows in _read_ahead(export.batches()):
            await response.write(jsonl_rows(rows))


def _filters_given(query: QueryModel) -> list[str]:
    """The names (as the API spells them) of the filters an export was asked with."""
    fields = type(query).model_fields
    names = query.model_fields_set - {"agent_id", "format"}
    return sorted(fields[n].alias or n for n in names)


@routes.get(
    "/conversations/export",
    query=ConversationExportQuery,
    media_type=EXPORT_MEDIA_TYPES,
    response_headers=("Content-Disposition",),
    errors=(400, 404),
    tag="conversations",
)
async def export_conversations(call: Call):
    """Download an agent's conversations, one row per message, with the list's filters."""
    query: ConversationExportQuery = call.query
    export = await _exports(call).conversations(call.team_id, query.agent_id, query.filters())
    given = _filters_given(query)
    return await _stream(call, export, query.format, "conversations.exported", given)


@routes.get(
    "/form-submissions/export",
    query=SubmissionExportQuery,
    media_type=EXPORT_MEDIA_TYPES,
    response_headers=("Content-Disposition",),
    errors=(400, 404),
    tag="form submissions",
)
async def export_submissions(call: Call):
    """Download an agent's form submissions, one row per submission, with the list's
    filters (status, toolId)."""
    query: SubmissionExportQuery = call.query
    wanted = SubmissionFilter(query.status, query.tool_id)
    export = await _exports(call).submissions(call.team_id, query.agent_id, wanted)
    given = _filters_given(query)
    return await _stream(call, export, query.format, "form_submissions.exported", given)
