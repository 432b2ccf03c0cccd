"""The handoff feature as one object: asking for a person, taking, replying, releasing and
closing a conversation, a visitor's address, the figures, and following conversations and
the team's inbox live."""

from __future__ import annotations

from typing import Any

from agentsvc.services.handoff import flow
from agentsvc.services.handoff.flow import HandoffDeps, HandoffState
from agentsvc.services.handoff.live import Following, LiveEvents
from agentsvc.store.conversations import Conversation, StoredMessage


class HandoffService:
    """Conversations passing between the agent and the team (one instance for the app)."""

    def __init__(self, deps: HandoffDeps, live: LiveEvents):
        self._deps = deps
        self._db = deps.log.db
        self._live = live

    async def for_team(self, team_id: str, conversation_id: str) -> Conversation:
        """The team's conversation, or NotFound."""
        return await flow.for_team(self._db, team_id, conversation_id)

    async def for_visitor(self, conversation_id: str, session_id: str | None) -> Conversation:
        """The conversation of this widget session, or NotFound (also without a session)."""
        return await flow.for_visitor(self._db, conversation_id, session_id)

    async def request_human(self, conv: Conversation, *, by_visitor: bool) -> HandoffState:
        """Ask for a person (`waiting`) and tell the team."""
        return await flow.request_human(self._deps, conv, by_visitor=by_visitor)

    async def request_for_turn(self, conv: Conversation) -> dict[str, Any]:
        """A chat turn's model asks for a person: the state its `handoff` event carries."""
        data = (await self.request_human(conv, by_visitor=False)).json()
        data.pop("conversationId")
        return {"conversationId": conv.id, **data}

    async def assign(self, team_id: str, conv: Conversation, member_ref: str) -> HandoffState:
        """A member takes the conversation (`human`)."""
        return await flow.assign(self._deps, team_id, conv, member_ref)

    async def reply(
        self, team_id: str, conv: Conversation, user_id: str, content: str
    ) -> StoredMessage:
        """A member's reply to the visitor (takes the conversation when nobody has it)."""
        return await flow.reply(self._deps, team_id, conv, user_id, content)

    async def release(self, conv: Conversation) -> HandoffState:
        """Hand the conversation back to the agent (`bot`)."""
        return await flow.release(self._deps, conv)

    async def close(self, conv: Conversation) -> HandoffState:
        """Close the conversation (`closed`)."""
        return await flow.close(self._deps, conv)

    async def leave_contact(self, conv: Conversation, email: str) -> None:
        """Keep the address a visitor left for a later reply."""
        await flow.leave_contact(self._db, conv, email)

    async def stats(self, team_id: str, agent_id: str) -> dict[str, Any]:
        """The agent's handoff rate and median time to the first human reply."""
        return await flow.stats(self._db, team_id, agent_id)

    async def widget(self, agent_id: str) -> dict[str, Any]:
        """What the widget needs to offer a person: enabled, in business hours, the message."""
        return await flow.widget_handoff(self._db, self._deps.agents, agent_id)

    async def follow_conversation(
        self, conversation_id: str, after: int | None, *, members: bool = True
    ) -> Following:
        """Follow a conversation's events after `after` (None: from now); the visitor's
        (`members` false) never carry a private note."""
        return await self._live.follow_conversation(conversation_id, after, members=members)

    async def follow_inbox(self, team_id: str, after: int | None) -> Following:
        """Follow the team's inbox events after `after` (None: from now)."""
        return await self._live.follow_inbox(team_id, after)

    async def visitor_seen(self, conversation_id: str, present: bool) -> None:
        """Note that the visitor's event stream is open (or has just closed)."""
        await flow.visitor_seen(self._db, conversation_id, present)
