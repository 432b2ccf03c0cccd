"""An agent's versions: what it does (prompt, model, temperature, language, handoff
settings, guardrails, tools), kept as a numbered snapshot each time that changes.

Version 1 is the agent as created (or, for an agent older than versions, as it was when
they began). A change of any of those fields, through `PATCH /agents/:id` or a restore,
records the next number in its own transaction, after the change, from the stored row: so
the newest version is always what the agent does, and `agents.version` names it. A change
that leaves them as they were records nothing. Answers record the version that made them.
"""

from __future__ import annotations

import difflib
from dataclasses import replace
from typing import Any

from agentsvc import cpu
from agentsvc.db import ConstraintViolation, Database, Tx
from agentsvc.errors import Conflict, NotFound
from agentsvc.ids import now_iso
from agentsvc.services import audit, changes
from agentsvc.services.audit import Actor
from agentsvc.store import agent_versions as versions_store
from agentsvc.store import agents as agents_store
from agentsvc.store import tools as tools_store
from agentsvc.store.agent_versions import AgentVersion
from agentsvc.store.agents import Agent
from agentsvc.store.tools import Tool

# The snapshot's fields, in the order diffs list them, and the agent's column of each.
FIELDS = {
    "systemPrompt": "system_prompt",
    "model": "model",
    "temperature": "temperature",
    "language": "language",
    "handoff": "handoff",
    "guardrails": "guardrails",
    "tools": "tools_snapshot",
}
# What a draft holds: every field but the tools, which change at once in draft mode too.
DRAFTED = {field: column for field, column in FIELDS.items() if field != "tools"}
# A tool as versions keep it: every column but the ones of its row's own bookkeeping.
_TOOL_BOOKKEEPING = frozenset({"agent_id", "team_id", "created_at", "updated_at"})
_COLUMNS = frozenset(FIELDS.values())
# Past this many lines a side, a prompt's change is shown whole, without a line diff: the
# diff's cost grows with the square of the lines in the worst case.
MAX_DIFF_LINES = 5_000


def snapshot_of(agent: Agent) -> dict[str, Any]:
    """The agent's behaviour as a version keeps it (the handoff settings as stored)."""
    return {field: getattr(agent, column) for field, column in FIELDS.items()}


async def insert_in(tx: Tx, agent: Agent, actor: Actor | None, note: str) -> None:
    """Keep the agent as stored now as its version `agent.version`."""
    await versions_store.insert(
        tx,
        AgentVersion(
            agent_id=agent.id,
            number=agent.version,
            snapshot=snapshot_of(agent),
            note=note,
            author_user_id=actor.user_id if actor else None,
            author_key_id=actor.key_id if actor else None,
            created_at=agent.updated_at,
        ),
    )


async def update_in(
    tx: Tx,
    actor: Actor,
    agent_id: str,
    fields: dict[str, Any],
    note: str = "",
    *,
    live: bool = False,
) -> tuple[Agent, int | None]:
    """Change some of an agent's columns; when what it does changed, as its next version.

    With the agent's `versioning` "draft" (unless `live`: a publish, a restore), changes
    of what it does go to its draft instead, and the live agent stays as it is. The row is
    read (locked, on PostgreSQL) in the same transaction, so its live number is the newest
    and two changes at once number theirs one after the other. Returns the agent as stored
    and the new version's number (None: no new version).
    """
    before = await agents_store.get_for_update(tx, actor.team_id, agent_id)
    if before is None:
        raise NotFound("Agent not found")
    now = now_iso()
    mode = fields.get("versioning", before.versioning)
    if mode == "live" and before.versioning == "draft" and before.draft is not None:
        raise Conflict(
            "This agent has a draft: publish it or discard it before changes go live at once"
        )
    if mode == "draft" and not live:
        fields = _into_draft(before, fields, actor, now)
    after = replace(before, **fields, updated_at=now)
    number = None
    if snapshot_of(after) != snapshot_of(before):
        number = before.version + 1
        after = replace(after, version=number)
        fields = {**fields, "version": number}
    await agents_store.update(tx, actor.team_id, agent_id, fields, now)
    if number is not None:
        await insert_in(tx, after, actor, note)
    return after, number


