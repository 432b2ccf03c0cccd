"""Agents: creation with slugs, partial updates and deletion."""

from __future__ import annotations

import re
import unicodedata

from agentsvc.db import Database
from agentsvc.errors import NotFound
from agentsvc.ids import new_id, now_iso
from agentsvc.store import agents as agents_store
from agentsvc.store.agents import Agent

DEFAULT_TEMPERATURE = 70.0


def slugify(name: str) -> str:
    """Lower-case, fold accents, turn every run of other characters into one `-`, trim."""
    folded = unicodedata.normalize("NFKD", name).encode("ascii", "ignore").decode("ascii")
    slug = re.sub(r"[^a-z0-9]+", "-", folded.lower()).strip("-")
    return slug or "agent"


def _unique_slug(base: str, taken: set[str]) -> str:
    if base not in taken:
        return base
    n = 2
    while f"{base}-{n}" in taken:
        n += 1
    return f"{base}-{n}"


async def create_agent(
    db: Database,
    *,
    team_id: str,
    name: str,
    model: str,
    system_prompt: str,
    temperature: float | None,
) -> Agent:
    """Create an agent with a slug unique within its team."""
    base = slugify(name)
    now = now_iso()
    async with db.write() as conn:
        slug = _unique_slug(base, await agents_store.slugs_like(conn, team_id, base))
        agent = Agent(
            id=new_id("agent"),
            team_id=team_id,
            name=name,
            slug=slug,
            model=model,
            temperature=DEFAULT_TEMPERATURE if temperature is None else float(temperature),
            system_prompt=system_prompt,
            created_at=now,
            updated_at=now,
        )
        await agents_store.insert(conn, agent)
    return agent


async def list_agents(db: Database, team_id: str) -> list[Agent]:
    """Return the team's agents, newest first."""
    return await agents_store.list_for_team(db.reader, team_id)


async def get_agent(db: Database, team_id: str, agent_id: str) -> Agent:
    """Return the team's agent or raise NotFound."""
    agent = await agents_store.get(db.reader, team_id, agent_id)
    if agent is None:
        raise NotFound("Agent not found")
    return agent


async def update_agent(db: Database, team_id: str, agent_id: str, fields: dict) -> Agent:
    """Apply a partial update (the slug never changes) and return the agent."""
    async with db.write() as conn:
        if not await agents_store.update(conn, team_id, agent_id, fields, now_iso()):
            raise NotFound("Agent not found")
        agent = await agents_store.get(conn, team_id, agent_id)
    assert agent is not None
    return agent


async def delete_agent(db: Database, team_id: str, agent_id: str) -> None:
    """Delete an agent and, by cascade, its conversations, documents, tools and triggers."""
    async with db.write() as conn:
        if not await agents_store.delete(conn, team_id, agent_id):
            raise NotFound("Agent not found")
