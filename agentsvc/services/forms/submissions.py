"""Form submissions: the public form, client results, impressions, management (list,
detail, redelivery) and analytics. Submitting is in submit.py."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from agentsvc.db import Database, Tx
from agentsvc.errors import Conflict, NotFound, ValidationFailed
from agentsvc.ids import iso, now_iso
from agentsvc.services.delivery.outbox import Queue
from agentsvc.services.forms.outbox import FormDelivery, derive_status
from agentsvc.services.forms.submit import first_attempts, form_not_found
from agentsvc.services.tenant_input.schemas import json_depth
from agentsvc.store import agents as agents_store
from agentsvc.store import submissions as store
from agentsvc.store import tools as tools_store
from agentsvc.store.deliveries import Attempt
from agentsvc.store.submissions import Delivery, Submission
from agentsvc.store.tools import Tool

MAX_CLIENT_DATA_DEPTH = 32
STATUSES = (
    "pending",
    "submitted",
    "webhook_success",
    "webhook_failed",
    "client_success",
    "client_failed",
    "success",
    "failed",
)
_NO_OUTCOMES = {"submitted": 0, "successful": 0, "failed": 0, "unseen": 0, "unstarted": 0}


@dataclass(frozen=True, slots=True)
class ClientReport:
    """What the widget's client handler reported of a submission."""

    submission_id: str
    success: bool
    message: str | None
    data: dict | None
    session_id: str | None  # the widget session reporting it, if any


@dataclass(frozen=True, slots=True)
class SubmissionQuery:
    """Which of a team's submissions to list, and which page."""

    status: str | None
    agent_id: str | None
    tool_id: str | None
    limit: int
    offset: int
    after: tuple[str, str] | None = None  # a (created_at, id) key, instead of the offset


@dataclass(frozen=True, slots=True)
class SubmissionDetail:
    submission: Submission
    deliveries: list[Delivery]
    attempts: list[Attempt]


async def get_public_form(
    db: Database, tool_id_or_name: str, agent_id: str | None, team_id: str | None = None
) -> Tool:
    """An enabled form tool by id, or by name within `agent_id`, or (for a signed-in
    caller) by a name that only one of the caller's agents gives a form."""
    tool = await tools_store.get_public(db.reader, tool_id_or_name)
    if tool is None and agent_id is not None:
        tool = await tools_store.get_by_name(db.reader, agent_id, tool_id_or_name)
    elif tool is None and team_id is not None:
        return await _form_named(db, team_id, tool_id_or_name)
    elif tool is None:
        raise NotFound("Form not found (give agentId to find a form by its name)")
    if tool is None or tool.execution_type != "form" or not tool.is_enabled:
        raise form_not_found()
    if agent_id is not None and tool.agent_id != agent_id:
        raise form_not_found()
    return tool


async def _form_named(db: Database, team_id: str, name: str) -> Tool:
    found = await tools_store.enabled_forms_named(db.reader, team_id, name)
    if not found:
        raise form_not_found()
    if len(found) > 1:
        raise ValidationFailed(
            f"agentId: several of your agents have a form named {name!r}; give agentId"
        )
    return found[0]


async def report_client_result(db: Database, report: ClientReport, team_id: str | None) -> None:
    """Record what the widget's client handler reported; the status follows.

    A submission made from a widget session takes results only from that session (or a
    key of its team, `team_id`); another caller is told it does not exist.
    """
    submission_id, success, data = report.submission_id, report.success, report.data
    if data is not None and json_depth(data, MAX_CLIENT_DATA_DEPTH) > MAX_CLIENT_DATA_DEPTH:
        # Stored as JSON, whose encoder stops at 255 levels: refuse well before.
        raise ValidationFailed(f"data: must not nest deeper than {MAX_CLIENT_DATA_DEPTH} levels")

    async def write(tx: Tx) -> None:
        sub = await store.read_submission(tx, submission_id)
        if sub is None or not _may_report(sub, team_id, report.session_id):
            raise NotFound("Submission not found")
        if sub.client_handler is None:  # webhook mode, or a form that only stores
            raise ValidationFailed("submissionId: this form has no client handler")
        if sub.client_result is not None:
            if bool(sub.client_result.get("success")) == success:
                return  # the widget repeating itself
            raise Conflict("submissionId: the client result was already reported")
        result = {
            "success": success,
            "message": report.message,
            "data": data,
            "reportedAt": now_iso(),
        }
        status = derive_status(sub.execution_mode, await _webhook_state(tx, sub.id), result)
        changes = {"client_result": result, "status": status}
        await store.update_submission(tx, sub.id, changes, result["reportedAt"])

    await db.write_batched(write)


def _may_report(sub: Submission, team_id: str | None, session_id: str | None) -> bool:
    if sub.session_id is None or team_id == sub.team_id:
        return True
    return session_id == sub.session_id


async def _webhook_state(tx: Tx, submission_id: str) -> str | None:
    deliveries = await store.read_deliveries(tx, submission_id)
    if deliveries and deliveries[0].kind == "webhook":
        return deliveries[0].status
    return None


