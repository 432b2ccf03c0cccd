"""Approvals as the team sees them: the calls waiting (live, for the inbox), and a member's
decision (approve, maybe with an edited input checked against the tool's inputSchema as
the model's own input is; or deny with a reason), recorded in the audit log with it."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from agentsvc.db import Database
from agentsvc.errors import Conflict, NotFound, ValidationFailed
from agentsvc.ids import now_iso, parse_iso
from agentsvc.services import audit
from agentsvc.services.approvals.gate import Gate, expiry_reason, tool_of
from agentsvc.services.approvals.resume import Resumer
from agentsvc.services.approvals.signals import ApprovalSignals
from agentsvc.services.audit import Actor
from agentsvc.services.tenant_input.schemas import validation_errors
from agentsvc.store import approvals as store
from agentsvc.store import team as team_store
from agentsvc.store.approvals import Approval

# The waiting calls an inbox shows (the longest waits first).
LIVE_LIMIT = 100
# How often the live list is read again though nothing was announced (a missed NOTIFY).
LIVE_POLL_SECONDS = 30.0


@dataclass(frozen=True, slots=True)
class Decision:
    """A member's decision: approve (with an edited input, or None) or deny with a reason."""

    approve: bool
    edited_input: dict[str, Any] | None = None
    reason: str | None = None


def _too_late(reason: str) -> Conflict:
    """A call whose time ran out, in words."""
    said = reason[:1].lower() + reason[1:]
    return Conflict(f"This call can no longer be decided: {said}, so it was denied")


def _already(approval: Approval) -> Conflict:
    """Why a decided call cannot be decided again, in words."""
    if approval.status == "expired":
        return _too_late(approval.reason or "its time ran out")
    who = approval.decided_by_name or "a member of the team"
    verb = "approved" if approval.status == "approved" else "denied"
    return Conflict(f"This call was already {verb} by {who}; a decision cannot be changed")


@dataclass(frozen=True, slots=True)
class ApprovalsDeps:
    db: Database
    gate: Gate
    resumer: Resumer
    signals: ApprovalSignals


class ApprovalsService:
    """The team's approvals: list, read, follow live, approve and deny."""

    def __init__(self, deps: ApprovalsDeps):
        self._deps = deps
        self._db = deps.db

    async def list(
        self,
        team_id: str,
        filters: dict[str, str | None],
        after: tuple[str, str] | None,
        limit: int,
    ) -> tuple[list[Approval], bool]:
        """A page of the team's approvals and whether more follow."""
        found = await store.list_for_team(self._db.reader, team_id, filters, after, limit + 1)
        return found[:limit], len(found) > limit

    async def get(self, team_id: str, approval_id: str) -> Approval:
        """The team's approval, or NotFound (another team's too)."""
        found = await store.get(self._db.reader, team_id, approval_id)
        if found is None:
            raise NotFound("Approval not found")
        return found

    async def pending_updates(self, team_id: str) -> AsyncIterator[list[Approval]]:
        """The team's waiting calls now, then again each time they change."""
        last: list[tuple[str, str]] | None = None
        with self._deps.signals.listen(team_id) as changed:
            while True:
                changed.clear()
                found, _ = await self.list(team_id, {"status": "pending"}, None, LIVE_LIMIT)
                shown = [(a.id, a.status) for a in found]
                if shown != last:
                    last = shown
                    yield found
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(LIVE_POLL_SECONDS):
                        await changed.wait()

    async def decide(self, actor: Actor, approval_id: str, decision: Decision) -> Approval:
        """Record a member's decision; the turn then goes on (in the visitor's stream, or
        taken up here). 409 when it was decided already or its time ran out."""
        approval = await self.get(actor.team_id, approval_id)
        await self._check_open(approval)
        edited = None
        if decision.approve and decision.edited_input is not None:
            edited = await self._checked_input(approval, decision.edited_input)
        member = await team_store.find_member(self._db.reader, actor.team_id, actor.user_id or "")
        fields: dict[str, Any] = {
            "status": "approved" if decision.approve else "denied",
            "reason": None if decision.approve else decision.reason,
            "edited_input": edited,
            "decided_by": actor.user_id,
            "decided_by_name": member.name.strip() if member is not None else "",
            "decided_at": now_iso(),
        }
        async with self._db.write() as tx:
            if not await store.decide(tx, approval.id, fields):
                raise _already(await store.get(tx, actor.team_id, approval.id) or approval)
            details: dict[str, Any] = {"conversationId": approval.conversation_id}
            if decision.approve:
                details["inputEdited"] = edited is not None
            else:
                details["reason"] = decision.reason
            await audit.record_in(
                tx,
                actor,
                f"approval.{fields['status']}",
                target_type="approval",
                target_id=approval.id,
                label=approval.tool_name,
                details=details,
            )
        await self._deps.signals.changed(actor.team_id)
        self._deps.resumer.start(approval.pause_id)  # nobody waiting for it: goes on here
        return await self.get(actor.team_id, approval.id)

    async def _check_open(self, approval: Approval) -> None:
        if approval.status != "pending":
            raise _already(approval)
        if parse_iso(approval.expires_at) <= datetime.now(UTC):
            await self._deps.gate.expire([approval])
            raise _too_late(expiry_reason(approval))

    async def _checked_input(self, approval: Approval, given: dict[str, Any]) -> dict | None:
        """The edited input, checked as the model's is (None: the same as the model's)."""
        tool = await tool_of(self._db, approval)
        if tool is None:
            raise Conflict(
                f"The tool {approval.tool_name} is no longer available to this agent; deny"
                " the call instead"
            )
        problems = await asyncio.to_thread(validation_errors, tool.input_schema, given)
        if problems:
            raise ValidationFailed("input: " + "; ".join(problems))
        return None if given == approval.input else given
