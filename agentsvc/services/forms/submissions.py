"""Form submissions: the public form, submit (stored with its outbox in one transaction),
client results, impressions, management and analytics."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from agentsvc.db import Database, Tx
from agentsvc.errors import Conflict, FileQuotaExceeded, NotFound, ValidationFailed
from agentsvc.ids import iso, new_id, now_iso
from agentsvc.services.chat.conversations import caller_may_use
from agentsvc.services.events import payloads
from agentsvc.services.events.emitter import NOTHING, Emitter
from agentsvc.services.forms.delivery import Deliverer, Outcome, derive_status
from agentsvc.services.forms.files import remove_folder, write_files
from agentsvc.services.forms.values import check_form, slow_to_check, template_text
from agentsvc.services.tenant_input.schemas import json_depth
from agentsvc.store import agents as agents_store
from agentsvc.store import analytics as analytics_store
from agentsvc.store import conversations as conv_store
from agentsvc.store import submissions as store
from agentsvc.store import tools as tools_store
from agentsvc.store.conversations import Conversation, StoredMessage
from agentsvc.store.submissions import Attempt, Delivery, Submission
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
_BIG_VALUE = 64 * 1024
_NO_OUTCOMES = {"submitted": 0, "successful": 0, "failed": 0, "unseen": 0, "unstarted": 0}


@dataclass(frozen=True, slots=True)
class SubmitResult:
    submission: Submission
    status: str  # after the first attempts
    webhook: Outcome | None
    post_actions: list[tuple[str, Outcome]]


@dataclass(frozen=True, slots=True)
class SubmissionDetail:
    submission: Submission
    deliveries: list[Delivery]
    attempts: list[Attempt]


def _form_not_found() -> NotFound:
    return NotFound("Form not found")


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
        raise _form_not_found()
    if agent_id is not None and tool.agent_id != agent_id:
        raise _form_not_found()
    return tool


async def _form_named(db: Database, team_id: str, name: str) -> Tool:
    found = await tools_store.enabled_forms_named(db.reader, team_id, name)
    if not found:
        raise _form_not_found()
    if len(found) > 1:
        raise ValidationFailed(
            f"agentId: several of your agents have a form named {name!r}; give agentId"
        )
    return found[0]


def _epoch_ms(name: str, value: float | None) -> str | None:
    if value is None:
        return None
    try:
        return iso(datetime.fromtimestamp(value / 1000, UTC))
    except (ValueError, OverflowError, OSError) as exc:
        raise ValidationFailed(f"{name}: must be a time in epoch milliseconds") from exc


def _deliveries(tool: Tool, sub_id: str, now: str, lease_until: str) -> list[Delivery]:
    """The outbox rows of a new submission: position 0 the webhook, 1.. the post actions."""
    rows: list[Delivery] = []

    def add(position: int, kind: str, spec: dict, webhook_id: str, signed: bool) -> None:
        rows.append(
            Delivery(
                id=new_id("delivery"),
                submission_id=sub_id,
                position=position,
                kind=kind,
                webhook_id=webhook_id,
                spec=spec,
                sealed_secret=tool.form_webhook_secret if signed else None,
                status="pending",
                attempts=0,
                cycle_start=0,
                next_attempt_at=now,
                lease_until=lease_until,  # the request makes the first attempt itself
                last_error=None,
                created_at=now,
                updated_at=now,
                completed_at=None,
            )
        )

    if tool.form_execution_mode in ("webhook", "both") and tool.form_webhook_url:
        add(0, "webhook", {"url": tool.form_webhook_url}, sub_id, True)
    for number, action in enumerate(tool.form_post_actions or [], start=1):
        webhook_id = f"{sub_id}_pa{number}"
        if action["type"] == "webhook":
            spec = {"url": action.get("url") or action.get("webhookUrl")}
            spec["headers"] = action.get("headers") or {}
            if "payload" in action:
                spec["payload"] = action["payload"]
            add(number, "post_webhook", spec, webhook_id, True)
        elif action["type"] == "team_chat":
            message = action.get("messageTemplate") or action.get("message") or ""
            spec = {"url": action["webhookUrl"], "message": message}
            add(number, "team_chat", spec, webhook_id, False)
        else:
            spec = {"recipientIds": action["recipientIds"], "subject": action.get("subject")}
            add(number, "email", spec, webhook_id, False)
    return rows


@dataclass(frozen=True, slots=True)
class StoredSubmission:
    """A submission just stored with its outbox rows, before its first attempts."""

    submission: Submission
    deliveries: list[Delivery]


def _quota_error(quota: int) -> FileQuotaExceeded:
    return FileQuotaExceeded(
        f"formData: the files would exceed this agent's storage quota for form files"
        f" ({quota / 2**20:g} MB, [forms] file_quota_mb_per_agent); nothing was stored"
    )


async def _check_conversation(
    db: Database, agent_id: str, conversation_id: str, team_id: str | None, session_id: str | None
) -> Conversation | None:
    """A conversation of the tool's agent takes a submission only from a caller who may
    write to it (the rule of `/chat`); an id naming none of its conversations links nothing."""
    conv = await conv_store.get_for_agent(db.reader, agent_id, conversation_id)
    if conv is not None and not caller_may_use(conv, team_id, session_id):
        raise NotFound("Conversation not found")
    return conv


async def _trigger_of(
    db: Database, agent_id: str, trigger_id: str | None, conv: Conversation | None
) -> str | None:
    """The trigger a submission counts for: the one that showed the form (when it is the
    agent's), else the one its conversation started from."""
    if trigger_id is not None and await analytics_store.trigger_of_agent(
        db.reader, agent_id, trigger_id
    ):
        return trigger_id
    return conv.trigger_id if conv is not None else None


async def store_submission(
    deliverer: Deliverer,
    *,
    tool_id: str,
    conversation_id: str | None,
    session_id: str | None,
    team_id: str | None,
    form_data: dict[str, Any],
    fields_completed: list[str],
    impression_at: float | None,
    started_at: float | None,
    file_quota_mb: float,
    emitter: Emitter | None = None,
    trigger_id: str | None = None,
) -> StoredSubmission:
    """Check a submission, write its files (within the agent's quota) and store it with its
    outbox rows in one transaction. The submitted values are not needed afterwards."""
    db = deliverer.db
    tool = await tools_store.get_public(db.reader, tool_id)
    if tool is None or tool.execution_type != "form" or not tool.is_enabled:
        raise _form_not_found()
    conv = None
    if conversation_id:
        conv = await _check_conversation(db, tool.agent_id, conversation_id, team_id, session_id)
    trigger_id = await _trigger_of(db, tool.agent_id, trigger_id, conv)
    impression = _epoch_ms("impressionAt", impression_at)
    started = _epoch_ms("startedAt", started_at)
    schema = tool.form_schema or {"fields": []}
    completed = list(dict.fromkeys(fields_completed))
    if slow_to_check(schema, form_data):
        checked = await asyncio.to_thread(check_form, schema, form_data, completed)
    else:
        checked = check_form(schema, form_data, completed)
    files_bytes = sum(upload.size for upload in checked.files)
    quota = int(file_quota_mb * 2**20)
    if (
        files_bytes
        and await store.file_bytes_of_agent(db.reader, tool.agent_id) + files_bytes > quota
    ):
        raise _quota_error(quota)
    sub_id = new_id("submission")
    now_dt = datetime.now(UTC)
    now = iso(now_dt)
    files = await asyncio.to_thread(write_files, deliverer.data_dir, sub_id, checked)
    values = checked.values
    del checked  # holds the submitted data URLs
    deliveries = _deliveries(tool, sub_id, now, deliverer.lease_until(now_dt, attempts=2))
    mode = tool.form_execution_mode or "webhook"
    has_webhook = bool(deliveries) and deliveries[0].kind == "webhook"
    sub = Submission(
        id=sub_id,
        team_id=tool.team_id,
        agent_id=tool.agent_id,
        tool_id=tool.id,
        tool_name=tool.name,
        conversation_id=conversation_id,
        form_data=values,
        files=files or None,
        fields_completed=completed,
        execution_mode=mode,
        client_handler=tool.form_client_handler if mode in ("client", "both") else None,
        status=derive_status(mode, "pending" if has_webhook else None, None),
        webhook_attempts=0,
        last_error=None,
        client_result=None,
        impression_at=impression,
        started_at=started,
        created_at=now,
        updated_at=now,
        session_id=session_id,
        files_bytes=files_bytes,
        trigger_id=trigger_id,
    )

    emission = await emitter.for_team(tool.team_id) if emitter is not None else NOTHING

    async def write(tx: Tx) -> None:
        # Checked again in the transaction: concurrent submits must not pass it together.
        if files_bytes and (
            await store.read_file_bytes_of_agent(tx, tool.agent_id) + files_bytes > quota
        ):
            raise _quota_error(quota)
        await store.insert_submission(tx, sub)
        await store.insert_deliveries(tx, deliveries)
        await emission.emit(
            tx, "form.submitted", lambda: payloads.form_submitted(sub), submission_id=sub.id
        )
        if trigger_id is not None:  # the trigger's funnel of the day
            day = analytics_store.day_of(now)
            await analytics_store.add_trigger_counts(
                tx, [(tool.agent_id, day, trigger_id, 0, 0, 0, 1)]
            )
        if conversation_id and await store.conversation_of_agent(
            tx, tool.agent_id, conversation_id
        ):
            note = _note_message(sub, now)
            await store.add_conversation_note(
                tx,
                message_id=note.id,
                conversation_id=note.conversation_id,
                text=note.content,
                now=now,
            )
            await emission.emit(
                tx,
                "message.created",
                lambda: payloads.message_created(tool.agent_id, note),
                conversation_id=note.conversation_id,
            )

    try:
        await db.write_batched(write)  # one transaction, shared with other small writes
    except BaseException:
        if files:
            remove_folder(deliverer.data_dir, sub_id)
        raise
    emission.sent()
    return StoredSubmission(sub, deliveries)


def _note_message(sub: Submission, now: str) -> StoredMessage:
    """The user-side message that tells the conversation of the submission."""
    assert sub.conversation_id is not None
    return StoredMessage(
        id=new_id("message"),
        conversation_id=sub.conversation_id,
        role="user",
        content=conversation_note(sub),
        tool_calls=None,
        usage=None,
        sources=None,
        status="complete",
        model=None,
        rating=None,
        created_at=now,
    )


async def deliver_first(deliverer: Deliverer, stored: StoredSubmission) -> SubmitResult:
    """Make the first attempt of each delivery of a stored submission."""
    sub = stored.submission
    # Shielded: a client that goes away must not cut an attempt in half.
    task = asyncio.ensure_future(_first_attempts(deliverer, sub, stored.deliveries))
    webhook, actions = await asyncio.shield(task)
    status = (webhook.submission_status if webhook else None) or sub.status
    return SubmitResult(sub, status, webhook, actions)


def conversation_note(sub: Submission) -> str:
    """How the submission reads in the conversation, so the model's next turn knows of it."""
    lines = [f'[The user submitted the form "{sub.tool_name}" (submission {sub.id}).]']
    lines += [f"{name}: {template_text(value)}" for name, value in sub.form_data.items()]
    return "\n".join(lines)


async def _first_attempts(
    deliverer: Deliverer, sub: Submission, deliveries: list[Delivery]
) -> tuple[Outcome | None, list[tuple[str, Outcome]]]:
    webhook = None
    rest = deliveries
    if deliveries and deliveries[0].kind == "webhook":
        webhook = await deliverer.attempt(deliveries[0], sub)
        rest = deliveries[1:]
    outcomes = await asyncio.gather(*(deliverer.attempt(d, sub) for d in rest))
    kinds = {"post_webhook": "webhook", "team_chat": "team_chat", "email": "email"}
    return webhook, [(kinds[d.kind], o) for d, o in zip(rest, outcomes, strict=True)]


async def report_client_result(
    db: Database,
    submission_id: str,
    success: bool,
    message: str | None,
    data: dict | None,
    *,
    team_id: str | None = None,
    session_id: str | None = None,
) -> None:
    """Record what the widget's client handler reported; the status follows.

    A submission made from a widget session takes results only from that session (or a
    key of its team); another caller is told it does not exist.
    """
    if data is not None and json_depth(data, MAX_CLIENT_DATA_DEPTH) > MAX_CLIENT_DATA_DEPTH:
        # Stored as JSON, whose encoder stops at 255 levels: refuse well before.
        raise ValidationFailed(f"data: must not nest deeper than {MAX_CLIENT_DATA_DEPTH} levels")

    async def write(tx: Tx) -> None:
        sub = await store.read_submission(tx, submission_id)
        if sub is None or not _may_report(sub, team_id, session_id):
            raise NotFound("Submission not found")
        if sub.client_handler is None:  # webhook mode, or a form that only stores
            raise ValidationFailed("submissionId: this form has no client handler")
        if sub.client_result is not None:
            if bool(sub.client_result.get("success")) == success:
                return  # the widget repeating itself
            raise Conflict("submissionId: the client result was already reported")
        result = {"success": success, "message": message, "data": data, "reportedAt": now_iso()}
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
        raise _form_not_found()
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
    db: Database,
    team_id: str,
    *,
    status: str | None,
    agent_id: str | None,
    tool_id: str | None,
    limit: int,
    offset: int,
    after: tuple[str, str] | None = None,
) -> tuple[list[Submission], int, bool]:
    """A page of the team's submissions (newest first), the total, and whether more follow;
    `after` continues from a (created_at, id) key instead of an offset."""
    filters = {"status": status, "agent_id": agent_id, "tool_id": tool_id}
    page, more = await store.list_submissions(
        db.reader, team_id, limit=limit, offset=offset, after=after, **filters
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


async def redeliver(deliverer: Deliverer, team_id: str, submission_id: str) -> SubmissionDetail:
    """Queue every failed delivery of a submission again (a fresh schedule) and try it now."""
    db = deliverer.db
    now_dt = datetime.now(UTC)
    now = iso(now_dt)
    lease = deliverer.lease_until(now_dt, attempts=2)

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
    task = asyncio.ensure_future(_first_attempts(deliverer, sub, retry))
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
