"""A form submission's deliveries as a kind of the outbox (services/delivery/outbox.py).

Each target of a submission is a `form_deliveries` row: position 0 its webhook, 1.. its
post actions (a signed webhook, a team chat message, an e-mail to members). This module
knows what such a row sends and what its attempt changes besides the row: a webhook's
attempt moves its submission's status on.
"""

from __future__ import annotations

import asyncio
import base64
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

import aiosmtplib
import orjson

from agentsvc.db import Database, Tx
from agentsvc.errors import StorageUnavailable
from agentsvc.secretbox import SecretBox, SecretBoxError
from agentsvc.services.delivery.outcome import Outcome
from agentsvc.services.delivery.post import ERROR_CAP, Poster
from agentsvc.services.delivery.signing import signature_headers
from agentsvc.services.forms.files import key_of
from agentsvc.services.forms.values import MAX_FILE_BYTES, fill_payload, fill_text, template_text
from agentsvc.storage import FileMissing, FileStore, read_all
from agentsvc.store import submissions as store
from agentsvc.store.submissions import Delivery, Submission

MAIL_TIMEOUT_SECONDS = 30.0


def derive_status(mode: str, webhook: str | None, client_result: dict | None) -> str:
    """A submission's status from its primary delivery state and its client result."""
    client = None if client_result is None else bool(client_result.get("success"))
    if mode == "client":
        return {None: "submitted", True: "client_success", False: "client_failed"}[client]
    if mode == "webhook":
        return {"success": "webhook_success", "failed": "webhook_failed"}.get(webhook, "pending")
    if webhook == "failed" or client is False:
        return "failed"
    if webhook == "success":
        return "success" if client else "webhook_success"
    return "client_success" if client else "pending"


async def submission_payload(sub: Submission, files: FileStore) -> dict[str, Any]:
    """The documented webhook body; files go back out as the data URLs that were sent (the
    JSON body holds them whole: at most 5 MB each)."""
    form_data = dict(sub.form_data)
    for field, recorded in (sub.files or {}).items():
        described = form_data.get(field) or {}
        raw = await read_all(files, key_of(recorded), MAX_FILE_BYTES)
        kind = described.get("contentType", "application/octet-stream")
        name = described.get("fileName")
        # The name goes back as it came (`;name=`), percent-encoded so that no `;` or `,`
        # of a visitor's file name can change how the data URL reads.
        params = f";name={quote(name, safe='')}" if name else ""
        encoded = await asyncio.to_thread(base64.b64encode, raw)  # CPU work: off the loop
        form_data[field] = f"data:{kind}{params};base64,{encoded.decode('ascii')}"
    return {
        "submissionId": sub.id,
        "toolId": sub.tool_id,
        "toolName": sub.tool_name,
        "conversationId": sub.conversation_id,
        "formData": form_data,
        "submittedAt": sub.created_at,
    }


def template_values(sub: Submission) -> dict[str, Any]:
    return {**sub.form_data, "_toolName": sub.tool_name}


def email_text(sub: Submission) -> str:
    lines = [f"A form was submitted: {sub.tool_name}", ""]
    lines += [f"{name}: {template_text(value)}" for name, value in sub.form_data.items()]
    lines += ["", f"Submission: {sub.id}", f"Submitted at: {sub.created_at}"]
    if sub.conversation_id:
        lines.append(f"Conversation: {sub.conversation_id}")
    return "\n".join(lines) + "\n"


@dataclass(frozen=True, slots=True)
class FormDelivery:
    """A leased form delivery with its submission."""

    delivery: Delivery
    submission: Submission


