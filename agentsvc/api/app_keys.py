"""Every typed key under which state lives on the application or the request."""

from __future__ import annotations

from typing import TYPE_CHECKING

from aiohttp import web

if TYPE_CHECKING:
    from aiohttp import ClientSession
    from aiohttp.abc import AbstractResolver

    from agentsvc.api.bodies import BodySlots
    from agentsvc.api.openapi import OpenApiDocument
    from agentsvc.api.state import RequestDeps, RequestState
    from agentsvc.api.streams import EventStreams, OpenStreams, StreamingDeps
    from agentsvc.config import Settings
    from agentsvc.db import Database
    from agentsvc.jobs import Jobs
    from agentsvc.llm.base import Providers
    from agentsvc.mail import Mailer
    from agentsvc.mcp_client import McpClient
    from agentsvc.observability import Metrics
    from agentsvc.outbound import OutboundClient
    from agentsvc.ratelimit import Limiter
    from agentsvc.secretbox import SecretBox
    from agentsvc.services.agent_analytics import AnalyticsService
    from agentsvc.services.agents.mcp_service import McpServerService
    from agentsvc.services.agents.registry import AgentCache
    from agentsvc.services.agents.service import AgentsService
    from agentsvc.services.answers.matching import CuratedAnswers
    from agentsvc.services.answers.service import AnswersService
    from agentsvc.services.approvals.gate import Gate
    from agentsvc.services.approvals.resume import Resumer
    from agentsvc.services.approvals.service import ApprovalsService
    from agentsvc.services.audit import AuditService
    from agentsvc.services.channels.email_poll import EmailPoller
    from agentsvc.services.channels.service import ChannelsService
    from agentsvc.services.chat.service import ConversationsService
    from agentsvc.services.chat.turns import ChatTurns
    from agentsvc.services.delivery.outbox import Deliverer, Queue
    from agentsvc.services.desk.service import DeskService
    from agentsvc.services.evals.runs import EvalRunner
    from agentsvc.services.evals.service import EvalsService
    from agentsvc.services.events.emitter import Emitter
    from agentsvc.services.events.service import WebhooksService
    from agentsvc.services.exports.service import ExportsService
    from agentsvc.services.forms.outbox import FormDelivery
    from agentsvc.services.forms.service import FormsService
    from agentsvc.services.handoff.live import LiveEvents
    from agentsvc.services.handoff.notify import Notifier
    from agentsvc.services.handoff.service import HandoffService
    from agentsvc.services.health import HealthService
    from agentsvc.services.knowledge.indexing import Indexer
    from agentsvc.services.knowledge.service import KnowledgeService
    from agentsvc.services.knowledge.sources.sync import SourceSyncer
    from agentsvc.services.privacy.search_index import MessageIndexScrubber
    from agentsvc.services.privacy.service import PrivacyService
    from agentsvc.services.scim.service import Caller as ScimCaller
    from agentsvc.services.scim.service import ScimService
    from agentsvc.services.sso.service import SsoService
    from agentsvc.services.team.access import KeyResolver
    from agentsvc.services.team.service import ApiKeysService, SignInService, TeamService
    from agentsvc.services.tools.runner import ToolRunner
    from agentsvc.services.tools.secrets import SecretsService
    from agentsvc.services.tools.service import ToolsService
    from agentsvc.services.triggers.events import EventWriter
    from agentsvc.services.triggers.service import TriggersService
    from agentsvc.services.usage.service import UsageService
    from agentsvc.services.widget.public import WidgetConfigCache
    from agentsvc.services.widget.service import WidgetService
    from agentsvc.storage import FileStore

settings_key: web.AppKey[Settings] = web.AppKey("settings")
db_key: web.AppKey[Database] = web.AppKey("db")
# Where files are kept (data_dir, the database or S3: agentsvc/storage/).
files_key: web.AppKey[FileStore] = web.AppKey("files")
# Erased words out of the message search index (PostgreSQL: rebuilt in the background).
index_scrubber_key: web.AppKey[MessageIndexScrubber] = web.AppKey("index_scrubber")
key_resolver_key: web.AppKey[KeyResolver] = web.AppKey("key_resolver")
agent_cache_key: web.AppKey[AgentCache] = web.AppKey("agent_cache")
widget_config_cache_key: web.AppKey[WidgetConfigCache] = web.AppKey("widget_config_cache")
curated_answers_key: web.AppKey[CuratedAnswers] = web.AppKey("curated_answers")
limiter_key: web.AppKey[Limiter] = web.AppKey("limiter")
body_slots_key: web.AppKey[BodySlots] = web.AppKey("body_slots")
jobs_key: web.AppKey[Jobs] = web.AppKey("jobs")
metrics_key: web.AppKey[Metrics] = web.AppKey("metrics")
openapi_key: web.AppKey[OpenApiDocument] = web.AppKey("openapi")  # served by GET /openapi.json
event_writer_key: web.AppKey[EventWriter] = web.AppKey("event_writer")
secret_box_key: web.AppKey[SecretBox] = web.AppKey("secret_box")
outbound_key: web.AppKey[OutboundClient] = web.AppKey("outbound")
# Optional, set before startup: the resolver under the outbound guard (tests stub DNS with it).
outbound_resolver_key: web.AppKey[AbstractResolver] = web.AppKey("outbound_resolver")
tool_runner_key: web.AppKey[ToolRunner] = web.AppKey("tool_runner")
mcp_client_key: web.AppKey[McpClient] = web.AppKey("mcp_client")
mailer_key: web.AppKey[Mailer] = web.AppKey("mailer")
deliverer_key: web.AppKey[Deliverer] = web.AppKey("deliverer")
emitter_key: web.AppKey[Emitter] = web.AppKey("event_emitter")
oauth_http_key: web.AppKey[ClientSession] = web.AppKey("oauth_http")
indexer_key: web.AppKey[Indexer] = web.AppKey("knowledge_indexer")
providers_key: web.AppKey[Providers] = web.AppKey("providers")
chat_streams_key: web.AppKey[OpenStreams] = web.AppKey("chat_streams")
chat_turns_key: web.AppKey[ChatTurns] = web.AppKey("chat_turns")  # every door's turns
live_events_key: web.AppKey[LiveEvents] = web.AppKey("live_events")
event_streams_key: web.AppKey[EventStreams] = web.AppKey("event_streams")
# What POST /chat and the GET event streams run on (registries, limiter, their settings).
streaming_key: web.AppKey[StreamingDeps] = web.AppKey("streaming")
handoff_notifier_key: web.AppKey[Notifier] = web.AppKey("handoff_notifier")

