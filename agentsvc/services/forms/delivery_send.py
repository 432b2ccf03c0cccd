"""Sending one delivery attempt: signed webhooks, team chat messages and e-mail."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import hmac
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

import aiosmtplib
import orjson

from agentsvc.config import WebhookSettings
from agentsvc.db import Database
from agentsvc.outbound import OutboundClient, OutboundError
from agentsvc.secretbox import SecretBox, SecretBoxError
from agentsvc.services.forms.values import fill_payload, fill_text, template_text
from agentsvc.store import submissions as store
from agentsvc.store.submissions import Delivery, Submission

RESPONSE_BODY_CAP = 4096  # bytes of a receiver's answer kept in the attempt log
ERROR_CAP = 500
MAIL_TIMEOUT_SECONDS = 30.0


def sign(secret: str, message_id: str, timestamp: int, body: bytes) -> str:
    """The Standard Webhooks `webhook-signature` value: `v1,` + base64 HMAC-SHA256."""
    key = base64.b64decode(secret.removeprefix("whsec_"))
    signed = f"{message_id}.{timestamp}.".encode() + body
    return "v1," + base64.b64encode(hmac.new(key, signed, hashlib.sha256).digest()).decode()


@dataclass(frozen=True, slots=True)
class Outcome:
    """What one attempt came to."""

    success: bool
    status_code: int | None = None
    error: str | None = None
    body: str | None = None
    stop: bool = False  # no further attempts (410 Gone)
    submission_status: str | None = None  # after a webhook attempt was recorded


def submission_payload(sub: Submission, data_dir: Path) -> dict[str, Any]:
    """The documented webhook body; files go back out as the data URLs that were sent."""
    form_data = dict(sub.form_data)
    for field, rel in (sub.files or {}).items():
        described = form_data.get(field) or {}
        raw = (data_dir / rel).read_bytes()
        kind = described.get("contentType", "application/octet-stream")
        name = described.get("fileName")
        # The name goes back as it came (`;name=`), percent-encoded so that no `;` or `,`
        # of a visitor's file name can change how the data URL reads.
        params = f";name={quote(name, safe='')}" if name else ""
        form_data[field] = f"data:{kind}{params};base64,{base64.b64encode(raw).decode('ascii')}"
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


class Sender:
    """Sends deliveries through the guarded outbound client and the mailer."""

    def __init__(
        self,
        *,
        db: Database,
        outbound: OutboundClient,
        box: SecretBox,
        settings: WebhookSettings,
        data_dir: Path,
        mailer: Callable[[], Any],
    ):
        self.db = db
        self.outbound = outbound
        self.box = box
        self.settings = settings
        self.data_dir = data_dir
        self._mailer = mailer

    async def send(self, delivery: Delivery, sub: Submission) -> Outcome:
        """Make one attempt of a delivery; failures are outcomes, not exceptions."""
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
                payload = await asyncio.to_thread(submission_payload, sub, self.data_dir)
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
                stamp = int(time.time())
                headers["webhook-id"] = delivery.webhook_id
                headers["webhook-timestamp"] = str(stamp)
                headers["webhook-signature"] = sign(secret, delivery.webhook_id, stamp, body)
        headers["Content-Type"] = "application/json"
        return await self.post(spec["url"], headers, body)

    async def post(self, url: str, headers: dict[str, str], body: bytes) -> Outcome:
        """POST a JSON body through the guarded client; a 2xx is success, 410 stops."""
        try:
            resp = await self.outbound.request(
                "POST",
                url,
                headers=headers,
                data=body,
                timeout=self.settings.timeout_seconds,
                max_response_bytes=RESPONSE_BODY_CAP,
            )
        except OutboundError as exc:
            return Outcome(False, error=exc.message[:ERROR_CAP])
        text = resp.text()
        if resp.ok:
            return Outcome(True, resp.status, body=text)
        if resp.status == 410:
            return Outcome(
                False, 410, "410 Gone: the receiver asked for no more deliveries", text, True
            )
        return Outcome(False, resp.status, f"HTTP {resp.status}", text)

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
