"""Agents: creation with slugs, reads through a cache, partial updates and deletion."""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from typing import Any

from agentsvc.db import Database
from agentsvc.errors import NotFound
from agentsvc.ids import new_id, now_iso
from agentsvc.language import DEFAULT_LANGUAGE
from agentsvc.services import audit, changes
from agentsvc.services.agents import versions
from agentsvc.services.audit import Actor
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


@dataclass(frozen=True, slots=True)
class NewAgent:
    """What a new agent is made of (the rest is the service's: id, slug, times)."""

    name: str
    model: str
    system_prompt: str = ""
    temperature: float | None = None  # None: DEFAULT_TEMPERATURE
    language: str = DEFAULT_LANGUAGE
    widget: dict[str, Any] | None = None  # display settings (services.widget.look)


async def create_agent(
    db: Database, team_id: str, new: NewAgent, actor: Actor | None = None
) -> Agent:
    """Create an agent with a slug unique within its team."""
    name, temperature = new.name, new.temperature
    base = slugify(name)
    now = now_iso()
    async with db.write() as tx:
        slug = _unique_slug(base, await agents_store.slugs_like(tx, team_id, base))
        agent = Agent(
            id=new_id("agent"),
            team_id=team_id,
            name=name,
            slug=slug,
            model=new.model,
            temperature=DEFAULT_TEMPERATURE if temperature is None else float(temperature),
            system_prompt=new.system_prompt,
            created_at=now,
            updated_at=now,
            language=new.language,
            widget=new.widget,
            tools_snapshot=[],
        )
        await agents_store.insert(tx, agent)
        await versions.insert_in(tx, agent, actor, "Created")
        await audit.record_in(
            tx, actor, "agent.created", target_type="agent", target_id=agent.id, label=name
        )
    return agent


async def list_agents(db: Database, team_id: str) -> list[Agent]:
    """Return the team's agents, newest first."""
    return await agents_store.list_for_team(db.reader, team_id)


class AgentCache:
    """Agents by id, for reads on hot paths (one database round trip saved per read), and
    what is derived from an agent or kept beside it (`remembered`/`remember`: its rendered
    settings, its budget), forgotten with it.

    Agents change only through `update_agent` and `delete_agent` below (the CLI never
    edits agents); both announce the change, and every process's cache drops the entry
    (`changes.follow`): at once in this process, within milliseconds in the others.
    A read that started before a change and ends after it must not put back what it read:
    `epoch` moves on every forget, and `put`/`remember` given an older epoch keep nothing.
    """

    def __init__(self, max_entries: int = 10_000):
        self._by_id: dict[str, Agent] = {}
        self._extras: dict[str, dict[str, Any]] = {}
        self._max_entries = max_entries
        self.epoch = 0

    def get(self, agent_id: str) -> Agent | None:
        return self._by_id.get(agent_id)

    def put(self, agent: Agent, epoch: int | None = None) -> None:
        if epoch is not None and epoch != self.epoch:
            return  # the agent changed while it was read
        if len(self._by_id) >= self._max_entries:
            self._by_id.clear()
            self._extras.clear()
        self._by_id[agent.id] = agent

    def remembered(self, agent_id: str, key: str, default: Any = None) -> Any:
        """What `remember` kept for the agent under `key` (`default` when nothing)."""
        extras = self._extras.get(agent_id)
        return default if extras is None else extras.get(key, default)

    def remember(self, agent_id: str, key: str, value: Any, epoch: int) -> None:
        """Keep `value` for the agent until it changes; `epoch` as read before it was made."""
        if epoch != self.epoch:
            return
        if len(self._extras) >= self._max_entries:
            self._extras.clear()
        self._extras.setdefault(agent_id, {})[key] = value

    def forget(self, agent_id: str) -> None:
        self.epoch += 1
        self._by_id.pop(agent_id, None)
        self._extras.pop(agent_id, None)

    def clear(self) -> None:
        self.epoch += 1
        self._by_id.clear()
        self._extras.clear()


async def find_agent(db: Database, cache: AgentCache, agent_id: str) -> Agent | None:
    """The agent with this id, whatever its team, from the cache when it is there."""
    agent = cache.get(agent_id)
    if agent is None:
        epoch = cache.epoch
        agent = await agents_store.get_public(db.reader, agent_id)
        if agent is not None:
            cache.put(agent, epoch)
    return agent


async def get_agent(db: Database, cache: AgentCache, team_id: str, agent_id: str) -> Agent:
    """Return the team's agent or raise NotFound (another team's agent is not found)."""
    agent = await find_agent(db, cache, agent_id)
    if agent is None or agent.team_id != team_id:
        raise NotFound("Agent not found")
    return agent


async def update_agent(db: Database, actor: Actor, agent_id: str, fields: dict) -> Agent:
    """Apply a partial update (the slug never changes), as a new version when what the
    agent does changed, and return the agent."""
    async with db.write() as tx:
        agent, _ = await versions.update_in(tx, actor, agent_id, fields)
    # After the commit: a process that reloaded the agent before it would cache the old one.
    await db.announce(changes.agent(agent_id))
    return agent


async def delete_agent(
    db: Database, cache: AgentCache, team_id: str, agent_id: str, actor: Actor | None = None
) -> None:
    """Delete an agent and, by cascade, its conversations, documents, tools and triggers."""
    async with db.write() as tx:
        agent = await agents_store.get(tx, team_id, agent_id)
        if agent is None or not await agents_store.delete(tx, team_id, agent_id):
            raise NotFound("Agent not found")
        await audit.record_in(
            tx, actor, "agent.deleted", target_type="agent", target_id=agent_id, label=agent.name
        )
    await db.announce(changes.agent(agent_id))
