"""The forms feature as one object: the public form, submit, client results, analytics
events, and the team's submissions with their deliveries."""

from __future__ import annotations

from collections.abc import AsyncGenerator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from agentsvc.db import Database
from agentsvc.errors import NotFound
from agentsvc.ids import iso, new_id
from agentsvc.services.delivery.outbox import Queue
from agentsvc.services.events.emitter import Emitter
from agentsvc.services.forms import submissions, submit
from agentsvc.services.forms.files import key_of, remove_folder, write_files
from agentsvc.services.forms.outbox import FormDelivery
from agentsvc.services.forms.submissions import ClientReport, SubmissionDetail, SubmissionQuery
from agentsvc.services.forms.submit import StoredSubmission, SubmitInput, SubmitResult
from agentsvc.storage import FileMissing, FileStore
from agentsvc.store import submissions as submissions_store
from agentsvc.store.submissions import Submission
from agentsvc.store.tools import Tool


@dataclass(frozen=True, slots=True)
class FormsConfig:
    """The settings the forms feature works with."""

    file_quota_mb: float  # [forms] file_quota_mb_per_agent
    submits_per_minute: int  # [ratelimit] form_submits_per_minute: public submits per IP
    events_per_minute: int  # [ratelimit] trigger_events_per_minute: per IP and session


class FormsService:
    """Forms and their submissions; handlers call its methods."""

    def __init__(
        self,
        db: Database,
        queue: Queue[FormDelivery],
        emitter: Emitter,
        config: FormsConfig,
        files: FileStore,
    ):
        self._db = db
        self._files = files  # where submitted files are kept
        self._queue = queue
        self._emitter = emitter
        self.config = config

    async def public_form(
        self, tool_id_or_name: str, agent_id: str | None, team_id: str | None
    ) -> Tool:
        """An enabled form tool by id, or by name (see `submissions.get_public_form`)."""
        return await submissions.get_public_form(self._db, tool_id_or_name, agent_id, team_id)

    async def store_submission(self, data: SubmitInput) -> StoredSubmission:
        """Check a submission, write its files (within the agent's quota) and store it with
        its outbox rows in one transaction. The submitted values are not needed afterwards."""
        db = self._db
        new = await submit.new_submission(db, data)
        quota = int(self.config.file_quota_mb * 2**20)
        checked = await submit.checked_values(db, new, quota)
        files_bytes = sum(upload.size for upload in checked.files)
        sub_id = new_id("submission")
        now_dt = datetime.now(UTC)
        now = iso(now_dt)
        files = await write_files(self._files, sub_id, checked)
        values = checked.values
        del checked  # holds the submitted data URLs
        lease = self._queue.lease_until(now_dt, attempts=2)
        deliveries = submit.outbox_rows(new.tool, sub_id, now, lease)
        sub = submit.submission_row(new, sub_id, now, values, files, files_bytes)
        emission = await self._emitter.for_team(sub.team_id)
        try:
            # One transaction, shared with other small writes.
            await db.write_batched(submit.store_unit(sub, deliveries, emission, quota))
        except BaseException:
            if files:
                await remove_folder(self._files, sub_id)
            raise
        emission.sent()
        return StoredSubmission(sub, deliveries)

    async def deliver_first(self, stored: StoredSubmission) -> SubmitResult:
        """Make the first attempt of each delivery of a stored submission."""
        return await submit.deliver_first(self._queue, stored)

    async def report_client_result(self, report: ClientReport, team_id: str | None) -> None:
        """Record what the widget's client handler reported; the status follows."""
        await submissions.report_client_result(self._db, report, team_id)

    async def record_event(self, tool_id: str, event_type: str, session_id: str | None) -> None:
        """Count a form impression or start reported by the widget."""
        await submissions.record_event(self._db, tool_id, event_type, session_id)

    async def analytics(self, team_id: str, agent_id: str) -> list[dict[str, Any]]:
        """Per form tool of the agent: counts, conversion and completion rates."""
        return await submissions.analytics(self._db, team_id, agent_id)

    async def list_submissions(
        self, team_id: str, query: SubmissionQuery
    ) -> tuple[list[Submission], int, bool]:
        """A page of the team's submissions, the total, and whether more follow."""
        return await submissions.list_submissions(self._db, team_id, query)

    async def detail(self, team_id: str, submission_id: str) -> SubmissionDetail:
        """A team's submission with its deliveries and every attempt."""
        return await submissions.get_detail(self._db, team_id, submission_id)

    async def redeliver(self, team_id: str, submission_id: str) -> SubmissionDetail:
        """Queue the failed deliveries of a submission again and try them now."""
        return await submissions.redeliver(self._db, self._queue, team_id, submission_id)

    async def open_file(self, team_id: str, submission_id: str, field: str) -> SubmittedFile:
        """A file of one of the team's submissions, to send as it is read."""
        sub = await submissions_store.get_submission(self._db.reader, submission_id, team_id)
        if sub is None:
            raise NotFound("Submission not found")
        recorded = (sub.files or {}).get(field)
        if recorded is None:
            raise NotFound("The submission has no file in that field")
        described = sub.form_data.get(field)
        described = described if isinstance(described, dict) else {}
        try:
            reading = await self._files.open(key_of(recorded))
        except FileMissing:
            raise NotFound("The file is no longer stored") from None
        return SubmittedFile(
            name=described.get("fileName") or recorded.rpartition("/")[2],
            content_type=described.get("contentType") or "application/octet-stream",
            size=reading.size,
            chunks=reading.chunks(),
        )


@dataclass(frozen=True, slots=True)
class SubmittedFile:
    """A submitted file on its way out: its name and type as the visitor sent them, its
    size, and its bytes as they are read."""

    name: str
    content_type: str
    size: int
    chunks: AsyncGenerator[bytes, None]
