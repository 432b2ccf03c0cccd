"""Rows the store tests need, written with the store functions themselves."""

from __future__ import annotations

import secrets
from dataclasses import dataclass

from agentsvc.db import Database
from agentsvc.ids import new_id
from agentsvc.store import accounts, agents, tools
from agentsvc.store.agents import Agent
from agentsvc.store.conversations import Conversation
from agentsvc.store.documents import Document
from agentsvc.store.submissions import Submission
from agentsvc.store.tools import Tool

NOW = "2026-11-24T00:00:00.000Z"
LATER = "2026-11-24T01:00:00.000Z"


@dataclass(frozen=True)
class Owner:
    user_id: str
    team_id: str
    agent_id: str


async def owner(db: Database, email: str = "owner@example.com") -> Owner:
    """A user owning a team with one agent."""
    async with db.write() as tx:
        user = await accounts.insert_user(
            tx, id=new_id("user"), email=email, name="", password_hash=None, now=NOW
        )
        team = await accounts.insert_team(
            tx, id=new_id("team"), name="T", owner_user_id=user.id, plan="pro", now=NOW
        )
        await accounts.insert_membership(
            tx, id=new_id("membership"), team_id=team.id, user_id=user.id, role="owner", now=NOW
        )
        agent = await add_agent(tx, team.id)
    return Owner(user.id, team.id, agent.id)


async def add_agent(tx, team_id: str, name: str = "Support", slug: str | None = None) -> Agent:
    agent = Agent(
        id=new_id("agent"),
        team_id=team_id,
        name=name,
        slug=slug or f"{name.lower()}-{secrets.token_hex(4)}",
        model="builtin",
        temperature=0.7,
        system_prompt="",
        created_at=NOW,
        updated_at=NOW,
        language="english",
    )
    await agents.insert(tx, agent)
    return agent


def tool(who, name: str, n: int, kind: str = "mock") -> Tool:
    return Tool(
        id=f"tool_{n}",
        agent_id=who.agent_id,
        team_id=who.team_id,
        name=name,
        description="d",
        execution_type=kind,
        input_schema={"type": "object"},
        is_enabled=True,
        display_config=None,
        mock_response='{"ok": true}' if kind == "mock" else None,
        http_url=None,
        http_method=None,
        http_headers=None,
        form_schema={"fields": []} if kind == "form" else None,
        form_execution_mode="webhook" if kind == "form" else None,
        form_webhook_url=None,
        form_client_handler=None,
        form_post_actions=None,
        form_webhook_secret=None,
        created_at=NOW,
        updated_at=NOW,
    )


def submission(who, n: int, *, status: str = "pending", fields=("email",)) -> Submission:
    return Submission(
        id=f"submission_{n}",
        team_id=who.team_id,
        agent_id=who.agent_id,
        tool_id="tool_1",
        tool_name="contact",
        conversation_id=None,
        form_data={"email": "a@b.co"},
        files=None,
        fields_completed=list(fields),
        execution_mode="webhook",
        client_handler=None,
        status=status,
        webhook_attempts=0,
        last_error=None,
        client_result=None,
        impression_at=NOW,
        started_at=None,
        created_at=f"2026-11-24T00:00:0{n}.000Z",
        updated_at=NOW,
    )


async def with_form(db):
    who = await owner(db)
    async with db.write() as tx:
        await tools.insert(tx, tool(who, "contact", 1, "form"))
    return who


def conversation(who, n: int, created_at: str = NOW) -> Conversation:
    return Conversation(
        id=f"conversation_{n}",
        agent_id=who.agent_id,
        team_id=who.team_id,
        title=f"c{n}",
        session_id=None,
        user_ref=None,
        user_email=None,
        user_name=None,
        user_verified_by=None,
        created_at=created_at,
        updated_at=created_at,
    )


def document(who, n: int, status: str = "ready", passage_count: int = 2) -> Document:
    """A text document of `who`'s agent (`document_{n}`), to insert with its content."""
    return Document(
        id=f"document_{n}",
        agent_id=who.agent_id,
        team_id=who.team_id,
        title=f"Doc {n}",
        source_type="text",
        format="text",
        filename=None,
        source_url=None,
        size_bytes=10,
        status=status,
        error=None,
        passage_count=passage_count,
        created_at=NOW,
        updated_at=NOW,
    )
