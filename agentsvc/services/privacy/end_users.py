"""An end user's data in a team: found, exported as JSON, or erased with a count.

An end user is named by the `userId` the widget declared or by an e-mail address. Their
data is found in two steps. First the team's conversations that name them: that user id,
or that address as the declared e-mail or the address left for a reply. Then, from those,
what else is theirs: every conversation of the user ids, addresses and widget sessions
those carry (the browser that chatted before and after identifying), every conversation
with a message containing one of the addresses, and the form submissions made in any of
these conversations or sessions or whose values contain an address (or equal a user id).
Erasing deletes all of it in one transaction (messages, conversation events, webhook
events and deliveries, delivery attempts go by cascade), the form impressions of those
sessions, the kept mail to or about them, and the submissions' files after the commit.
"""

from __future__ import annotations

import asyncio
import base64
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

from agentsvc.db import Database, Tx
from agentsvc.errors import ValidationFailed
from agentsvc.ids import now_iso
from agentsvc.mail import Mailer
from agentsvc.services import audit
from agentsvc.services.audit import Actor, end_user_label
from agentsvc.services.forms.files import remove_folder
from agentsvc.store import conversations as conv_store
from agentsvc.store import end_users as store
from agentsvc.store import purge
from agentsvc.store import submissions as sub_store
from agentsvc.store.agents import Agent
from agentsvc.store.conversations import Conversation, StoredMessage
from agentsvc.store.end_users import Trace
from agentsvc.store.submissions import Submission

MAX_REF_CHARS = 200  # the longest path parameter the OpenAPI document allows
# File contents in an export, at most (larger files are listed without their data).
EXPORT_FILE_BYTES = 50 * 2**20
# Subjects of the mail the service sends about a conversation (services/handoff/notify.py).
_MAIL_SUBJECTS = ("Your conversation with ", "A visitor asks for a person — ")


@dataclass(frozen=True, slots=True)
class EndUserRef:
    """Who: a widget user id or an e-mail address."""

    by: str  # "userId" or "email"
    value: str


def parse_ref(ref: str, by: str | None) -> EndUserRef:
    """`by` when given; otherwise an address when the reference holds an `@`."""
    value = ref
    if not value or len(value) > MAX_REF_CHARS:
        raise ValidationFailed(
            f"ref: must be a user id or an e-mail address of 1 to {MAX_REF_CHARS} characters"
        )
    kind = by or ("email" if "@" in value else "userId")
    return EndUserRef(kind, value.lower() if kind == "email" else value)


@dataclass(slots=True)
class Found:
    """Everything of one end user in a team."""

    user_refs: set[str] = field(default_factory=set)
    emails: set[str] = field(default_factory=set)  # lower-cased
    sessions: set[str] = field(default_factory=set)
    conversations: dict[str, Trace] = field(default_factory=dict)
    submissions: list[Submission] = field(default_factory=list)

    def take(self, traces: list[Trace]) -> None:
        for trace in traces:
            self.conversations[trace.id] = trace


def _identifiers(found: Found, *, sessions_only: bool = False) -> None:
    """Collect what the conversations found so far say about who the end user is."""
    for trace in found.conversations.values():
        if trace.session_id:
            found.sessions.add(trace.session_id)
        if sessions_only:
            continue
        if trace.user_ref:
            found.user_refs.add(trace.user_ref)
        for address in (trace.user_email, trace.contact_email):
            if address:
                found.emails.add(address.lower())


