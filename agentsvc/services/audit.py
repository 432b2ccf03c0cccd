"""The audit log: who did what in a team (keys, members, agents, tools, webhooks, exports,
erasures), recorded in the transaction of the change where there is one.

A service that changes something takes an `Actor` and calls `record_in(tx, ...)` inside
its unit of work, so the entry and the change commit together. An action with no write of
its own (an export) calls `record(db, ...)`.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from typing import Any

from agentsvc.db import Database, Tx
from agentsvc.errors import ValidationFailed
from agentsvc.ids import new_id, now_iso
from agentsvc.store import audit_log
from agentsvc.store.audit_log import AuditEntry, LoggedEntry

# The actions this service records (integrators may record others of the same shape).
ACTIONS = (
    "api_key.created",
    "api_key.revoked",
    "member.invited",
    "invitation.cancelled",
    "member.joined",
    "member.removed",
    "member.renamed",
    "team.renamed",
    "team.budget_changed",
    "sso.updated",
    "sso.removed",
    "sso.domain_verified",
    "agent.created",
    "agent.deleted",
    "agent.retention_changed",
    "agent.budget_changed",
    "agent.version_restored",
    "agent.published",
    "experiment.started",
    "experiment.stopped",
    "source.created",
    "source.deleted",
    "tool.created",
    "tool.deleted",
    "approval.approved",
    "approval.denied",
    "approval.expired",
    "webhook.created",
    "webhook.deleted",
    "channel.created",
    "channel.updated",
    "channel.deleted",
    "end_user.exported",
    "end_user.erased",
    "conversations.exported",
    "form_submissions.exported",
)
ACTION_PATTERN = r"^[a-z][a-z_]{0,40}\.[a-z][a-z_]{0,40}$"
_ACTION = re.compile(ACTION_PATTERN)


@dataclass(frozen=True, slots=True)
class Actor:
    """Who acts: a user in a team, through an API key or a session, from an address; no
    user for the server itself (its operator's command line, a provisioning client)."""

    user_id: str | None
    team_id: str
    key_id: str | None = None
    session_id: str | None = None
    ip: str | None = None


def end_user_label(ref: str) -> str:
    """How the log names an end user: a hash of the reference, never the reference (an
    erased person must not stay readable in the log). Hash an address to compare."""
    return "sha256:" + hashlib.sha256(ref.strip().lower().encode("utf-8")).hexdigest()[:16]


@dataclass(frozen=True, slots=True)
class Target:
    """What an action was done to (each part optional), and its details."""

    type: str | None = None
    id: str | None = None
    label: str | None = None
    details: dict[str, Any] | None = None


def _entry(actor: Actor, action: str, target: Target) -> AuditEntry:
    label = target.label
    if not _ACTION.match(action):
        raise ValueError(f"not an audit action: {action!r}")
    return AuditEntry(
        id=new_id("audit"),
        team_id=actor.team_id,
        action=action,
        actor_user_id=actor.user_id,
        actor_key_id=actor.key_id,
        actor_session_id=actor.session_id,
        actor_ip=actor.ip,
        target_type=target.type,
        target_id=target.id,
        target_label=label[:200] if label else None,
        details=target.details,
        created_at=now_iso(),
    )


async def record_in(
    tx: Tx,
    actor: Actor | None,
    action: str,
    *,
    target_type: str | None = None,
    target_id: str | None = None,
    label: str | None = None,
    details: dict[str, Any] | None = None,
) -> None:
    """Add an entry in the caller's transaction (nothing without an actor: the CLI, jobs)."""
    if actor is None:
        return
    target = Target(target_type, target_id, label, details)
    await audit_log.insert(tx, _entry(actor, action, target))


async def record(
    db: Database,
    actor: Actor,
    action: str,
    *,
    target_type: str | None = None,
    target_id: str | None = None,
    label: str | None = None,
    details: dict[str, Any] | None = None,
) -> None:
    """Add an entry on its own (an action that writes nothing else, such as an export).

    `action` is `area.verb` (`conversations.exported`); name an end user by
    `end_user_label(ref)`, never by their id or address.
    """
    entry = _entry(actor, action, Target(target_type, target_id, label, details))

    async def write(tx: Tx) -> None:
        await audit_log.insert(tx, entry)

    await db.write_batched(write)


async def list_entries(
    db: Database,
    team_id: str,
    *,
    action: str | None,
    limit: int,
    after: tuple[str, str] | None,
) -> tuple[list[LoggedEntry], bool]:
    """A page of the team's log, newest first, and whether more follow; `after` is the
    (created_at, sequence) of a page's last entry, as its cursor holds it."""
    if action is not None and not _ACTION.match(action):
        raise ValidationFailed("action: must read like agent.created")
    key = None
    if after is not None:
        if not after[1].isdigit() or len(after[1]) > 19:
            raise ValidationFailed("cursor: not a cursor returned by this API (use nextCursor)")
        key = (after[0], int(after[1]))
    return await audit_log.list_page(db.reader, team_id, action=action, limit=limit, after=key)


class AuditService:
    """The team's audit log as its owner reads it."""

    def __init__(self, db: Database):
        self._db = db

    async def list_entries(
        self, team_id: str, action: str | None, limit: int, after: tuple[str, str] | None
    ) -> tuple[list[LoggedEntry], bool]:
        """A page of the team's log, newest first, and whether more follow."""
        return await list_entries(self._db, team_id, action=action, limit=limit, after=after)