async def record_event(db: Database, tool_id: str, event_type: str, session_id: str | None) -> None:
    """Count a form impression or start reported by the widget."""
    tool = await tools_store.get_public(db.reader, tool_id)
    if tool is None or tool.execution_type != "form" or not tool.is_enabled:
        raise form_not_found()
    now = now_iso()

    async def write(tx: Tx) -> None:
        await store.insert_event(
            tx,
            tool_id=tool.id,
            agent_id=tool.agent_id,
            event_type=event_type,
            session_id=session_id,
            now=now,
        )

    await db.write_batched(write)


async def list_submissions(
    db: Database, team_id: str, query: SubmissionQuery
) -> tuple[list[Submission], int, bool]:
    """A page of the team's submissions (newest first), the total, and whether more follow;
    `after` continues from a (created_at, id) key instead of an offset."""
    filters = {"status": query.status, "agent_id": query.agent_id, "tool_id": query.tool_id}
    page, more = await store.list_submissions(
        db.reader, team_id, limit=query.limit, offset=query.offset, after=query.after, **filters
    )
    return page, await store.count_submissions(db.reader, team_id, **filters), more


async def get_detail(db: Database, team_id: str, submission_id: str) -> SubmissionDetail:
    """A team's submission with its deliveries and every attempt."""
    sub = await store.get_submission(db.reader, submission_id, team_id)
    if sub is None:
        raise NotFound("Submission not found")
    deliveries = await store.deliveries_for(db.reader, sub.id)
    attempts = await store.attempts_for(db.reader, sub.id)
    return SubmissionDetail(sub, deliveries, attempts)


async def redeliver(
    db: Database, queue: Queue[FormDelivery], team_id: str, submission_id: str
) -> SubmissionDetail:
    """Queue every failed delivery of a submission again (a fresh schedule) and try it now."""
    now_dt = datetime.now(UTC)
    now = iso(now_dt)
    lease = queue.lease_until(now_dt, attempts=2)

    async with db.write() as tx:
        sub = await store.read_submission(tx, submission_id, team_id)
        if sub is None:
            raise NotFound("Submission not found")
        failed = [d for d in await store.read_deliveries(tx, sub.id) if d.status == "failed"]
        if not failed:
            raise ValidationFailed("id: this submission has no failed delivery to redeliver")
        for d in failed:
            fields = {
                "status": "pending",
                "cycle_start": d.attempts,
                "next_attempt_at": now,
                "lease_until": lease,
                "completed_at": None,
            }
            await store.update_delivery(tx, d.id, fields, now)
        if failed[0].kind == "webhook":
            status = derive_status(sub.execution_mode, "pending", sub.client_result)
            await store.update_submission(tx, sub.id, {"status": status}, now)
        failed_ids = {d.id for d in failed}
        retry = [d for d in await store.read_deliveries(tx, sub.id) if d.id in failed_ids]
    task = asyncio.ensure_future(first_attempts(queue, sub, retry))
    await asyncio.shield(task)
    return await get_detail(db, team_id, submission_id)


async def analytics(db: Database, team_id: str, agent_id: str) -> list[dict[str, Any]]:
    """Per form tool of the agent: counts, conversion and completion rates, field rates."""
    if await agents_store.get(db.reader, team_id, agent_id) is None:
        raise NotFound("Agent not found")
    tools = [
        t
        for t in await tools_store.list_for_agent(db.reader, team_id, agent_id)
        if t.execution_type == "form"
    ]
    events = await store.event_counts(db.reader, agent_id)
    outcomes = await store.outcome_counts(db.reader, agent_id)
    fields = await store.field_counts(db.reader, agent_id)
    entries = []
    for tool in tools:
        counts = outcomes.get(tool.id, _NO_OUTCOMES)
        submitted = counts["submitted"]
        # A submission with no recorded impression (or start) was its own: sent by the API,
        # or by a page whose event was lost. Every submission was shown and started, so
        # neither count can be below `submitted` and the rates stay within 0-100.
        impressions = max(events.get((tool.id, "impression"), 0) + counts["unseen"], submitted)
        started = max(events.get((tool.id, "started"), 0) + counts["unstarted"], submitted)
        names = [f["name"] for f in (tool.form_schema or {}).get("fields", [])]
        entries.append(
            {
                "toolId": tool.id,
                "toolName": tool.name,
                "impressions": impressions,
                "started": started,
                "submitted": submitted,
                "successful": counts["successful"],
                "failed": counts["failed"],
                "conversionRate": rate(submitted, impressions),
                "completionRate": rate(submitted, started),
                "fieldCompletionRates": {
                    name: rate(fields.get((tool.id, name), 0), submitted) for name in names
                },
            }
        )
    return entries


def rate(part: int, whole: int) -> float:
    """part / whole as a percentage with one decimal (halves rounded up); 0.0 when whole is 0."""
    if not whole:
        return 0.0
    tenths = (2000 * part + whole) // (2 * whole)  # integer arithmetic: 2/3 is 66.7, 1/16 6.3
    return tenths / 10
