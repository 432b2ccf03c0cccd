"""The agents feature as the API uses it: an agent's settings (model, prompt, handoff,
widget look, retention) and its widget identity secret."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from pydantic.alias_generators import to_camel

from agentsvc.config import Settings
from agentsvc.db import Database
from agentsvc.errors import NotFound, ValidationFailed
from agentsvc.secretbox import SecretBox
from agentsvc.services.agents import experiments, identity, registry, versions
from agentsvc.services.agents.models import model_error
from agentsvc.services.agents.registry import AgentCache, NewAgent
from agentsvc.services.audit import Actor
from agentsvc.services.evals.service import EvalsService
from agentsvc.services.guardrails import settings as guardrail_settings
from agentsvc.services.guardrails import trying as guardrail_trying
from agentsvc.services.handoff import settings as handoff_settings
from agentsvc.services.privacy import retention
from agentsvc.services.widget import look as widget_look
from agentsvc.store import agents as agents_store
from agentsvc.store import experiments as experiments_store
from agentsvc.store.agent_versions import AgentVersion
from agentsvc.store.agents import Agent
from agentsvc.store.experiments import Experiment


@dataclass(frozen=True, slots=True)
class AgentChanges:
    """A partial update of an agent: its own fields and the sections given."""

    fields: dict[str, Any] = field(default_factory=dict)  # name, model, prompt, ...
    handoff: dict[str, Any] | None = None  # merged into the stored handoff settings
    guardrails: dict[str, Any] | None = None  # the fields given replace the stored ones
    widget: dict[str, Any] | None = None  # merged into the stored widget look
    retention_given: bool = False
    retention_days: int | None = None  # None: kept forever


class AgentsService:
    """Create, read, change and delete a team's agents (reads through the agent cache)."""

    def __init__(
        self,
        db: Database,
        cache: AgentCache,
        box: SecretBox,
        settings: Settings,
        evals: EvalsService,
    ):
        self._db = db
        self._cache = cache
        self._box = box
        self._settings = settings
        self._evals = evals  # the publish gate

    def _check_model(self, model: str) -> None:
        problem = model_error(self._settings, model)
        if problem:
            raise ValidationFailed(f"model: {problem}")

    def handoff_json(self, agent: Agent) -> dict[str, Any]:
        """The agent's handoff settings as the team sees them (signing secret opened)."""
        return handoff_settings.public_json(self._box, agent)

    def view_of(self, agent: Agent, name: str, build: Callable[[Agent], Any]) -> Any:
        """`build(agent)` kept under `name`, made once per state of the agent this process
        holds (reads of an unchanged agent share it: it must not be changed)."""
        kept = self._cache.remembered(agent.id, name)
        if kept is not None and kept[0] is agent:
            return kept[1]
        epoch = self._cache.epoch
        view = build(agent)
        self._cache.remember(agent.id, name, (agent, view), epoch)
        return view

    async def list_agents(self, team_id: str) -> list[Agent]:
        """Return the team's agents, newest first."""
        return await registry.list_agents(self._db, team_id)

    async def get(self, team_id: str, agent_id: str) -> Agent:
        """Return the team's agent or raise NotFound."""
        return await registry.get_agent(self._db, self._cache, team_id, agent_id)

    async def create(self, actor: Actor, new: NewAgent) -> Agent:
        """Create an agent in the actor's team; no model given: the configured default."""
        new = replace(new, model=new.model or self._settings.models.default)
        self._check_model(new.model)
        return await registry.create_agent(self._db, actor.team_id, new, actor)

    async def update(self, actor: Actor, agent_id: str, changes: AgentChanges) -> Agent:
        """Apply a partial update: the agent's fields, then each section given."""
        team_id = actor.team_id
        if "model" in changes.fields:
            self._check_model(changes.fields["model"])
        fields = dict(changes.fields)
        gate = fields.get("publish_gate")
        if gate is not None and not await self._evals.is_set_of(
            team_id, agent_id, gate["evalsetId"]
        ):
            raise ValidationFailed("publishGate.evalsetId: not one of this agent's evaluation sets")
        if changes.handoff is not None or changes.guardrails is not None:
            stored = await agents_store.get(self._db.reader, team_id, agent_id)
            if stored is None:
                raise NotFound("Agent not found")
            # In draft mode, the settings given change the draft's.
            drafting = fields.get("versioning", stored.versioning) == "draft" and stored.draft
            shown = stored.draft["snapshot"] if drafting else versions.snapshot_of(stored)
            if changes.handoff is not None:
                fields["handoff"] = handoff_settings.merged_settings(
                    self._box,
                    stored.id,
                    shown["handoff"],
                    changes.handoff,
                    allow_private=self._settings.outbound.allow_private,
                )
            if changes.guardrails is not None:
                fields["guardrails"] = guardrail_settings.merged(
                    shown.get("guardrails"), changes.guardrails
                )
        # One transaction, and one version when what the agent does changed.
        agent = await registry.update_agent(self._db, actor, agent_id, fields)
        if changes.widget is not None:
            agent = await widget_look.update_settings(self._db, team_id, agent.id, changes.widget)
        if changes.retention_given:
            agent = await retention.set_retention_days(
                self._db, actor, agent.id, changes.retention_days
            )
        return agent

    async def try_guardrails(
        self, team_id: str, agent_id: str, text: str, given: dict[str, Any] | None
    ) -> dict[str, Any]:
        """What the agent's guardrails, with the unsaved changes `given`, do with a text."""
        return await guardrail_trying.try_on(await self.get(team_id, agent_id), text, given)

    async def versions(
        self, team_id: str, agent_id: str, limit: int, below: int | None
    ) -> tuple[list[AgentVersion], bool]:
        """The agent's versions, newest first, and whether more follow."""
        agent = await self.get(team_id, agent_id)
        return await versions.page(self._db, agent.id, limit, below)

    async def version(self, team_id: str, agent_id: str, number: int) -> AgentVersion:
        """One version of the team's agent, or NotFound."""
        agent = await self.get(team_id, agent_id)
        return await versions.get(self._db, agent.id, number)

    async def diff(
        self, team_id: str, agent_id: str, old: int | str, new: int | str
    ) -> list[dict[str, Any]]:
        """What changed from version `old` to version `new` (either may be "draft")."""
        agent = await self.get(team_id, agent_id)
        before = await self._snapshot(agent, old)
        after = await self._snapshot(agent, new)
        return await versions.diff(version_view(before), version_view(after))

    async def _snapshot(self, agent: Agent, ref: int | str) -> dict[str, Any]:
        if ref == "draft":
            return self.draft_of(agent)["snapshot"]
        assert isinstance(ref, int)
        return (await versions.get(self._db, agent.id, ref)).snapshot

    @staticmethod
    def draft_of(agent: Agent) -> dict[str, Any]:
        """The agent's draft, or NotFound."""
        if agent.draft is None:
            raise NotFound("This agent has no draft")
        return agent.draft

    async def publish(
        self, actor: Actor, agent_id: str, note: str, force: bool = False
    ) -> tuple[Agent, AgentVersion]:
        """Make the agent's draft live as its next version (its model must be offered).
        With a publish gate, the draft must pass its evaluation set first, unless `force`
        (the caller checked it is the owner)."""
        agent = await self.get(actor.team_id, agent_id)
        if agent.draft is not None:
            self._check_model(agent.draft["snapshot"].get("model") or "")
            if agent.publish_gate is not None and not force:
                await self._evals.gate(actor, agent, agent.publish_gate)
        published, number = await versions.publish(self._db, actor, agent.id, note, force)
        return published, await versions.get(self._db, agent.id, number)

    async def start_experiment(
        self, actor: Actor, agent_id: str, variants: list[dict[str, Any]]
    ) -> Experiment:
        """Run an experiment on the agent's versions (each version's model must be offered)."""
        agent = await self.get(actor.team_id, agent_id)
        variants = experiments.check_variants(variants)
        for variant in variants:
            version = await versions.get(self._db, agent.id, variant["version"])
            model = version.snapshot.get("model") or ""
            if model_error(self._settings, model):
                raise ValidationFailed(
                    f"variants: version {version.number} uses the model {model}, which this"
                    " server does not offer now"
                )
        return await experiments.start(self._db, actor, agent, variants)

    async def experiments(self, team_id: str, agent_id: str) -> list[Experiment]:
        """The agent's experiments, newest first (the last 100)."""
        agent = await self.get(team_id, agent_id)
        return await experiments_store.list_for_agent(self._db.reader, agent.id, 100)

    async def experiment(self, team_id: str, experiment_id: str) -> tuple[Experiment, dict]:
        """One of the team's experiments, and its figures per variant."""
        found = await experiments.get(self._db, team_id, experiment_id)
        return found, await experiments.results(self._db, found)

    async def stop_experiment(
        self, actor: Actor, experiment_id: str, winner: int | None
    ) -> Experiment:
        """Stop one of the team's experiments; the winner, if named, goes live."""
        found = await experiments.get(self._db, actor.team_id, experiment_id)
        return await experiments.stop(self._db, actor, found, winner)

    async def discard_draft(self, actor: Actor, agent_id: str) -> Agent:
        """Throw the agent's draft away."""
        agent = await self.get(actor.team_id, agent_id)
        return await versions.discard(self._db, actor, agent.id)

    async def restore(self, actor: Actor, agent_id: str, number: int) -> tuple[Agent, bool]:
        """Make a version live again, as a new version; False when it already was."""
        agent = await self.get(actor.team_id, agent_id)
        version = await versions.get(self._db, agent.id, number)
        model = version.snapshot.get("model") or ""
        if model_error(self._settings, model):
            raise ValidationFailed(
                f"Version {number} uses the model {model}, which this server does not offer"
                " now: choose a model and change the agent instead."
            )
        restored = await versions.restore(self._db, actor, agent, version)
        return restored, restored.version != agent.version

    async def delete(self, actor: Actor, agent_id: str) -> None:
        """Delete the actor team's agent and everything it owns."""
        await registry.delete_agent(self._db, self._cache, actor.team_id, agent_id, actor)

    async def set_identity_secret(self, team_id: str, agent_id: str, secret: str | None) -> str:
        """Set the agent's identity secret (generated when None) and return it."""
        return await identity.set_secret(self._db, self._box, team_id, agent_id, secret)

    async def has_identity_secret(self, team_id: str, agent_id: str) -> bool:
        """Whether the team's agent has an identity secret."""
        return await identity.has_secret(self._db, team_id, agent_id)

    async def clear_identity_secret(self, team_id: str, agent_id: str) -> None:
        """Remove the agent's identity secret."""
        await identity.clear_secret(self._db, team_id, agent_id)


def version_view(snapshot: dict[str, Any]) -> dict[str, Any]:
    """A version's snapshot as the team sees it: every field, the handoff settings complete
    and their sealed signing secret left out, each tool as the tools API shows it but for
    its form's signing secret (null: a draft, or a version older than tools' keeping)."""
    settings = handoff_settings.settings_of(snapshot.get("handoff"))
    tools = snapshot.get("tools")
    return {
        **{field: snapshot.get(field) for field in versions.FIELDS},
        "handoff": {k: v for k, v in settings.items() if k != "teamChatSecretSealed"},
        "guardrails": guardrail_settings.settings_of(snapshot.get("guardrails")),
        "tools": None if tools is None else [_tool_view(t) for t in tools],
    }


def _tool_view(state: dict[str, Any]) -> dict[str, Any]:
    # The tools API's names (its models' camelCase aliases), without the form's signing secret.
    return {
        to_camel(name): value
        for name, value in state.items()
        if name not in ("form_webhook_secret", "counts_as")
    }
