"""Exporting an agent's form submissions: one row per submission, the list's filters.

Submissions are read in keyset pages of `batch_rows` (newest first). A CSV row also has one
column per field of the agent's form tools (`formData.<name>`), so a spreadsheet shows the
answers side by side; JSON Lines keeps `formData` as the object it is.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

from agentsvc.db import Database
from agentsvc.services.chat.conversations import check_agent
from agentsvc.store import submissions as store
from agentsvc.store import tools as tools_store
from agentsvc.store.agents import Agent
from agentsvc.store.submissions import Submission

COLUMNS = (
    "submissionId",
    "toolId",
    "toolName",
    "agentId",
    "conversationId",
    "triggerId",
    "status",
    "executionMode",
    "webhookAttempts",
    "lastError",
    "clientResult",
    "createdAt",
    "updatedAt",
    "formData",
)
# Values the service makes (ids, timestamps, fixed words): written to CSV as they are.
PLAIN = frozenset(
    {"submissionId", "toolId", "agentId", "triggerId", "status", "executionMode", "createdAt",
     "updatedAt"}
)  # fmt: skip
FIELD_PREFIX = "formData."
MAX_BATCH = 200  # submissions per read: a form's data can be large


def submission_row(sub: Submission) -> dict[str, Any]:
    """One exported row (JSON Lines); CSV adds a column per form field (`flatten`)."""
    return {
        "submissionId": sub.id,
        "toolId": sub.tool_id,
        "toolName": sub.tool_name,
        "agentId": sub.agent_id,
        "conversationId": sub.conversation_id,
        "triggerId": sub.trigger_id,
        "status": sub.status,
        "executionMode": sub.execution_mode,
        "webhookAttempts": sub.webhook_attempts,
        "lastError": sub.last_error,
        "clientResult": sub.client_result,
        "createdAt": sub.created_at,
        "updatedAt": sub.updated_at,
        "formData": sub.form_data,
    }


def flatten(row: dict[str, Any]) -> dict[str, Any]:
    """The row with each form value also under `formData.<field>`."""
    data = row.get("formData") or {}
    return {**row, **{FIELD_PREFIX + name: value for name, value in data.items()}}


@dataclass(frozen=True, slots=True)
class SubmissionFilter:
    """Which of the agent's submissions an export holds (None: any)."""

    status: str | None = None
    tool_id: str | None = None


class SubmissionExport:
    """The rows of one export, produced batch by batch (`batches`)."""

    def __init__(
        self,
        db: Database,
        agent: Agent,
        fields: list[str],
        wanted: SubmissionFilter,
        batch_rows: int,
    ):
        self._db = db
        self.agent = agent
        self.columns = (*COLUMNS, *(FIELD_PREFIX + name for name in fields))
        self.plain = PLAIN
        self._wanted = wanted
        self._batch = min(batch_rows, MAX_BATCH)

    @property
    def filename(self) -> str:
        """The download's name, without its extension."""
        return f"form-submissions-{self.agent.slug}"

    async def batches(self, flat: bool = False) -> AsyncIterator[list[dict[str, Any]]]:
        """Rows in batches, newest submission first; `flat` adds the `formData.<field>`
        values (for CSV)."""
        shape = flatten if flat else (lambda row: row)
        after: tuple[str, str] | None = None
        while True:
            page, more = await store.list_submissions(
                self._db.reader,
                self.agent.team_id,
                status=self._wanted.status,
                agent_id=self.agent.id,
                tool_id=self._wanted.tool_id,
                limit=self._batch,
                offset=0,
                after=after,
            )
            if page:
                yield [shape(submission_row(sub)) for sub in page]
            if not more or not page:
                return
            after = (page[-1].created_at, page[-1].id)


async def submission_export(
    db: Database, team_id: str, agent_id: str, wanted: SubmissionFilter, batch_rows: int
) -> SubmissionExport:
    """Check the agent (before anything is sent) and return the export; its CSV columns
    name the fields of the agent's form tools (of `wanted.tool_id` alone when given)."""
    agent = await check_agent(db, team_id, agent_id)
    tool_id = wanted.tool_id
    fields: dict[str, None] = {}
    for tool in await tools_store.list_for_agent(db.reader, team_id, agent_id):
        if tool.execution_type == "form" and (tool_id is None or tool.id == tool_id):
            for field in (tool.form_schema or {}).get("fields", []):
                if isinstance(field, dict) and isinstance(field.get("name"), str):
                    fields[field["name"]] = None
    return SubmissionExport(db, agent, list(fields), wanted, batch_rows)
