"""An e-mail channel's replies: the outbox row's body (to whom, the subject, the threading
headers, the text) and the message sent from it through the instance's SMTP, from the
channel's address.

A reply answers the message it follows: `In-Reply-To` is that message's id, `References`
its references and its id (mail programs thread by them), the subject `Re: ` and its own.
A member's reply from the inbox answers the conversation's thread (its first message).
"""

from __future__ import annotations

from email.message import EmailMessage
from email.utils import formatdate, make_msgid
from typing import Any

import orjson

from agentsvc.mail import check_address, check_header

MAX_REFERENCES = 20  # the newest kept: the first (the thread) and the last ones count


def address_of(thread: str, subject: str, references: tuple[str, ...]) -> str:
    """What an inbound e-mail's reply needs later, kept as its address (JSON)."""
    return orjson.dumps({"thread": thread, "subject": subject, "references": references}).decode()


def thread_of(address: str | None) -> str | None:
    """The thread an e-mail's address names (its conversation's session id)."""
    return _opened(address).get("thread")


def _opened(address: str | None) -> dict[str, Any]:
    if not address:
        return {}
    try:
        found = orjson.loads(address)
    except orjson.JSONDecodeError:
        return {}
    return found if isinstance(found, dict) else {}


def _re(subject: str) -> str:
    subject = " ".join(subject.split())[:250]
    if not subject:
        return "Re: your message"
    return subject if subject.lower().startswith("re:") else f"Re: {subject}"


def reply_payload(
    to: str,
    text: str,
    in_reply_to: str | None,
    address: str | None,
    fallback: tuple[str | None, str],
) -> dict[str, Any]:
    """The outbox body of a reply to `to`: answering `in_reply_to` (whose address holds
    its subject and references), else the conversation's thread and title (`fallback`)."""
    found = _opened(address)
    thread, title = fallback
    if in_reply_to and found:
        references = [*found.get("references", []), in_reply_to]
        subject = found.get("subject") or title
        answered = in_reply_to
    else:
        references = [thread] if thread else []
        subject = title
        answered = thread or None
    if len(references) > MAX_REFERENCES:
        references = references[:1] + references[-(MAX_REFERENCES - 1) :]
    return {
        "to": to,
        "subject": _re(subject),
        "inReplyTo": answered,
        "references": references,
        "text": text,
    }


def message(payload: dict[str, Any], from_address: str, name: str | None) -> EmailMessage:
    """The message a reply's body is sent as (ValueError: an address or header that cannot
    be sent)."""
    msg = EmailMessage()
    sender = check_header("from", from_address)
    if name:
        shown = check_header("from", name).replace('"', "")
        sender = f'"{shown}" <{from_address}>'
    msg["From"] = sender
    msg["To"] = check_address(payload["to"])
    msg["Subject"] = check_header("subject", payload["subject"])
    msg["Date"] = formatdate(usegmt=True)
    msg["Message-ID"] = make_msgid(domain=from_address.rpartition("@")[2] or None)
    if payload.get("inReplyTo"):
        msg["In-Reply-To"] = f"<{check_header('inReplyTo', payload['inReplyTo'])}>"
    refs = [check_header("references", r) for r in payload.get("references") or []]
    if refs:
        msg["References"] = " ".join(f"<{r}>" for r in refs)
    if payload.get("automatic"):  # the agent's: other robots do not answer it (RFC 3834)
        msg["Auto-Submitted"] = "auto-replied"
    msg.set_content(payload["text"])
    return msg
