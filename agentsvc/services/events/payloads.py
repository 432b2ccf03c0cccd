"""The event types webhooks can receive and the `data` each carries (docs/integrators/webhooks.md).

A delivered body is `{id, type, timestamp, data}`; `data` is built here from what the
change wrote, at the moment it was written, so a later edit never changes a sent event.
"""

from __future__ import annotations

from typing import Any

from agentsvc.store.conversations import Conversation, StoredMessage
from agentsvc.store.submissions import Submission

EVENT_TYPES = (
    "conversation.created",
    "message.created",
    "feedback.created",
    "form.submitted",
    "conversation.handoff",
    "conversation.assigned",
    "conversation.released",
    "conversation.closed",
    "conversation.reopened",
    "budget.warning",
)
# The event of each handoff status a conversation moves to.
STATUS_EVENTS = {
    "waiting": "conversation.handoff",
    "human": "conversation.assigned",
    "bot": "conversation.released",
    "closed": "conversation.closed",
}


def end_user(conv: Conversation) -> dict[str, Any] | None:
    if conv.user_ref is None and conv.user_email is None and conv.user_name is None:
        return None
    return {
        "id": conv.user_ref,
        "email": conv.user_email,
        "name": conv.user_name,
        "verifiedBy": conv.user_verified_by,
    }


def conversation_created(conv: Conversation) -> dict[str, Any]:
    return {
        "conversation": {
            "id": conv.id,
            "agentId": conv.agent_id,
            "title": conv.title,
            "sessionId": conv.session_id,
            "user": end_user(conv),
            "status": conv.status,
            "channel": conv.channel,
            "channelId": conv.channel_id,
            "createdAt": conv.created_at,
        }
    }


def _author(msg: StoredMessage) -> dict[str, Any]:
    if msg.role == "user":
        return {"type": "visitor"}
    if msg.author_id is None:
        return {"type": "ai"}
    return {"type": "human", "id": msg.author_id, "name": msg.author_name}


def message_created(agent_id: str, msg: StoredMessage) -> dict[str, Any]:
    return {
        "conversationId": msg.conversation_id,
        "agentId": agent_id,
        "message": {
            "id": msg.id,
            "role": msg.role,
            "content": msg.content,
            "author": _author(msg),
            "status": msg.status,
            "toolCalls": msg.tool_calls,
            "createdAt": msg.created_at,
        },
    }


def feedback_created(conv: Conversation, message_id: str, rating: str, rated_at: str) -> dict:
    return {
        "conversationId": conv.id,
        "agentId": conv.agent_id,
        "messageId": message_id,
        "rating": rating,
        "ratedAt": rated_at,
    }


def status_changed(
    conv: Conversation, status: str, assignee: tuple[str, str] | None
) -> dict[str, Any]:
    return {
        "conversationId": conv.id,
        "agentId": conv.agent_id,
        "status": status,
        "assignee": {"id": assignee[0], "name": assignee[1]} if assignee else None,
    }


def form_submitted(sub: Submission) -> dict[str, Any]:
    # Files are described ({fileName, contentType, size}), not sent: the form's own webhook
    # carries their data.
    return {
        "submissionId": sub.id,
        "agentId": sub.agent_id,
        "toolId": sub.tool_id,
        "toolName": sub.tool_name,
        "conversationId": sub.conversation_id,
        "formData": sub.form_data,
        "status": sub.status,
        "submittedAt": sub.created_at,
    }