def _into_draft(agent: Agent, fields: dict[str, Any], actor: Actor, now: str) -> dict[str, Any]:
    """The fields with those of what the agent does moved into its draft (a draft equal to
    the live agent is no draft)."""
    changes = {field: fields[column] for field, column in DRAFTED.items() if column in fields}
    if not changes:
        return fields
    kept = {column: value for column, value in fields.items() if column not in _COLUMNS}
    live = {field: value for field, value in snapshot_of(agent).items() if field in DRAFTED}
    snapshot = {**(agent.draft["snapshot"] if agent.draft else live), **changes}
    if snapshot == live:
        return {**kept, "draft": None}
    draft = {
        "basedOn": agent.draft["basedOn"] if agent.draft else agent.version,
        "updatedAt": now,
        "snapshot": snapshot,
        "authorUserId": actor.user_id,
        "authorKeyId": actor.key_id,
    }
    return {**kept, "draft": draft}


async def publish(
    db: Database, actor: Actor, agent_id: str, note: str, forced: bool = False
) -> tuple[Agent, int]:
    """Make the agent's draft live, as its next version; Conflict without a draft. A
    publish past its gate (`forced`) says so in the audit log."""
    async with db.write() as tx:
        agent = await agents_store.get_for_update(tx, actor.team_id, agent_id)
        if agent is None:
            raise NotFound("Agent not found")
        if agent.draft is None:
            raise Conflict("This agent has no draft to publish")
        values = columns_of(agent.draft["snapshot"])
        published, number = await update_in(
            tx, actor, agent_id, {**values, "draft": None}, note, live=True
        )
        assert number is not None  # a draft differs from the live agent, or is none
        await audit.record_in(
            tx,
            actor,
            "agent.published",
            target_type="agent",
            target_id=agent_id,
            label=agent.name,
            details={"version": number, **({"forced": True} if forced else {})},
        )
    await db.announce(changes.agent(agent_id))
    return published, number


async def discard(db: Database, actor: Actor, agent_id: str) -> Agent:
    """Throw the agent's draft away; NotFound without one."""
    async with db.write() as tx:
        agent = await agents_store.get_for_update(tx, actor.team_id, agent_id)
        if agent is None or agent.draft is None:
            raise NotFound("This agent has no draft")
        now = now_iso()
        await agents_store.update(tx, actor.team_id, agent_id, {"draft": None}, now)
    await db.announce(changes.agent(agent_id))
    return replace(agent, draft=None, updated_at=now)


async def at_version(db: Database, agent: Agent, version: int | str) -> Agent:
    """The agent as it was in version `version`, or as its draft is ("draft"; version 0):
    what a preview and an experiment's variant talk to."""
    if version == "draft":
        if agent.draft is None:
            raise NotFound("This agent has no draft")
        return replace(agent, **columns_of(agent.draft["snapshot"]), version=0)
    assert isinstance(version, int)
    key = (agent.id, version)
    snapshot = _SNAPSHOTS.get(key)
    if snapshot is None:
        snapshot = (await get(db, agent.id, version)).snapshot
        if len(_SNAPSHOTS) >= MAX_CACHED_SNAPSHOTS:
            _SNAPSHOTS.clear()
        _SNAPSHOTS[key] = snapshot
    return replace(agent, **columns_of(snapshot), version=version)


# Versions never change once made: an experiment's turns read each variant's once.
MAX_CACHED_SNAPSHOTS = 2_000
_SNAPSHOTS: dict[tuple[str, int], dict[str, Any]] = {}


def columns_of(snapshot: dict[str, Any]) -> dict[str, Any]:
    """A snapshot's values by the agent's columns (to store them on the agent); a snapshot
    without tools (a draft, a version older than tools' keeping) leaves them out."""
    return {
        column: snapshot.get(field)
        for field, column in FIELDS.items()
        if field != "tools" or snapshot.get("tools") is not None
    }


def tool_state(tool: Tool) -> dict[str, Any]:
    """A tool as a version keeps it."""
    return {
        name: getattr(tool, name)
        for name in Tool.__dataclass_fields__
        if name not in _TOOL_BOOKKEEPING
    }


async def tools_changed_in(tx: Tx, actor: Actor, agent_id: str) -> None:
    """After a change of the agent's tools, in its transaction: the tools as a version."""
    tools = await tools_store.list_for_agent(tx, actor.team_id, agent_id)
    states = sorted((tool_state(t) for t in tools), key=lambda t: (t["name"], t["id"]))
    await update_in(tx, actor, agent_id, {"tools_snapshot": states}, live=True)


async def make_live_in(
    tx: Tx, actor: Actor, agent_id: str, snapshot: dict[str, Any], note: str
) -> tuple[Agent, int | None]:
    """Make the agent do what a snapshot did, its tools too, as a new version."""
    made = await update_in(tx, actor, agent_id, columns_of(snapshot), note, live=True)
    if snapshot.get("tools") is not None:
        await _restore_tools_in(tx, actor.team_id, agent_id, snapshot["tools"])
    return made


