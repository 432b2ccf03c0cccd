"""Every typed key under which state lives on the application or the request."""

from __future__ import annotations

from typing import TYPE_CHECKING

from aiohttp import web

if TYPE_CHECKING:
    from aiohttp import ClientSession
    from aiohttp.abc import AbstractResolver

    from agentsvc.api.bodies import BodySlots
    from agentsvc.api.chat import OpenStreams
    from agentsvc.api.event_streams import EventStreams
    from agentsvc.api.state import RequestDeps, RequestState
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
    from agentsvc.services.agents.registry import AgentCache
    from agentsvc.services.answers.matching import CuratedAnswers
    from agentsvc.services.chat.turns import ChatTurns
    from agentsvc.services.events.emitter import Emitter
    from agentsvc.services.forms.delivery import Deliverer
    from agentsvc.services.handoff.live import LiveEvents
    from agentsvc.services.handoff.notify import Notifier
    from agentsvc.services.health import HealthService
    from agentsvc.services.knowledge.indexing import Indexer
    from agentsvc.services.privacy.search_index import MessageIndexScrubber
    from agentsvc.services.team.access import KeyResolver
    from agentsvc.services.team.service import ApiKeysService, SignInService, TeamService
    from agentsvc.services.tools.runner import ToolRunner
    from agentsvc.services.triggers.events import EventWriter
    from agentsvc.services.widget.public import WidgetConfigCache

settings_key: web.AppKey[Settings] = web.AppKey("settings")
db_key: web.AppKey[Database] = web.AppKey("db")
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
openapi_body_key: web.AppKey[bytes] = web.AppKey("openapi_body")  # served by GET /openapi.json
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
handoff_notifier_key: web.AppKey[Notifier] = web.AppKey("handoff_notifier")

# One service object per feature (built in runtime.py's `_features`); handlers call methods
# on these.

# -- chat, conversations, handoff, answers, MCP server

# -- forms, delivery, event webhooks

# -- agents, tools, knowledge, triggers, widget, exports, privacy, analytics, audit, secrets

# -- team, sign-in, sessions, API keys, limits
team_key: web.AppKey[TeamService] = web.AppKey("team")
sign_in_key: web.AppKey[SignInService] = web.AppKey("sign_in")
api_keys_key: web.AppKey[ApiKeysService] = web.AppKey("api_keys")
health_key: web.AppKey[HealthService] = web.AppKey("health")
# What every request needs (settings, limiter, key resolver, metrics, body slots): the
# endpoint wrapper, authentication and the rate limits read it under this one key.
request_deps_key: web.AppKey[RequestDeps] = web.AppKey("request_deps")

# Request-scoped values.
request_state_key: web.RequestKey[RequestState] = web.RequestKey("state")