# One service object per feature (built in runtime.py's `_features`); handlers call methods
# on these.

# -- chat, conversations, handoff, answers, MCP server
conversations_key: web.AppKey[ConversationsService] = web.AppKey("conversations")
handoff_key: web.AppKey[HandoffService] = web.AppKey("handoff")
desk_key: web.AppKey[DeskService] = web.AppKey("desk")
answers_key: web.AppKey[AnswersService] = web.AppKey("answers")
mcp_server_key: web.AppKey[McpServerService] = web.AppKey("mcp_server")
evals_key: web.AppKey[EvalsService] = web.AppKey("evals")
eval_runner_key: web.AppKey[EvalRunner] = web.AppKey("eval_runner")
source_syncer_key: web.AppKey[SourceSyncer] = web.AppKey("source_syncer")
# Tool calls a person approves first: the gate turns pass, the paused turns taken up.
approvals_key: web.AppKey[ApprovalsService] = web.AppKey("approvals")
approval_gate_key: web.AppKey[Gate] = web.AppKey("approval_gate")
approval_resumer_key: web.AppKey[Resumer] = web.AppKey("approval_resumer")

# -- forms, delivery, event webhooks
forms_key: web.AppKey[FormsService] = web.AppKey("forms")
webhooks_key: web.AppKey[WebhooksService] = web.AppKey("webhooks")
# The form deliveries' queue of the outbox worker (runtime's use: the forms service's).
form_deliveries_key: web.AppKey[Queue[FormDelivery]] = web.AppKey("form_deliveries")

# -- channels: an agent on other platforms
channels_key: web.AppKey[ChannelsService] = web.AppKey("channels")
email_poller_key: web.AppKey[EmailPoller] = web.AppKey("email_poller")

# -- agents, tools, knowledge, triggers, widget, exports, privacy, analytics, audit, secrets
agents_key: web.AppKey[AgentsService] = web.AppKey("agents")
tools_key: web.AppKey[ToolsService] = web.AppKey("tools")
knowledge_key: web.AppKey[KnowledgeService] = web.AppKey("knowledge")
triggers_key: web.AppKey[TriggersService] = web.AppKey("triggers")
widget_key: web.AppKey[WidgetService] = web.AppKey("widget")
analytics_key: web.AppKey[AnalyticsService] = web.AppKey("analytics")
audit_key: web.AppKey[AuditService] = web.AppKey("audit")
exports_key: web.AppKey[ExportsService] = web.AppKey("exports")
privacy_key: web.AppKey[PrivacyService] = web.AppKey("privacy")
secrets_key: web.AppKey[SecretsService] = web.AppKey("secrets")
usage_key: web.AppKey[UsageService] = web.AppKey("usage")  # tokens, costs, budgets

# -- team, sign-in, sessions, API keys, limits
team_key: web.AppKey[TeamService] = web.AppKey("team")
sign_in_key: web.AppKey[SignInService] = web.AppKey("sign_in")
api_keys_key: web.AppKey[ApiKeysService] = web.AppKey("api_keys")
sso_key: web.AppKey[SsoService] = web.AppKey("sso")
scim_key: web.AppKey[ScimService] = web.AppKey("scim")
health_key: web.AppKey[HealthService] = web.AppKey("health")
# What every request needs (settings, limiter, key resolver, metrics, body slots): the
# endpoint wrapper, authentication and the rate limits read it under this one key.
request_deps_key: web.AppKey[RequestDeps] = web.AppKey("request_deps")

# Request-scoped values.
request_state_key: web.RequestKey[RequestState] = web.RequestKey("state")
scim_caller_key: web.RequestKey[ScimCaller] = web.RequestKey("scim_caller")