async def _restore_tools_in(
    tx: Tx, team_id: str, agent_id: str, states: list[dict[str, Any]]
) -> None:
    """The agent's tools made what the states say: others deleted, changed ones updated,
    missing ones made again with their ids (so their forms' submissions find them)."""
    current = {t.id: t for t in await tools_store.list_for_agent(tx, team_id, agent_id)}
    wanted = {state["id"] for state in states}
    for tool_id in current.keys() - wanted:
        await tools_store.delete(tx, team_id, tool_id)
    now = now_iso()
    try:
        for state in states:
            fields = {k: v for k, v in state.items() if k != "id"}
            found = current.get(state["id"])
            if found is None:
                tool = Tool(
                    id=state["id"],
                    agent_id=agent_id,
                    team_id=team_id,
                    created_at=now,
                    updated_at=now,
                    **fields,
                )
                await tools_store.insert(tx, tool)
            elif tool_state(found) != state:
                await tools_store.update(tx, team_id, state["id"], fields, now)
    except ConstraintViolation as exc:
        raise Conflict(
            "The tools could not be put back: two of them now use each other's names;"
            " rename one and restore again"
        ) from exc


async def get(db: Database, agent_id: str, number: int) -> AgentVersion:
    """One version of an agent (the caller has checked the agent is the team's)."""
    return await get_in(db.reader, agent_id, number)


async def get_in(tx: Tx, agent_id: str, number: int) -> AgentVersion:
    """One version of an agent, read in `tx`; NotFound when it has no such version."""
    found = await versions_store.get(tx, agent_id, number)
    if found is None:
        raise NotFound(f"This agent has no version {number}")
    return found


async def page(
    db: Database, agent_id: str, limit: int, below: int | None
) -> tuple[list[AgentVersion], bool]:
    """Versions newest first, and whether there are more after them."""
    found = await versions_store.page(db.reader, agent_id, limit + 1, below)
    return found[:limit], len(found) > limit


async def restore(db: Database, actor: Actor, agent: Agent, version: AgentVersion) -> Agent:
    """Make the agent do what `version` did, as a new version (none when it already does)."""
    async with db.write() as tx:
        restored, number = await make_live_in(
            tx, actor, agent.id, version.snapshot, f"Restored version {version.number}"
        )
        if number is not None:
            await audit.record_in(
                tx,
                actor,
                "agent.version_restored",
                target_type="agent",
                target_id=agent.id,
                label=agent.name,
                details={"restored": version.number, "version": number},
            )
    await db.announce(changes.agent(agent.id))
    return restored


async def diff(before: dict[str, Any], after: dict[str, Any]) -> list[dict[str, Any]]:
    """The fields that differ from one snapshot (as shown) to another; a prompt also as a
    line diff."""
    found = []
    for field in FIELDS:
        old, new = before.get(field), after.get(field)
        if old == new or (field == "tools" and (old is None or new is None)):
            continue  # a draft, or a version older than tools' keeping, holds no tools
        change: dict[str, Any] = {"field": field, "before": old, "after": new}
        if field == "systemPrompt":
            change["lines"] = await cpu.run(_line_diff, old or "", new or "")
        if field == "tools":
            change.update(_tools_changed(old, new))
        found.append(change)
    return found


def _tools_changed(old: list[dict[str, Any]], new: list[dict[str, Any]]) -> dict[str, list]:
    """The names of the tools added, removed and changed (by id)."""
    before, after = {t["id"]: t for t in old}, {t["id"]: t for t in new}
    return {
        "added": [after[i]["name"] for i in after.keys() - before.keys()],
        "removed": [before[i]["name"] for i in before.keys() - after.keys()],
        "changed": [
            after[i]["name"] for i in after.keys() & before.keys() if after[i] != before[i]
        ],
    }


def _line_diff(old: str, new: str) -> list[str] | None:
    """A unified diff of two texts' lines (two lines of context), without the file headers;
    None when either is too long to compare line by line."""
    old_lines, new_lines = old.splitlines(), new.splitlines()
    if max(len(old_lines), len(new_lines)) > MAX_DIFF_LINES:
        return None
    lines = difflib.unified_diff(old_lines, new_lines, lineterm="", n=2)
    return [line for line in lines if not line.startswith(("---", "+++"))]
