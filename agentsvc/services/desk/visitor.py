"""Who the visitor of a conversation is: name and e-mail (verified or as declared), the
page and language the widget told, the attributes given to `identify`, and the visitor's
other conversations and form submissions in the team.

Data is linked by a user id only when both conversations' ids were verified (a userToken, a
userHash, or the team's own key): anyone can claim an id in a browser, and a claim must
never show one visitor another's history. Without a verified id, only the same widget
session links (the same browser).
"""

from __future__ import annotations

from dataclasses import dataclass

from agentsvc.db import Database
from agentsvc.store import visitor_panel as store
from agentsvc.store.conversations import Conversation
from agentsvc.store.visitor_panel import LinkedConversation, LinkedSubmission, VisitorRow


@dataclass(frozen=True, slots=True)
class VisitorPanel:
    conversation: Conversation
    told: VisitorRow
    previous: list[LinkedConversation]
    submissions: list[LinkedSubmission]


async def visitor_panel(db: Database, conv: Conversation) -> VisitorPanel:
    """The side panel of a team's conversation."""
    tx = db.reader
    told = await store.visitor_of(tx, conv.id)
    if conv.user_ref and conv.user_verified_by is not None:
        previous = await store.conversations_of_verified_user(
            tx, conv.team_id, conv.user_ref, conv.id
        )
        session = None
    elif conv.session_id:
        previous = await store.conversations_of_session(tx, conv.team_id, conv.session_id, conv.id)
        session = conv.session_id
    else:
        previous, session = [], None
    linked = [conv.id, *(c.id for c in previous)]
    submissions = await store.submissions_of(tx, conv.team_id, linked, session)
    return VisitorPanel(conv, told, previous, submissions)
