"""Submitting a form: checked, its files written, stored with its outbox rows in one
transaction, then the first attempt of each delivery made at once."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from agentsvc.db import Database, Tx
from agentsvc.errors import FileQuotaExceeded, NotFound, ValidationFailed
from agentsvc.ids import iso, new_id
from agentsvc.services.chat.conversations import caller_may_use
from agentsvc.services.delivery.outbox import Attempted, Queue
from agentsvc.services.delivery.outcome import Outcome
from agentsvc.services.events import payloads
from agentsvc.services.events.emitter import Emission
from agentsvc.services.forms.outbox import FormDelivery, derive_status
from agentsvc.services.forms.values import CheckedForm, check_form, slow_to_check, template_text
from agentsvc.store import analytics as analytics_store
from agentsvc.store import conversations as conv_store
from agentsvc.store import submissions as store
from agentsvc.store import tools as tools_store
from agentsvc.store.conversations import Conversation, StoredMessage
from agentsvc.store.submissions import Delivery, Submission
from agentsvc.store.tools import Tool


@dataclass(frozen=True, slots=True)
class SubmitInput:
    """What a submit carries, and who sent it."""

    tool_id: str
    conversation_id: str | None
    session_id: str | None
    team_id: str | None  # the caller's team (a key or a session), None for a visitor
    form_data: dict[str, Any]
    fields_completed: list[str]
    impression_at: float | None  # epoch milliseconds
    started_at: float | None
    trigger_id: str | None = None


@dataclass(frozen=True, slots=True)
class StoredSubmission:
    """A submission just stored with its outbox rows, before its first attempts."""

    submission: Submission
    deliveries: list[Delivery]


@dataclass(frozen=True, slots=True)
class SubmitResult:
    submission: Submission
    status: str  # after the first attempts
    webhook: Outcome | None
    post_actions: list[tuple[str, Outcome]]


def form_not_found() -> NotFound:
    return NotFound("Form not found")


def _epoch_ms(name: str, value: float | None) -> str | None:
    if value is None:
        return None
    try:
        return iso(datetime.fromtimestamp(value / 1000, UTC))
    except (ValueError, OverflowError, OSError) as exc:
        raise ValidationFailed(f"{name}: must be a time in epoch milliseconds") from exc


def _quota_error(quota: int) -> FileQuotaExceeded:
    return FileQuotaExceeded(
        f"formData: the files would exceed this agent's storage quota for form files"
        f" ({quota / 2**20:g} MB, [forms] file_quota_mb_per_agent); nothing was stored"
    )


async def _form_tool(db: Database, tool_id: str) -> Tool:
    tool = await tools_store.get_public(db.reader, tool_id)
    if tool is None or tool.execution_type != "form" or not tool.is_enabled:
        raise form_not_found()
    return tool


async def _check_conversation(db: Database, tool: Tool, data: SubmitInput) -> Conversation | None:
    """A conversation of the tool's agent takes a submission only from a caller who may
    write to it (the rule of `/chat`); an id naming none of its conversations links nothing."""
    if not data.conversation_id:
        return None
    conv = await conv_store.get_for_agent(db.reader, tool.agent_id, data.conversation_id)
    if conv is not None and not caller_may_use(conv, data.team_id, data.session_id):
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


@dataclass(frozen=True, slots=True)
class NewSubmission:
    """What a submission is made of, besides its values and files."""

    tool: Tool
    data: SubmitInput
    completed: list[str]
    trigger_id: str | None
    impression: str | None
    started: str | None


async def new_submission(db: Database, data: SubmitInput) -> NewSubmission:
    """The form, conversation and trigger a submit names, checked (in this order)."""
    tool = await _form_tool(db, data.tool_id)
    conv = await _check_conversation(db, tool, data)
    trigger_id = await _trigger_of(db, tool.agent_id, data.trigger_id, conv)
    impression = _epoch_ms("impressionAt", data.impression_at)
    started = _epoch_ms("startedAt", data.started_at)
    completed = list(dict.fromkeys(data.fields_completed))
    return NewSubmission(tool, data, completed, trigger_id, impression, started)


async def checked_values(db: Database, new: NewSubmission, quota: int) -> CheckedForm:
    """The values checked against the form's schema, their files within the quota."""
    schema = new.tool.form_schema or {"fields": []}
    form_data = new.data.form_data
    if slow_to_check(schema, form_data):
        checked = await asyncio.to_thread(check_form, schema, form_data, new.completed)
    else:
        checked = check_form(schema, form_data, new.completed)
    files_bytes = sum(upload.size for upload in checked.files)
    if (
        files_bytes
        and await store.file_bytes_of_agent(db.reader, new.tool.agent_id) + files_bytes > quota
    ):
        raise _quota_error(quota)
    return checked


