"""Query parameters shared by lists, exports and reports: days, and the conversation filters."""

from __future__ import annotations

from datetime import date
from typing import Annotated, Literal

from pydantic import AfterValidator, Field

from agentsvc.api.models import QueryModel
from agentsvc.services.channels.kinds import CONVERSATION_CHANNELS
from agentsvc.services.chat.conversations import ListFilters

DAY_PATTERN = r"^\d{4}-\d{2}-\d{2}$"
NO_CONTROL = r"^[^\x00-\x1f\x7f]*$"


def _calendar_day(value: str) -> date:
    try:
        return date.fromisoformat(value)
    except ValueError:
        raise ValueError("must be a calendar date as YYYY-MM-DD") from None


# A UTC day, `2026-11-21`; the OpenAPI document says `format: date`, so schema-valid values
# are real dates.
Day = Annotated[
    str,
    Field(pattern=DAY_PATTERN, json_schema_extra={"format": "date"}),
    AfterValidator(_calendar_day),
]
AgentId = Annotated[str, Field(min_length=1, max_length=100)]
# The channel a conversation came through.
ChannelName = Literal[CONVERSATION_CHANNELS]  # type: ignore[valid-type]


class ConversationFilterQuery(QueryModel):
    """The filters of `GET /conversations` and its export (they combine)."""

    status: Literal["bot", "waiting", "human", "closed"] | None = Field(
        None, description="only the conversations in this handoff status"
    )
    q: Annotated[str, Field(min_length=1, max_length=500)] | None = Field(
        None,
        description="full-text search: conversations with a message holding every word (any"
        " English word form; common words such as 'the' are ignored)",
    )
    rating: Literal["up", "down", "any"] | None = Field(
        None, description="conversations with an answer rated up, down, or either (any)"
    )
    date_from: Day | None = Field(
        None, alias="from", description="created on or after this UTC day (YYYY-MM-DD)"
    )
    date_to: Day | None = Field(
        None, alias="to", description="created on or before this UTC day (YYYY-MM-DD)"
    )
    user_id: Annotated[str, Field(min_length=1, max_length=200, pattern=NO_CONTROL)] | None = Field(
        None, description="the identified end user's id (the widget's userId)"
    )
    channel: ChannelName | None = Field(
        None, description="only the conversations of this channel: web (the widget) or a type"
    )
    flagged: bool = Field(
        False,
        description="true: only the conversations a guardrail flagged for review (an answer"
        " replaced), not reviewed since",
    )

    def filters(self) -> ListFilters:
        """The filters for the service."""
        return ListFilters(
            status=self.status,
            q=self.q,
            rating=self.rating,
            date_from=self.date_from,  # type: ignore[arg-type]  (a date once validated)
            date_to=self.date_to,  # type: ignore[arg-type]
            user_id=self.user_id,
            channel=self.channel,
            flagged=self.flagged,
        )