class FormDeliveries:
    """The form deliveries' kind of the outbox: webhooks and post actions of submissions."""

    outbox = store.OUTBOX
    noun = "delivery"

    def __init__(
        self,
        db: Database,
        poster: Poster,
        box: SecretBox,
        files: FileStore,
        mailer: Callable[[], Any],
    ):
        self.db = db
        self.poster = poster
        self.box = box
        self.files = files
        self._mailer = mailer
        # An e-mail may take longer than a webhook.
        self.timeout_seconds = max(poster.timeout_seconds, MAIL_TIMEOUT_SECONDS)

    async def load(self, rows: list[Delivery]) -> list[FormDelivery]:
        """The claimed rows with their submissions (those of a deleted one are left out)."""
        ids = list({d.submission_id for d in rows})
        subs = {s.id: s for s in await store.get_submissions(self.db.reader, ids)}
        return [FormDelivery(d, subs[d.submission_id]) for d in rows if d.submission_id in subs]

    def row(self, item: FormDelivery) -> Delivery:
        return item.delivery

    def label(self, item: FormDelivery) -> str:
        return item.delivery.kind

    def columns(self, outcome: Outcome) -> dict[str, Any]:
        return {}

    async def recorded(
        self, tx: Tx, item: FormDelivery, fields: dict[str, Any], outcome: Outcome, now: str
    ) -> str | None:
        """A webhook's attempt moves its submission on; returns the submission's status."""
        if item.delivery.kind != "webhook":
            return None
        current = await store.read_submission(tx, item.submission.id)
        if current is None:
            return None
        webhook_state = fields.get("status", "pending")
        status = derive_status(current.execution_mode, webhook_state, current.client_result)
        changes = {
            "webhook_attempts": fields["attempts"],
            "last_error": outcome.error,
            "status": status,
        }
        await store.update_submission(tx, item.submission.id, changes, now)
        return status

    async def send(self, item: FormDelivery) -> Outcome:
        """Make one attempt of a delivery; failures are outcomes, not exceptions."""
        delivery, sub = item.delivery, item.submission
        spec = delivery.spec
        if delivery.kind == "email":
            return await self._send_email(sub, spec)
        headers: dict[str, str] = {}
        if delivery.kind == "team_chat":
            text = fill_text(spec.get("message", ""), template_values(sub))
            body = orjson.dumps({"text": text})
        else:
            if delivery.kind == "post_webhook" and spec.get("payload") is not None:
                payload = fill_payload(spec["payload"], template_values(sub))
            else:
                try:
                    payload = await submission_payload(sub, self.files)
                except FileMissing:
                    return Outcome(
                        False, error="a file of the submission is no longer stored", stop=True
                    )
                except StorageUnavailable:
                    return Outcome(False, error="the file storage is unavailable")
            body = orjson.dumps(payload)
            # The action's own headers first: the signature headers may not be overridden.
            headers.update(
                {
                    k: v
                    for k, v in (spec.get("headers") or {}).items()
                    if not k.lower().startswith("webhook-") and k.lower() != "content-type"
                }
            )
            if delivery.sealed_secret is not None:
                try:
                    secret = self.box.open(delivery.sealed_secret, f"tool-webhook:{sub.tool_id}")
                except SecretBoxError:
                    return Outcome(False, error="the signing secret cannot be opened")
                headers.update(signature_headers(secret, delivery.webhook_id, body))
        headers["Content-Type"] = "application/json"
        return await self.poster.post(spec["url"], headers, body)

    async def _send_email(self, sub: Submission, spec: dict) -> Outcome:
        mailer = self._mailer()
        if mailer is None:
            return Outcome(False, error="e-mail is not available in this server")
        recipients = await store.member_emails(
            self.db.reader, sub.team_id, list(spec.get("recipientIds") or [])
        )
        if not recipients:
            return Outcome(False, error="none of the recipients is a member of the team", stop=True)
        values = template_values(sub)
        subject = fill_text(spec.get("subject") or "New submission: {{_toolName}}", values)
        subject = " ".join(subject.split())[:200]
        try:
            await asyncio.wait_for(
                mailer.send(", ".join(recipients), subject, email_text(sub)),
                MAIL_TIMEOUT_SECONDS + 5,
            )
        except (aiosmtplib.SMTPException, OSError, TimeoutError, ValueError) as exc:
            return Outcome(False, error=f"e-mail failed: {exc}"[:ERROR_CAP])
        return Outcome(True)