def outbox_rows(tool: Tool, sub_id: str, now: str, lease_until: str) -> list[Delivery]:
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


def submission_row(
    new: NewSubmission, sub_id: str, now: str, values: dict, files: dict, files_bytes: int
) -> Submission:
    """The submission's row, its status as its deliveries start."""
    tool = new.tool
    mode = tool.form_execution_mode or "webhook"
    # Whether `outbox_rows` gives it a webhook row.
    has_webhook = tool.form_execution_mode in ("webhook", "both") and bool(tool.form_webhook_url)
    return Submission(
        id=sub_id,
        team_id=tool.team_id,
        agent_id=tool.agent_id,
        tool_id=tool.id,
        tool_name=tool.name,
        conversation_id=new.data.conversation_id,
        form_data=values,
        files=files or None,
        fields_completed=new.completed,
        execution_mode=mode,
        client_handler=tool.form_client_handler if mode in ("client", "both") else None,
        status=derive_status(mode, "pending" if has_webhook else None, None),
        webhook_attempts=0,
        last_error=None,
        client_result=None,
        impression_at=new.impression,
        started_at=new.started,
        created_at=now,
        updated_at=now,
        session_id=new.data.session_id,
        files_bytes=files_bytes,
        trigger_id=new.trigger_id,
    )


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


def conversation_note(sub: Submission) -> str:
    """How the submission reads in the conversation, so the model's next turn knows of it."""
    lines = [f'[The user submitted the form "{sub.tool_name}" (submission {sub.id}).]']
    lines += [f"{name}: {template_text(value)}" for name, value in sub.form_data.items()]
    return "\n".join(lines)


def store_unit(sub: Submission, deliveries: list[Delivery], emission: Emission, quota: int):
    """The one transaction of a submit: the quota checked again, the submission and its
    outbox rows, its event, its trigger's count and its note in the conversation."""
    now = sub.created_at
    agent_id = sub.agent_id

    async def write(tx: Tx) -> None:
        # Checked again in the transaction: concurrent submits must not pass it together.
        if sub.files_bytes and (
            await store.read_file_bytes_of_agent(tx, agent_id) + sub.files_bytes > quota
        ):
            raise _quota_error(quota)
        await store.insert_submission(tx, sub)
        await store.insert_deliveries(tx, deliveries)
        await emission.emit(
            tx, "form.submitted", lambda: payloads.form_submitted(sub), submission_id=sub.id
        )
        if sub.trigger_id is not None:  # the trigger's funnel of the day
            day = analytics_store.day_of(now)
            await analytics_store.add_trigger_counts(
                tx, [(agent_id, day, sub.trigger_id, 0, 0, 0, 1)]
            )
        if sub.conversation_id and await store.conversation_of_agent(
            tx, agent_id, sub.conversation_id
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
                lambda: payloads.message_created(agent_id, note),
                conversation_id=note.conversation_id,
            )

    return write


async def deliver_first(queue: Queue[FormDelivery], stored: StoredSubmission) -> SubmitResult:
    """Make the first attempt of each delivery of a stored submission."""
    sub = stored.submission
    # Shielded: a client that goes away must not cut an attempt in half.
    task = asyncio.ensure_future(first_attempts(queue, sub, stored.deliveries))
    webhook, actions = await asyncio.shield(task)
    status = (webhook.recorded if webhook else None) or sub.status
    return SubmitResult(sub, status, webhook.outcome if webhook else None, actions)


async def first_attempts(
    queue: Queue[FormDelivery], sub: Submission, deliveries: list[Delivery]
) -> tuple[Attempted | None, list[tuple[str, Outcome]]]:
    """Attempt the deliveries now (leased by the caller): the webhook first, then the post
    actions together; the webhook's attempt, and each action's type and outcome."""
    webhook = None
    rest = deliveries
    if deliveries and deliveries[0].kind == "webhook":
        webhook = await queue.attempt(FormDelivery(deliveries[0], sub))
        rest = deliveries[1:]
    done = await asyncio.gather(*(queue.attempt(FormDelivery(d, sub)) for d in rest))
    kinds = {"post_webhook": "webhook", "team_chat": "team_chat", "email": "email"}
    return webhook, [(kinds[d.kind], a.outcome) for d, a in zip(rest, done, strict=True)]