def _values(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [v for item in value for v in _values(item)]
    if isinstance(value, dict):
        return [v for item in value.values() for v in _values(item)]
    return []


def _names_them(sub: Submission, found: Found) -> bool:
    if sub.conversation_id in found.conversations or sub.session_id in found.sessions:
        return True
    for text in _values(sub.form_data):
        lowered = text.lower()
        if text in found.user_refs or any(e in lowered for e in found.emails):
            return True
    return False


async def find(db: Database, team_id: str, ref: EndUserRef) -> Found:
    """The end user's conversations, submissions and identifiers in the team."""
    tx = db.reader
    found = Found()
    if ref.by == "email":
        found.emails.add(ref.value)
        found.take(await store.conversations_naming(tx, team_id, [], [ref.value]))
    else:
        found.user_refs.add(ref.value)
        found.take(await store.conversations_naming(tx, team_id, [ref.value], []))
    # One step out from the reference, never further: the ids and addresses of the
    # conversations that name it, and the sessions of every conversation of those.
    _identifiers(found)
    found.take(
        await store.conversations_naming(tx, team_id, list(found.user_refs), list(found.emails))
    )
    _identifiers(found, sessions_only=True)
    found.take(await store.conversations_in_sessions(tx, team_id, list(found.sessions)))
    for address in sorted(found.emails):
        found.take(await store.conversations_mentioning(tx, team_id, address))
    ids = await store.submission_ids(
        tx,
        team_id,
        conversation_ids=list(found.conversations),
        session_ids=list(found.sessions),
        texts=sorted(found.emails | found.user_refs),
    )
    subs = await sub_store.get_submissions(tx, ids)
    found.submissions = sorted(
        (s for s in subs if s.team_id == team_id and _names_them(s, found)),
        key=lambda s: (s.created_at, s.id),
    )
    return found


async def _mail_about(mailer: Mailer, tx: Tx, team_id: str, found: Found) -> list[str]:
    """Kept mail to the end user or about them: to their address when it is no account of
    the service (an account's own mail, such as a sign-in link, is not the team's to
    delete) or when it is a reply about a conversation; to the team's members when the
    body names them."""
    mails = await store.kept_mail(tx)
    if not mails or not (found.emails or found.user_refs):
        return []
    accounts = await store.users_with_emails(tx, sorted(found.emails))
    members = await store.member_emails(tx, team_id)
    needles = [*found.emails, *(r.lower() for r in found.user_refs if len(r) >= 3)]
    gone = []
    for mail in mails:
        to = mail.to_address.lower()
        about_a_conversation = mail.subject.startswith(_MAIL_SUBJECTS)
        if to in found.emails and (to not in accounts or about_a_conversation):
            gone.append(mail.id)
        elif to in members:
            body = mailer.open_kept(mail.id, mail.sealed_body).lower()
            if any(n in body for n in needles):
                gone.append(mail.id)
    return gone


async def erase(
    db: Database,
    mailer: Mailer,
    data_dir: Path,
    actor: Actor,
    ref: EndUserRef,
) -> dict[str, int]:
    """Delete everything of the end user in the actor's team; return what went, by kind."""
    team_id = actor.team_id
    found = await find(db, team_id, ref)
    conv_ids = list(found.conversations)
    sub_ids = [s.id for s in found.submissions]
    files = sum(len(s.files or {}) for s in found.submissions)
    # Opening every kept mail is CPU work: done before the write transaction, as `find` is.
    mail_ids = await _mail_about(mailer, db.reader, team_id, found)
    async with db.write() as tx:
        counts = {
            "conversations": 0,
            "messages": await store.count_rows(tx, "messages", "conversation_id", conv_ids),
            "conversationEvents": await store.count_rows(
                tx, "conversation_events", "conversation_id", conv_ids
            ),
            "submissions": 0,
            "files": files,
            "formDeliveries": await store.count_rows(
                tx, "form_deliveries", "submission_id", sub_ids
            ),
        }
        events, deliveries = await store.count_deliveries_of_events(tx, conv_ids, sub_ids)
        counts["webhookEvents"], counts["webhookDeliveries"] = events, deliveries
        form_events = await store.form_event_ids(tx, team_id, list(found.sessions))
        counts["formEvents"] = len(form_events)
        counts["mails"] = len(mail_ids)
        counts["submissions"] = await purge.delete_submissions(tx, team_id, sub_ids)
        counts["conversations"] = await purge.delete_conversations(tx, team_id, conv_ids)
        await store.delete_form_events(tx, form_events)
        await store.delete_mail(tx, mail_ids)
        await audit.record_in(
            tx,
            actor,
            "end_user.erased",
            target_type="end_user",
            label=end_user_label(ref.value),
            details={"by": ref.by, "total": sum(counts.values()), **counts},
        )
    for sub in found.submissions:
        if sub.files:
            await asyncio.to_thread(remove_folder, data_dir, sub.id)
    return counts


def _message_json(msg: StoredMessage) -> dict[str, Any]:
    return {
        "id": msg.id,
        "role": msg.role,
        "content": msg.content,
        "author": (
            {"type": "visitor"}
            if msg.role == "user"
            else {"type": "ai"}
            if msg.author_id is None
            else {"type": "human", "id": msg.author_id, "name": msg.author_name}
        ),
        "rating": msg.rating,
        "createdAt": msg.created_at,
    }


def _conversation_json(conv: Conversation, messages: list[StoredMessage], agent: str) -> dict:
    return {
        "id": conv.id,
        "agentId": conv.agent_id,
        "agentName": agent,
        "title": conv.title,
        "sessionId": conv.session_id,
        "user": {"id": conv.user_ref, "email": conv.user_email, "name": conv.user_name},
        "contactEmail": conv.contact_email,
        "status": conv.status,
        "createdAt": conv.created_at,
        "updatedAt": conv.updated_at,
        "messages": [_message_json(m) for m in messages],
    }


def _files_json(sub: Submission, data_dir: Path, budget: list[int]) -> list[dict[str, Any]]:
    out = []
    for name, rel in (sub.files or {}).items():
        described = sub.form_data.get(name) or {}
        entry = {
            "field": name,
            "fileName": described.get("fileName"),
            "contentType": described.get("contentType"),
            "size": described.get("size"),
            "dataUrl": None,
        }
        path = data_dir / rel
        size = path.stat().st_size if path.is_file() else None
        if size is not None and size <= budget[0]:
            budget[0] -= size
            kind = entry["contentType"] or "application/octet-stream"
            params = f";name={quote(entry['fileName'], safe='')}" if entry["fileName"] else ""
            data = base64.b64encode(path.read_bytes()).decode("ascii")
            entry["dataUrl"] = f"data:{kind}{params};base64,{data}"
        out.append(entry)
    return out


def _submissions_json(subs: list[Submission], data_dir: Path) -> list[dict[str, Any]]:
    budget = [EXPORT_FILE_BYTES]
    return [
        {
            "id": s.id,
            "agentId": s.agent_id,
            "toolId": s.tool_id,
            "toolName": s.tool_name,
            "conversationId": s.conversation_id,
            "sessionId": s.session_id,
            "formData": s.form_data,
            "fieldsCompleted": s.fields_completed,
            "status": s.status,
            "clientResult": s.client_result,
            "createdAt": s.created_at,
            "files": _files_json(s, data_dir, budget),
        }
        for s in subs
    ]


async def export(
    db: Database, data_dir: Path, actor: Actor, ref: EndUserRef, agents: list[Agent]
) -> dict[str, Any]:
    """Everything of the end user in the actor's team, as one JSON document."""
    found = await find(db, actor.team_id, ref)
    names = {a.id: a.name for a in agents}
    conversations = []
    for conv_id in sorted(found.conversations):
        conv = await conv_store.get(db.reader, actor.team_id, conv_id)
        if conv is None:
            continue  # deleted meanwhile
        messages = await conv_store.list_messages(db.reader, conv_id)
        conversations.append(_conversation_json(conv, messages, names.get(conv.agent_id, "")))
    conversations.sort(key=lambda c: (c["createdAt"], c["id"]))
    submissions = await asyncio.to_thread(_submissions_json, found.submissions, data_dir)
    await audit.record(
        db,
        actor,
        "end_user.exported",
        target_type="end_user",
        label=end_user_label(ref.value),
        details={
            "by": ref.by,
            "conversations": len(conversations),
            "submissions": len(submissions),
        },
    )
    return {
        "ref": ref.value,
        "by": ref.by,
        "exportedAt": now_iso(),
        "userIds": sorted(found.user_refs),
        "emails": sorted(found.emails),
        "conversations": conversations,
        "submissions": submissions,
    }
