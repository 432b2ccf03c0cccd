"""Rows the store tests need, written with the store functions themselves."""

from __future__ import annotations

import secrets
from dataclasses import dataclass

from agentsvc.db import Database
from agentsvc.ids import new_id
from agentsvc.store import accounts, agents
from agentsvc.store.agents import Agent

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
