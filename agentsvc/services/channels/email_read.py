"""What an e-mail channel reads from a message (run in a worker thread: parsing a message
of up to 10 MB is work the event loop must not do).

Who wrote it (From, lower-cased; it is not verified, as e-mail is not: the conversation's
user is unverified), its Message-ID (the key that makes a message fetched twice one turn),
its thread (the first of References, else In-Reply-To, else its own id: a reply to our
reply lands in the same conversation), its subject, and the text the agent reads: the
plain text part (else the HTML part's text), without the quoted history and the signature
(mail-parser-reply), at most `MAX_TEXT_CHARS`, followed by the names of its attachments
(their files taken out to be kept by email_files.py when the caller asks).

Messages no one should answer are skipped with a reason: automatic replies
(`Auto-Submitted`, `X-Autoreply`...), bulk and list mail (`Precedence`, `List-Id`,
`List-Unsubscribe`), bounces (`multipart/report`, an empty Return-Path, mailer-daemon and
postmaster), and our own address writing to itself.
"""

from __future__ import annotations

import email
import email.policy
import hashlib
import re
from dataclasses import dataclass
from email.message import EmailMessage
from email.utils import getaddresses
from html.parser import HTMLParser

from mailparser_reply import EmailReplyParser

from agentsvc.services.channels.email_files import Part, named_parts, parts_of
from agentsvc.store.attachments import KeptFile

MAX_TEXT_CHARS = 10_000  # what a channel message may hold
_PARSE_CHARS = 50_000  # the text the reply parser reads (its work grows with it)
_LANGUAGES = ["en", "de", "fr", "es", "it", "nl", "pl", "sv", "da", "cs"]
_MSGID = re.compile(r"<([^<>\s]{1,250})>")
_BULK_PRECEDENCE = {"bulk", "junk", "list", "auto_reply", "auto-reply"}
_ROBOT_SENDERS = re.compile(r"^(mailer-daemon|postmaster|no-?reply|do-?not-?reply)@", re.I)


@dataclass(frozen=True, slots=True)
class ReadMail:
    """A message as the channel takes it; `skipped` says why it is not answered."""

    sender: str
    message_id: str
    thread: str
    subject: str
    references: tuple[str, ...]
    text: str
    skipped: str | None = None
    files: tuple[KeptFile, ...] = ()  # its attachments, once kept in the file storage
    wrote_files: bool = False  # this read wrote them (a second read finds them there)
    parts: tuple[Part, ...] = ()  # its attachments as read, before they are kept


def _ids(value: str | None) -> list[str]:
    return _MSGID.findall(value or "")[:50]


def _header(msg: EmailMessage, name: str) -> str:
    try:
        value = msg.get(name)
    except Exception:  # noqa: BLE001 - a malformed header is as good as none
        return ""
    return " ".join(str(value).split()) if value is not None else ""


def _sender(msg: EmailMessage) -> str:
    found = getaddresses([_header(msg, "From")])
    address = found[0][1].strip().lower() if found else ""
    return address if re.fullmatch(r"[^@\s<>]{1,200}@[^@\s<>]{1,200}", address) else ""


def _skip_reason(msg: EmailMessage, sender: str, own_address: str) -> str | None:
    auto = _header(msg, "Auto-Submitted").lower()
    if auto and auto != "no":
        return "an automatic message (Auto-Submitted)"
    if any(_header(msg, h) for h in ("X-Autoreply", "X-Autorespond", "X-Auto-Response")):
        return "an automatic reply"
    if _header(msg, "Precedence").lower() in _BULK_PRECEDENCE:
        return "bulk or list mail (Precedence)"
    if _header(msg, "List-Id") or _header(msg, "List-Unsubscribe"):
        return "list mail (List-Id)"
    if msg.get_content_type() == "multipart/report" or _header(msg, "Return-Path") == "<>":
        return "a delivery report (bounce)"
    if not sender:
        return "no sender address (From)"
    if _ROBOT_SENDERS.match(sender):
        return "a mail system's message (mailer-daemon)"
    if sender == own_address.lower():
        return "a message from the channel's own address"
    return None


class _HtmlText(HTMLParser):
    """The text of an HTML part: its text nodes, a line per block, no scripts or styles."""

    _BLOCKS = {"p", "div", "br", "li", "tr", "h1", "h2", "h3", "h4", "blockquote"}

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self._hidden = 0

    def handle_starttag(self, tag: str, attrs: object) -> None:
        if tag in ("script", "style", "head"):
            self._hidden += 1
        elif tag in self._BLOCKS:
            self.parts.append("\n")

    def handle_endtag(self, tag: str) -> None:
        if tag in ("script", "style", "head") and self._hidden:
            self._hidden -= 1

    def handle_data(self, data: str) -> None:
        if not self._hidden:
            self.parts.append(data)


def _body_text(msg: EmailMessage) -> str:
    part = msg.get_body(preferencelist=("plain", "html"))
    if part is None:
        return ""
    try:
        content = part.get_content()
    except (LookupError, ValueError, AssertionError):
        payload = part.get_payload(decode=True) or b""
        content = payload.decode("utf-8", errors="replace") if isinstance(payload, bytes) else ""
    if not isinstance(content, str):
        return ""
    if part.get_content_type() == "text/html":
        reader = _HtmlText()
        reader.feed(content[: _PARSE_CHARS * 4])
        content = "".join(reader.parts)
    return "\n".join(line.rstrip() for line in content.splitlines())


def latest_reply(text: str) -> str:
    """The newest part of a message: without quoted history and signature."""
    text = text[:_PARSE_CHARS].strip()
    if not text:
        return ""
    parsed = EmailReplyParser(languages=_LANGUAGES).read(text)
    first = parsed.replies[0].body.strip() if parsed.replies else ""
    newest = first or parsed.latest_reply.strip() or text
    # Quoted lines with no "On ... wrote:" above them are history too.
    unquoted = "\n".join(line for line in newest.splitlines() if not line.startswith(">"))
    return unquoted.strip() or newest


def read_mail(raw: bytes, own_address: str, keep: bool = False) -> ReadMail:
    """The message as the channel takes it, with its attachments' bytes when `keep` (never
    raises on a malformed message)."""
    msg = email.message_from_bytes(raw, policy=email.policy.default)
    assert isinstance(msg, EmailMessage)
    sender = _sender(msg)
    own = _ids(_header(msg, "Message-ID"))
    message_id = own[0] if own else "sha256:" + hashlib.sha256(raw).hexdigest()
    references = tuple(_ids(_header(msg, "References")))
    replied = _ids(_header(msg, "In-Reply-To"))
    thread = references[0] if references else replied[0] if replied else message_id
    subject = _header(msg, "Subject")[:300]
    skipped = _skip_reason(msg, sender, own_address)
    if skipped is not None:
        return ReadMail(sender, message_id, thread, subject, references, "", skipped)
    text = latest_reply(_body_text(msg))
    parts = named_parts(msg)
    if parts:  # named after the text, which is cut to leave them room
        names = "(attached: " + ", ".join(name for name, _ in parts) + ")"
        text = text[: MAX_TEXT_CHARS - len(names) - 2]
        text = (text + "\n\n" if text else "") + names
    if not text.strip():
        text = subject
    if not text.strip():
        return ReadMail(sender, message_id, thread, subject, references, "", "an empty message")
    kept = parts_of(msg) if keep else ()
    text = text[:MAX_TEXT_CHARS]
    return ReadMail(sender, message_id, thread, subject, references, text, None, parts=kept)
