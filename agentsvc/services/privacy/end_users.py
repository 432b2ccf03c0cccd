"""An end user's data in a team: found, exported as JSON, or erased with a count.

An end user is named by the `userId` the widget declared or by an e-mail address, and
found only through what the service verified. The reference finds the team's conversations
that store it (as the user id; as the declared e-mail or the address left for a reply).
Where it is a verified identifier of a conversation's user (signed by a userToken or a
userHash, or declared with the team's key), the other verified identifier of that user is
theirs too, one step and no further, and so are the widget sessions of those conversations
(the browser that chatted before and after identifying). A declared id or address finds
the rows that store it and ties nothing else to them. Then every conversation with a
message containing one of the matched addresses, and the form submissions made in any of
these conversations or sessions or whose values contain an address (or equal a user id).
Erasing deletes all of it in one transaction (messages, conversation events, webhook
events and deliveries, delivery attempts go by cascade), the form impressions of those
sessions, the kept mail to or about them, and the submissions' files after the commit.
"""

from __future__ import annotations

import asyncio
import base64
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

from agentsvc.db import Database, Tx
from agentsvc.errors import ValidationFailed
from agentsvc.ids import now_iso
from agentsvc.mail import Mailer
from agentsvc.services import audit
from agentsvc.services.agents.identity import BY_API_KEY, BY_HASH, BY_TOKEN, profile_verified
from agentsvc.services.audit import Actor, end_user_label
from agentsvc.services.channels import email_files
from agentsvc.services.forms.files import key_of, remove_folder
from agentsvc.storage import FileMissing, FileStore, read_all
from agentsvc.store import attachments as attachments_store
from agentsvc.store import conversations as conv_store
from agentsvc.store import end_users as store
from agentsvc.store import purge
from agentsvc.store import submissions as sub_store
from agentsvc.store.agents import Agent
from agentsvc.store.conversations import Conversation, StoredMessage
from agentsvc.store.end_users import Trace
from agentsvc.store.submissions import Submission
from agentsvc.store.visitor_panel import VisitorRow, visitor_of

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


# How an identifier other than the reference was tied to it, strongest first: a
# conversation whose user was signed that way carries both (services.agents.identity).
_LINK_RANK = (BY_TOKEN, BY_API_KEY, BY_HASH)
REF = "ref"  # the reference itself: matched exactly where it is stored, verified or not


@dataclass(slots=True)
class Found:
    """Everything of one end user in a team, and the identifiers that led to it."""

    # (type, value) -> how it was tied to the reference: REF or a _LINK_RANK method.
    matched: dict[tuple[str, str], str] = field(default_factory=dict)
    conversations: dict[str, Trace] = field(default_factory=dict)
    submissions: list[Submission] = field(default_factory=list)

    def of_type(self, kind: str) -> set[str]:
        return {value for k, value in self.matched if k == kind}

    @property
    def user_refs(self) -> set[str]:
        return self.of_type("userId")

    @property
    def emails(self) -> set[str]:  # lower-cased
        return self.of_type("email")

    @property
    def sessions(self) -> set[str]:
        return self.of_type("sessionId")

    def match(self, kind: str, value: str, how: str) -> None:
        """Note an identifier, keeping the strongest way it was tied to the reference."""
        old = self.matched.get((kind, value))
        if old is None or (old != REF and _LINK_RANK.index(how) < _LINK_RANK.index(old)):
            self.matched[(kind, value)] = how

    def take(self, traces: list[Trace]) -> None:
        for trace in traces:
            self.conversations[trace.id] = trace

    def matched_json(self) -> list[dict[str, str]]:
        order = {"userId": 0, "email": 1, "sessionId": 2}
        return [
            {"type": kind, "value": value, "verified": how}
            for (kind, value), how in sorted(
                self.matched.items(), key=lambda item: (order[item[0][0]], item[0][1])
            )
        ]


def verified_identifiers(trace: Trace) -> set[tuple[str, str]]:
    """The identifiers a conversation's user was verified with: the id when a userToken,
    a userHash or the team's key vouched for it; the e-mail when a userToken or the key did
    (a userHash signs the id alone). A contact address typed for a reply is the visitor's
    word: it counts only as the verified e-mail it equals, which adds nothing."""
    found = set()
    if trace.user_ref and trace.verified_by in (BY_TOKEN, BY_HASH, BY_API_KEY):
        found.add(("userId", trace.user_ref))
    if trace.user_email and profile_verified(trace.verified_by):
        found.add(("email", trace.user_email.lower()))
    return found


def _follow(found: Found, traces: list[Trace], keys: set[tuple[str, str]]) -> list[Trace]:
    """Of these conversations, those where one of `keys` is a verified identifier (the
    others only store it: they are found, but lead nowhere); note what those carry."""
    anchors = []
    for trace in traces:
        verified = verified_identifiers(trace)
        if not verified & keys:
            continue
        anchors.append(trace)
        for kind, value in verified - keys:
            found.match(kind, value, str(trace.verified_by))
    return anchors


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
    user_refs, emails = found.user_refs, found.emails
    for text in _values(sub.form_data):
        lowered = text.lower()
        if text in user_refs or any(e in lowered for e in emails):
            return True
    return False


async def _naming(tx: Tx, team_id: str, keys: set[tuple[str, str]]) -> list[Trace]:
    ids = [v for k, v in keys if k == "userId"]
    emails = [v for k, v in keys if k == "email"]
    return await store.conversations_naming(tx, team_id, ids, emails)


async def find(db: Database, team_id: str, ref: EndUserRef) -> Found:
    """The end user's conversations, submissions and identifiers in the team.

    Only verified links are followed: the reference finds every conversation that stores
    it; where it is a verified identifier of the conversation's user, the other verified
    identifier (the signed e-mail of a signed id, and the reverse) is theirs too, one step
    and no further; the widget sessions of the conversations where one of these is verified
    are the same browser. A declared id or address, or a contact address typed by a
    visitor, is found where it is stored but ties nothing else to the reference.
    """
    tx = db.reader
    found = Found()
    found.match(ref.by, ref.value, REF)
    first = await _naming(tx, team_id, {(ref.by, ref.value)})
    found.take(first)
    anchors = _follow(found, first, {(ref.by, ref.value)})
    linked = set(found.matched) - {(ref.by, ref.value)}
    if linked:
        second = await _naming(tx, team_id, linked)
        found.take(second)
        # Only their sessions, not further identifiers, come from these.
        anchors += [t for t in second if verified_identifiers(t) & linked]
    for trace in anchors:
        if trace.session_id:
            found.match("sessionId", trace.session_id, str(trace.verified_by))
    found.take(await store.conversations_in_sessions(tx, team_id, sorted(found.sessions)))
    for address in sorted(found.emails):
        found.take(await store.conversations_mentioning(tx, team_id, address))
    ids = await store.submission_ids(
        tx,
        team_id,
        conversation_ids=list(found.conversations),
        session_ids=sorted(found.sessions),
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
    db: Database, mailer: Mailer, files: FileStore, actor: Actor, ref: EndUserRef
) -> tuple[dict[str, int], list[dict[str, str]]]:
    """Delete everything of the end user in the actor's team; return what went, by kind,
    and the identifiers matched (`Found.matched_json`). The words of erased messages stay
    in the message search index until `MessageIndexScrubber.after_erasure` runs."""
    team_id = actor.team_id
    found = await find(db, team_id, ref)
    conv_ids = list(found.conversations)
    sub_ids = [s.id for s in found.submissions]
    file_count = sum(len(s.files or {}) for s in found.submissions)
    folders = await attachments_store.folders_of_conversations(db.reader, conv_ids)
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
            "files": file_count,
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
            await remove_folder(files, sub.id)
    await email_files.remove_unlisted(db, files, folders)
    return counts, found.matched_json()


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


def _conversation_json(
    conv: Conversation, messages: list[StoredMessage], agent: str, visitor: VisitorRow
) -> dict:
    return {
        "id": conv.id,
        "agentId": conv.agent_id,
        "agentName": agent,
        "title": conv.title,
        "sessionId": conv.session_id,
        "user": {"id": conv.user_ref, "email": conv.user_email, "name": conv.user_name},
        "contactEmail": conv.contact_email,
        # What the widget told about the visitor (the desk's side panel shows it too).
        "context": {
            "pageUrl": visitor.page_url,
            "referrer": visitor.referrer,
            "language": visitor.language,
        },
        "attributes": visitor.attributes or {},
        "status": conv.status,
        "createdAt": conv.created_at,
        "updatedAt": conv.updated_at,
        "messages": [_message_json(m) for m in messages],
    }


async def _files_json(sub: Submission, files: FileStore, budget: list[int]) -> list[dict[str, Any]]:
    out = []
    for name, recorded in (sub.files or {}).items():
        described = sub.form_data.get(name) or {}
        entry = {
            "field": name,
            "fileName": described.get("fileName"),
            "contentType": described.get("contentType"),
            "size": described.get("size"),
            "dataUrl": None,
        }
        size = described.get("size")
        if isinstance(size, int) and size <= budget[0]:
            try:
                raw = await read_all(files, key_of(recorded), budget[0])
            except (FileMissing, ValueError):
                raw = None
            if raw is not None:
                budget[0] -= len(raw)
                kind = entry["contentType"] or "application/octet-stream"
                file_name = entry["fileName"]
                params = f";name={quote(file_name, safe='')}" if file_name else ""
                data = (await asyncio.to_thread(base64.b64encode, raw)).decode("ascii")
                entry["dataUrl"] = f"data:{kind}{params};base64,{data}"
        out.append(entry)
    return out


async def _submissions_json(subs: list[Submission], files: FileStore) -> list[dict[str, Any]]:
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
            "files": await _files_json(s, files, budget),
        }
        for s in subs
    ]


async def export(
    db: Database, files: FileStore, actor: Actor, ref: EndUserRef, agents: list[Agent]
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
        visitor = await visitor_of(db.reader, conv_id)
        agent = names.get(conv.agent_id, "")
        conversations.append(_conversation_json(conv, messages, agent, visitor))
    conversations.sort(key=lambda c: (c["createdAt"], c["id"]))
    submissions = await _submissions_json(found.submissions, files)
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
        "matched": found.matched_json(),
        "conversations": conversations,
        "submissions": submissions,
    }
