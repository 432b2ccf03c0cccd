"""The application's life: every start-up and shutdown step, background task and job.

`attach(app)` registers, in order, the resources the service runs on. Each step opens what
it owns, puts it under its key (app_keys.py) and closes it in reverse order at shutdown, so the
order below is the dependency order: the database first (and closed last, after every
writer has flushed), the scheduler, then what uses them. Services receive their
dependencies here as plain objects; none of them sees the application.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
from collections.abc import AsyncIterator

import aiohttp
import orjson
from aiohttp import web

from agentsvc import telemetry
from agentsvc.api import app_keys
from agentsvc.api.state import RequestDeps
from agentsvc.api.streams import EventStreams, OpenStreams, StreamingDeps
from agentsvc.db import database_for
from agentsvc.jobs import Jobs
from agentsvc.llm.base import Providers
from agentsvc.llm.embeddings import make_embedder
from agentsvc.mail import Mailer
from agentsvc.mcp_client import McpClient
from agentsvc.outbound import OutboundClient
from agentsvc.passwords import warm_up
from agentsvc.ratelimit import Limiter, LocalLimiter
from agentsvc.secretbox import SecretBox
from agentsvc.services import changes
from agentsvc.services.agent_analytics import AnalyticsService
from agentsvc.services.agents import identity
from agentsvc.services.agents.mcp_service import AgentServerDeps, McpServerService
from agentsvc.services.agents.registry import AgentCache
from agentsvc.services.agents.service import AgentsService
from agentsvc.services.answers.matching import CuratedAnswers
from agentsvc.services.answers.service import AnswersService
from agentsvc.services.approvals.gate import Gate, GateDeps
from agentsvc.services.approvals.resume import ResumeDeps, Resumer
from agentsvc.services.approvals.service import ApprovalsDeps, ApprovalsService
from agentsvc.services.approvals.signals import ApprovalSignals
from agentsvc.services.audit import AuditService
from agentsvc.services.channels.email_files import remove_orphan_folders
from agentsvc.services.channels.email_poll import EmailPoller, PollConfig
from agentsvc.services.channels.inbound import ChannelInbox, InboxConfig
from agentsvc.services.channels.outbox import ChannelReplies
from agentsvc.services.channels.probe import ChannelProbe
from agentsvc.services.channels.replies import ReplyQueue
from agentsvc.services.channels.service import (
    ChannelDeps,
    ChannelsConfig,
    ChannelsService,
    PlatformApis,
)
from agentsvc.services.channels.slack import SlackApi
from agentsvc.services.channels.telegram import TelegramApi
from agentsvc.services.chat.messages import ConversationLog
from agentsvc.services.chat.service import ConversationsService
from agentsvc.services.chat.turn import TurnDeps, TurnSources, TurnTools
from agentsvc.services.chat.turns import ChatTurns
from agentsvc.services.cluster_jobs import once_for_all
from agentsvc.services.delivery.outbox import Deliverer
from agentsvc.services.delivery.post import Poster
from agentsvc.services.desk.service import DeskService
from agentsvc.services.evals.answering import Answering
from agentsvc.services.evals.runs import EvalRunner
from agentsvc.services.evals.service import EvalsDeps, EvalsService
from agentsvc.services.events.emitter import Emitter
from agentsvc.services.events.outbox import EventDeliveries
from agentsvc.services.events.service import WebhooksConfig, WebhooksService
from agentsvc.services.exports.service import ExportsService
from agentsvc.services.files_sweep import sweep_files
from agentsvc.services.forms.conversation import ConversationForms
from agentsvc.services.forms.files import SWEEP_INTERVAL_SECONDS
from agentsvc.services.forms.outbox import FormDeliveries
from agentsvc.services.forms.service import FormsConfig, FormsService
from agentsvc.services.handoff.flow import HandoffDeps
from agentsvc.services.handoff.live import LiveEvents
from agentsvc.services.handoff.notify import Notifier, NotifySettings
from agentsvc.services.handoff.service import HandoffService
from agentsvc.services.health import HealthService
from agentsvc.services.knowledge.indexing import Indexer
from agentsvc.services.knowledge.service import KnowledgeDeps, KnowledgeService
from agentsvc.services.knowledge.sources.crawl import SyncTools
from agentsvc.services.knowledge.sources.fetch import FetchLimits, PageFetcher
from agentsvc.services.knowledge.sources.pages import PageWriter
from agentsvc.services.knowledge.sources.service import SourcesDeps, SourcesService
from agentsvc.services.knowledge.sources.sync import SourceSyncer, SyncerDeps
from agentsvc.services.knowledge.vectors import Semantic, VectorIndex
from agentsvc.services.privacy.retention import purge_expired
from agentsvc.services.privacy.search_index import MessageIndexScrubber
from agentsvc.services.privacy.service import PrivacyService
from agentsvc.services.scim.service import ScimService
from agentsvc.services.sso.service import SsoService
from agentsvc.services.team import membership, oauth, sessions
from agentsvc.services.team.access import KeyResolver
from agentsvc.services.team.service import ApiKeysService, SignInService, TeamService
from agentsvc.services.tools.runner import ToolRunner
from agentsvc.services.tools.secrets import SecretsService
from agentsvc.services.tools.service import ToolsService
from agentsvc.services.triggers.events import EventWriter
from agentsvc.services.triggers.service import TriggersService
from agentsvc.services.usage.alerts import BudgetMail
from agentsvc.services.usage.meter import UsageMeter
from agentsvc.services.usage.prices import PriceBook
from agentsvc.services.usage.service import UsageService
from agentsvc.services.widget.public import WidgetConfigCache
from agentsvc.services.widget.service import WidgetService
from agentsvc.storage import open_store
from agentsvc.storage.copying import adopt_local_files
from agentsvc.storage.local import LocalStore

log = logging.getLogger(__name__)

# Periodic jobs (ids are what `Jobs` knows them by).
EXPIRE_INVITATIONS_JOB = "expire-invitations"
PRUNE_SESSIONS_JOB = "prune-sessions"
PRUNE_SESSIONS_SECONDS = 3600
SWEEP_FILES_JOB = "files-sweep"  # files nothing names any more (forms, pictures, documents)
DELIVERY_POLL_JOB = "delivery-poll"  # several processes only
RETENTION_JOB = "data-retention"
CHANNEL_RESUME_JOB = "channel-messages-resume"  # several processes only
EMAIL_POLL_JOB = "email-channels-poll"  # e-mail channels' mailboxes read
MAIL_FILES_JOB = "mail-files-sweep"  # e-mails' attachments no message lists
EVAL_SWEEP_JOB = "eval-runs-sweep"  # runs queued, or left by a process that stopped
SOURCE_SWEEP_JOB = "sources-sweep"  # syncs due, queued, or left by a process that stopped
APPROVALS_SWEEP_JOB = "approvals-sweep"  # calls whose time ran out; decided turns taken up


def attach(app: web.Application) -> None:
    """Register the service's life cycle on the application (see the module docstring)."""
    app.cleanup_ctx.extend(
        [
            _telemetry,  # first: every step after it may record spans; flushed last
            _limits,
            _database,
            _storage,  # after _database: PostgreSQL may keep the files
            _jobs,
            _tools,
            _event_writer,
            _chat,
            _knowledge,  # after _chat: embeddings use the providers' ClientSession
            _team,
            _handoff,  # after _team: handoff notifications use the mailer
            _delivery,  # after _team: e-mail deliveries use the mailer
            _features,  # last: one service object per feature, on everything above
        ]
    )
    app.on_shutdown.append(_close_streams)
    app.on_shutdown.append(_stop_jobs)


async def _telemetry(app: web.Application) -> AsyncIterator[None]:
    """Traces, when `[telemetry] otlp_endpoint` is set (nothing is loaded otherwise); at
    shutdown the queued spans are sent, within the export timeout."""
    telemetry.start(app[app_keys.settings_key].telemetry)
    yield
    await telemetry.stop()


async def _limits(app: web.Application) -> AsyncIterator[None]:
    """The rate limits: in this process's memory, or shared through Redis when configured."""
    redis_url = app[app_keys.settings_key].ratelimit.redis_url
    limiter: Limiter = LocalLimiter()
    if redis_url:
        # The Redis client is loaded only when configured (a tenth of a second at start-up).
        from agentsvc.ratelimit_redis import RedisLimiter

        limiter = RedisLimiter(redis_url)
    app[app_keys.limiter_key] = limiter
    yield
    await limiter.close()


async def _database(app: web.Application) -> AsyncIterator[None]:
    """The database (migrated on open), its upkeep task (SQLite: WAL checkpoints;
    PostgreSQL: hearing other processes' changes) and the caches on it."""
    db = database_for(app[app_keys.settings_key])
    await db.open()
    upkeep = asyncio.create_task(db.run_upkeep(), name="database-upkeep")
    app[app_keys.db_key] = db
    resolver = app[app_keys.key_resolver_key] = KeyResolver(db)
    agents = app[app_keys.agent_cache_key] = AgentCache()
    configs = app[app_keys.widget_config_cache_key] = WidgetConfigCache()
    curated = app[app_keys.curated_answers_key] = CuratedAnswers(
        app[app_keys.settings_key].answers.match_threshold
    )
    changes.follow(
        db,
        changes.Caches(resolver=resolver, agents=agents, widget_configs=configs, curated=curated),
    )
    scrubber = app[app_keys.index_scrubber_key] = MessageIndexScrubber(db)
    yield
    await scrubber.close()
    upkeep.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await upkeep
    await db.close()  # commits queued batched writes first


async def _storage(app: web.Application) -> AsyncIterator[None]:
    """The file storage `[storage]` names, checked before anything uses it: a store that
    cannot be reached, or refuses the credentials, stops the start with the reason."""
    settings = app[app_keys.settings_key]
    files = open_store(settings, app[app_keys.db_key])
    try:
        await files.check()
    except BaseException:
        await files.close()
        raise
    log.info("files are kept in %s", files.label)
    app[app_keys.files_key] = files
    adopting = None
    local = settings.server.data_dir / "files"
    if files.kind != "local" and local.is_dir():
        # Files an earlier version (or this instance before [storage] url) kept on disk.
        adopting = asyncio.create_task(
            adopt_local_files(LocalStore(local), files), name="adopt-local-files"
        )
    yield
    if adopting is not None:
        adopting.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await adopting
    await files.close()


async def _jobs(app: web.Application) -> AsyncIterator[None]:
    """The in-process scheduler; jobs are registered by the steps that own them. Periodic
    jobs wait while the database is away (db/postgres.py's `reachable`)."""
    db = app[app_keys.db_key]
    jobs = Jobs(ready=lambda: db.reachable)
    jobs.start()
    app[app_keys.jobs_key] = jobs
    yield
    await jobs.stop()


async def _tools(app: web.Application) -> AsyncIterator[None]:
    """The secret box, the guarded outbound and MCP clients and the tool runner built on
    them."""
    settings = app[app_keys.settings_key]
    box = SecretBox.from_settings(settings.server.secret_key, settings.server.data_dir)
    outbound = OutboundClient(
        allow_private=settings.outbound.allow_private,
        resolver=app.get(app_keys.outbound_resolver_key),
    )
    await outbound.open()
    mcp = McpClient(
        allow_private=settings.outbound.allow_private,
        resolver=app.get(app_keys.outbound_resolver_key),
        timeout=settings.tools.mcp_timeout_seconds,
        connect_timeout=settings.tools.mcp_connect_timeout_seconds,
        max_response_bytes=settings.tools.mcp_max_response_bytes,
        max_listed_tools=settings.tools.mcp_max_listed_tools,
        session_idle_seconds=settings.tools.mcp_session_idle_seconds,
        max_sessions=settings.tools.mcp_max_sessions,
    )
    app[app_keys.secret_box_key] = box
    app[app_keys.outbound_key] = outbound
    app[app_keys.mcp_client_key] = mcp
    app[app_keys.tool_runner_key] = ToolRunner(app[app_keys.db_key], box, outbound, mcp)
    yield
    await mcp.close()
    await outbound.close()


async def _event_writer(app: web.Application) -> AsyncIterator[None]:
    """The trigger-event writer; at shutdown it counts everything still queued."""
    writer = EventWriter(app[app_keys.db_key])
    writer.start()
    app[app_keys.event_writer_key] = writer
    yield
    await writer.close()


async def _chat(app: web.Application) -> AsyncIterator[None]:
    """The providers' shared ClientSession, the registries of open chat and event streams
    and what the streaming handlers run on."""
    settings = app[app_keys.settings_key]
    # Provider URLs are set by the operator (Ollama on loopback is normal), so model calls
    # use their own session, not the guarded outbound client of tools and webhooks.
    session = aiohttp.ClientSession(
        connector=aiohttp.TCPConnector(limit=0, limit_per_host=0),
        json_serialize=lambda value: orjson.dumps(value).decode(),
    )
    app[app_keys.providers_key] = Providers(settings, session)
    chat_streams = app[app_keys.chat_streams_key] = OpenStreams()
    event_streams = app[app_keys.event_streams_key] = EventStreams()
    app[app_keys.streaming_key] = StreamingDeps(
        chat_streams=chat_streams,
        event_streams=event_streams,
        limiter=app[app_keys.limiter_key],
        open_streams=app[app_keys.metrics_key].open_streams,
        chat=settings.chat,
        handoff=settings.handoff,
        public_chat_per_minute=settings.ratelimit.public_chat_per_minute,
        verify_end_user=functools.partial(
            identity.verify_end_user,
            app[app_keys.db_key],
            app[app_keys.secret_box_key],
            max_token_lifetime_hours=settings.identity.max_token_lifetime_hours,
        ),
    )
    yield
    await session.close()


async def _close_streams(app: web.Application) -> None:
    """on_shutdown: end every open chat and event stream cleanly (before the resources
    close)."""
    for key in (app_keys.chat_streams_key, app_keys.event_streams_key):
        streams = app.get(key)
        if streams is not None:
            await streams.close_all()


async def _stop_jobs(app: web.Application) -> None:
    """on_shutdown: no job starts or goes on while the resources close (a run in flight is
    cancelled, which is not an error)."""
    jobs = app.get(app_keys.jobs_key)
    if jobs is not None:
        await jobs.stop()


async def _handoff(app: web.Application) -> AsyncIterator[None]:
    """Live conversation events (followed through the database's announcements) and the
    handoff notifications."""
    settings = app[app_keys.settings_key]
    db = app[app_keys.db_key]
    live = app[app_keys.live_events_key] = LiveEvents(db)
    notifier = app[app_keys.handoff_notifier_key] = Notifier(
        db,
        app[app_keys.mailer_key],
        app[app_keys.outbound_key],
        app[app_keys.secret_box_key],
        NotifySettings(
            settings.server.public_url,
            settings.handoff.notify_retries,
            settings.handoff.notify_retry_seconds,
        ),
    )
    yield
    await notifier.close()
    live.close()


async def _knowledge(app: web.Application) -> AsyncIterator[None]:
    """The indexer (with embeddings when configured), resuming what a stop interrupted."""
    db = app[app_keys.db_key]
    settings = app[app_keys.settings_key]
    semantic = None
    embedder = make_embedder(settings, app[app_keys.providers_key].session)
    if embedder is not None:
        vectors = VectorIndex(db, embedder.model_id, path=settings.knowledge.vector_search)
        await vectors.open()
        semantic = Semantic(embedder, vectors)
        changes.follow(db, changes.Caches(vector_index=vectors))
    background_bytes = int(settings.knowledge.background_index_kb * 1024)
    indexer = Indexer(db, semantic, background_bytes=background_bytes)
    app[app_keys.indexer_key] = indexer
    resumed = await indexer.resume()
    if resumed:
        log.info("resumed indexing of %d document(s)", resumed)
    yield
    await indexer.close()
    if semantic is not None:
        await semantic.vectors.close()


async def _team(app: web.Application) -> AsyncIterator[None]:
    """The mailer, the OAuth HTTP client, and the invitation and session sweeps."""
    settings = app[app_keys.settings_key]
    db = app[app_keys.db_key]
    mailer = Mailer(settings.smtp, db, app[app_keys.secret_box_key])
    app[app_keys.mailer_key] = mailer
    # Redirects are not followed: a token endpoint that redirects is misconfigured.
    http = aiohttp.ClientSession(timeout=oauth.HTTP_TIMEOUT)
    app[app_keys.oauth_http_key] = http
    warm_up()
    jobs = app[app_keys.jobs_key]
    sweep = settings.auth.invitation_sweep_seconds
    expire = once_for_all(db, EXPIRE_INVITATIONS_JOB, sweep, membership.expire_invitations)
    jobs.every(EXPIRE_INVITATIONS_JOB, sweep, expire, db)
    prune = once_for_all(db, PRUNE_SESSIONS_JOB, PRUNE_SESSIONS_SECONDS, sessions.prune)
    jobs.every(PRUNE_SESSIONS_JOB, PRUNE_SESSIONS_SECONDS, prune, db)
    yield
    jobs.cancel(EXPIRE_INVITATIONS_JOB)
    jobs.cancel(PRUNE_SESSIONS_JOB)
    await mailer.close()
    await http.close()


async def _delivery(app: web.Application) -> AsyncIterator[None]:
    """The delivery outbox worker (form deliveries and event webhooks), its depth on
    /metrics, the event emitter, the hourly file sweep and the retention purge."""
    settings = app[app_keys.settings_key]
    metrics = app[app_keys.metrics_key]
    db = app[app_keys.db_key]
    box = app[app_keys.secret_box_key]
    files = app[app_keys.files_key]
    jobs = app[app_keys.jobs_key]
    deliverer = Deliverer(
        db,
        settings.webhooks,
        jobs=jobs,
        on_attempt=lambda kind, outcome: metrics.deliveries.labels(kind, outcome).inc(),
    )
    poster = Poster(app[app_keys.outbound_key], settings.webhooks.timeout_seconds)
    forms = FormDeliveries(db, poster, box, files, lambda: app.get(app_keys.mailer_key))
    app[app_keys.form_deliveries_key] = deliverer.serve(forms)
    deliverer.serve(EventDeliveries(db, box, poster))  # claimed after the forms' rows
    window = settings.channels.whatsapp_window_seconds
    # then the channels' replies (e-mail ones through the instance's SMTP)
    mailer = lambda: app.get(app_keys.mailer_key)  # noqa: E731
    deliverer.serve(ChannelReplies(db, box, poster, window, mailer))
    app[app_keys.deliverer_key] = deliverer
    emitter = app[app_keys.emitter_key] = Emitter(db, deliverer.wake)
    changes.follow(db, changes.Caches(emitter=emitter))

    async def outbox_depth() -> None:
        metrics.outbox_depth.set(await deliverer.pending_count())

    metrics.add_collector(outbox_depth)
    await deliverer.start()  # drops stale leases, reschedules what is pending
    if db.shared:  # rows that came due in another process (one that stopped)
        jobs.every(DELIVERY_POLL_JOB, settings.webhooks.poll_seconds, deliverer.poll)
    sweep_once = once_for_all(db, SWEEP_FILES_JOB, SWEEP_INTERVAL_SECONDS, sweep_files)
    jobs.every(SWEEP_FILES_JOB, SWEEP_INTERVAL_SECONDS, sweep_once, db, files, run_now=True)
    sweep = settings.privacy.retention_sweep_seconds
    retention = once_for_all(db, RETENTION_JOB, sweep, purge_expired)
    jobs.every(RETENTION_JOB, sweep, retention, db, files, settings.webhooks.delivery_log_days)
    yield
    jobs.cancel(RETENTION_JOB)
    jobs.cancel(SWEEP_FILES_JOB)
    if db.shared:
        jobs.cancel(DELIVERY_POLL_JOB)
    await deliverer.close()


def _usage(app: web.Application) -> tuple[UsageMeter, BudgetMail]:
    """The prices (those of models no provider serves are ignored, with a warning), the
    usage service, the meter every turn counts its answer with and the budgets' mail."""
    settings, db = app[app_keys.settings_key], app[app_keys.db_key]
    prices = PriceBook(settings)
    for warning in prices.warnings():
        log.warning(warning)
    app[app_keys.usage_key] = UsageService(db, prices, app[app_keys.agent_cache_key])
    mail = BudgetMail(db, app[app_keys.mailer_key], settings.server.public_url)
    return UsageMeter(prices, mail), mail


def _chat_features(app: web.Application, meter: UsageMeter) -> None:
    """The chat turns every door (/chat, MCP `ask`, channels) runs through, and the
    conversations, handoff, curated answers and MCP server services built on them."""
    settings = app[app_keys.settings_key]
    db, agents = app[app_keys.db_key], app[app_keys.agent_cache_key]
    emitter, curated = app[app_keys.emitter_key], app[app_keys.curated_answers_key]
    semantic = app[app_keys.indexer_key].semantic
    log = ConversationLog(db, emitter)  # every message and status change goes through it
    handoff = app[app_keys.handoff_key] = HandoffService(
        HandoffDeps(
            log,
            agents,
            app[app_keys.handoff_notifier_key],
            settings.handoff.keepalive_seconds,
            ReplyQueue(app[app_keys.deliverer_key].wake),  # a member's replies on channels
        ),
        app[app_keys.live_events_key],
    )
    turns = app[app_keys.chat_turns_key] = ChatTurns(
        TurnDeps(
            log=log,
            agents=agents,
            providers=app[app_keys.providers_key],
            sources=TurnSources(curated=curated, semantic=semantic),
            tools=TurnTools(
                app[app_keys.tool_runner_key],
                settings.chat.keepalive_seconds,
                ConversationForms(app[app_keys.forms_key]),  # forms on channels
                _approval_gate(app),
            ),
            usage=meter,
        ),
        handoff.request_for_turn,
    )
    _approvals(app, turns)
    app[app_keys.conversations_key] = ConversationsService(db, emitter, app[app_keys.files_key])
    app[app_keys.desk_key] = DeskService(db)
    app[app_keys.answers_key] = AnswersService(db, curated, settings.answers.max_per_agent)
    runner = app[app_keys.eval_runner_key] = EvalRunner(
        Answering(
            db,
            app[app_keys.providers_key],
            curated,
            semantic,
            settings.knowledge.top_k,
            meter,
            emitter,
        ),
        settings.evals,
    )
    app[app_keys.evals_key] = EvalsService(EvalsDeps(db, agents, runner, curated, settings))
    app[app_keys.mcp_server_key] = McpServerService(
        AgentServerDeps(
            db=db,
            turns=turns,
            semantic=semantic,
            top_k=settings.knowledge.top_k,
            turn_seconds=settings.chat.max_stream_seconds,
        ),
        agents,
    )


def _approval_gate(app: web.Application) -> Gate:
    """The gate of tools a person approves each call of first (for the chat turns)."""
    db, settings = app[app_keys.db_key], app[app_keys.settings_key]
    signals = ApprovalSignals(db)
    deps = GateDeps(db, app[app_keys.tool_runner_key], signals, settings.approvals)
    app[app_keys.approval_gate_key] = gate = Gate(deps)
    return gate


def _approvals(app: web.Application, turns: ChatTurns) -> None:
    """The approvals service, and the resumer of paused turns nobody waits for."""
    gate, settings = app[app_keys.approval_gate_key], app[app_keys.settings_key]
    replies = ReplyQueue(app[app_keys.deliverer_key].wake)  # a channel's answer, once decided
    resumer = Resumer(ResumeDeps(gate, turns, replies, settings.approvals))
    app[app_keys.approval_resumer_key] = resumer
    app[app_keys.approvals_key] = ApprovalsService(
        ApprovalsDeps(app[app_keys.db_key], gate, resumer, gate.signals)
    )


def _forms_and_webhooks(app: web.Application) -> None:
    """The forms service and the event webhooks service (for `_features`)."""
    settings = app[app_keys.settings_key]
    db = app[app_keys.db_key]
    emitter = app[app_keys.emitter_key]
    app[app_keys.forms_key] = FormsService(
        db,
        app[app_keys.form_deliveries_key],
        emitter,
        FormsConfig(
            file_quota_mb=settings.forms.file_quota_mb_per_agent,
            submits_per_minute=settings.ratelimit.form_submits_per_minute,
            events_per_minute=settings.ratelimit.trigger_events_per_minute,
        ),
        app[app_keys.files_key],
    )
    app[app_keys.webhooks_key] = WebhooksService(
        db,
        app[app_keys.secret_box_key],
        emitter,
        WebhooksConfig(
            max_per_team=settings.webhooks.max_per_team,
            allow_private=settings.outbound.allow_private,
        ),
    )


async def _features(app: web.Application) -> AsyncIterator[None]:
    """One service object per feature, built with its collaborators; handlers call it."""
    # -- forms, delivery, event webhooks (before chat: a channel's turn submits forms)
    _forms_and_webhooks(app)

    # -- usage and budgets; chat, conversations, handoff, answers, MCP server
    meter, budget_mail = _usage(app)
    _chat_features(app, meter)

    # -- agents, tools, knowledge, triggers, widget, exports, privacy, analytics, audit, secrets
    _catalog_services(app)

    # -- channels (on the chat turns and the outbox)
    channels = _channels(app)
    poller = app[app_keys.email_poller_key]
    resumed = await channels.resume()
    if resumed:
        log.info("answering %d channel message(s) received before the last stop", resumed)
    jobs = app[app_keys.jobs_key]
    if app[app_keys.db_key].shared:  # what another process received, then stopped before
        poll = app[app_keys.settings_key].webhooks.poll_seconds
        jobs.every(CHANNEL_RESUME_JOB, poll, channels.resume)
    check = app[app_keys.settings_key].channels.email_check_seconds
    read_mail = once_for_all(app[app_keys.db_key], EMAIL_POLL_JOB, check, poller.poll)
    jobs.every(EMAIL_POLL_JOB, check, read_mail)
    db, files = app[app_keys.db_key], app[app_keys.files_key]
    mail_sweep = once_for_all(db, MAIL_FILES_JOB, SWEEP_INTERVAL_SECONDS, remove_orphan_folders)
    jobs.every(MAIL_FILES_JOB, SWEEP_INTERVAL_SECONDS, mail_sweep, db, files, run_now=True)

    # -- evaluation runs: those queued or left by a stopped process, now and then
    runner = app[app_keys.eval_runner_key]
    jobs.every(EVAL_SWEEP_JOB, app[app_keys.settings_key].evals.sweep_seconds, runner.sweep)

    # -- sources: syncs due, queued or left by a stopped process (now, then now and then)
    syncer = app[app_keys.source_syncer_key]
    sweep_seconds = app[app_keys.settings_key].sources.sweep_seconds
    jobs.every(SOURCE_SWEEP_JOB, sweep_seconds, syncer.sweep, run_now=True)

    # -- approvals: calls whose time ran out, and decided turns nobody waits for (now too)
    resumer = app[app_keys.approval_resumer_key]
    approvals_sweep = app[app_keys.settings_key].approvals.sweep_seconds
    jobs.every(APPROVALS_SWEEP_JOB, approvals_sweep, resumer.sweep, run_now=True)

    # -- team, sign-in, sessions, API keys, limits
    _team_services(app)

    yield
    jobs.cancel(APPROVALS_SWEEP_JOB)
    await resumer.close()  # turns taken up are left to their leases, taken up elsewhere
    await app[app_keys.approval_gate_key].close()
    jobs.cancel(SOURCE_SWEEP_JOB)
    await syncer.close()  # syncs under way are left to their leases, resumed elsewhere
    jobs.cancel(EVAL_SWEEP_JOB)
    await runner.close()  # runs under way are left to their leases, resumed elsewhere
    jobs.cancel(CHANNEL_RESUME_JOB)
    jobs.cancel(EMAIL_POLL_JOB)
    jobs.cancel(MAIL_FILES_JOB)
    await channels.close()  # turns under way end before the outbox and database close
    await budget_mail.drain()


def _channels(app: web.Application) -> ChannelsService:
    """The channels service: its inbox answers through the chat turns, replies go out
    through the outbox."""
    settings = app[app_keys.settings_key]
    db = app[app_keys.db_key]
    inbox = ChannelInbox(
        db,
        app[app_keys.chat_turns_key],
        ReplyQueue(app[app_keys.deliverer_key].wake),
        InboxConfig(
            turn_seconds=settings.chat.max_stream_seconds,
            resume_after_seconds=settings.channels.resume_after_seconds,
            files=app[app_keys.files_key],
        ),
    )
    channels = app[app_keys.channels_key] = ChannelsService(
        ChannelDeps(db, app[app_keys.secret_box_key], app[app_keys.agent_cache_key]),
        inbox,
        PlatformApis(
            TelegramApi(app[app_keys.outbound_key], settings.webhooks.timeout_seconds),
            SlackApi(app[app_keys.outbound_key], settings.webhooks.timeout_seconds),
        ),
        ChannelsConfig(
            public_url=settings.server.public_url,
            allow_private=settings.outbound.allow_private,
            max_per_agent=settings.channels.max_per_agent,
            messages_per_minute=settings.ratelimit.channel_messages_per_minute,
            user_messages_per_minute=settings.ratelimit.channel_user_messages_per_minute,
        ),
        ChannelProbe(
            app[app_keys.outbound_key],
            settings.webhooks.timeout_seconds,
            allow_private=settings.outbound.allow_private,
            smtp_ready=bool(settings.smtp.host),
        ),
    )
    changes.follow(db, changes.Caches(channels=channels.cache))
    app[app_keys.email_poller_key] = EmailPoller(
        db,
        app[app_keys.secret_box_key],
        inbox,
        app[app_keys.limiter_key],
        PollConfig(
            min_poll_seconds=settings.channels.email_min_poll_seconds,
            timeout_seconds=settings.webhooks.timeout_seconds,
            allow_private=settings.outbound.allow_private,
            per_channel=settings.ratelimit.channel_messages_per_minute,
            per_user=settings.ratelimit.channel_user_messages_per_minute,
            files=app[app_keys.files_key],
        ),
    )
    return channels


def _team_services(app: web.Application) -> None:
    """The team, sign-in, API key and health services, and what every request needs."""
    settings = app[app_keys.settings_key]
    db = app[app_keys.db_key]
    mailer = app[app_keys.mailer_key]
    box, files = app[app_keys.secret_box_key], app[app_keys.files_key]
    app[app_keys.team_key] = TeamService(db, mailer, settings, box, files)
    app[app_keys.sign_in_key] = SignInService(db, settings, mailer, app[app_keys.oauth_http_key])
    app[app_keys.api_keys_key] = ApiKeysService(db)
    app[app_keys.sso_key] = SsoService(
        db, settings, app[app_keys.secret_box_key], app[app_keys.outbound_key]
    )
    app[app_keys.scim_key] = ScimService(db, settings)
    health = app[app_keys.health_key] = HealthService(db)
    app[app_keys.request_deps_key] = RequestDeps(
        settings=settings,
        limiter=app[app_keys.limiter_key],
        keys=app[app_keys.key_resolver_key],
        metrics=app[app_keys.metrics_key],
        body_slots=app[app_keys.body_slots_key],
        health=health,
    )


def _sources(app: web.Application) -> SourcesService:
    """The sources service and the syncer of sources (for `_catalog_services`)."""
    settings = app[app_keys.settings_key]
    db, indexer = app[app_keys.db_key], app[app_keys.indexer_key]
    limits = FetchLimits(
        max_bytes=int(settings.sources.max_page_mb * 2**20),
        timeout=settings.sources.fetch_timeout_seconds,
        host_concurrency=settings.sources.host_concurrency,
        host_delay=settings.sources.host_delay_seconds,
    )
    tools = SyncTools(
        db,
        PageFetcher(app[app_keys.outbound_key], limits),
        PageWriter(db, indexer),
        settings.sources.max_crawl_delay_seconds,
    )
    syncer = app[app_keys.source_syncer_key] = SourceSyncer(SyncerDeps(tools, settings.sources))
    return SourcesService(
        SourcesDeps(db, syncer, settings, semantic_on=indexer.semantic is not None)
    )


def _catalog_services(app: web.Application) -> None:
    """The services of what a team sets up: agents, tools and secrets, knowledge,
    triggers, the widget, exports, end users' privacy, analytics and the audit log."""
    settings = app[app_keys.settings_key]
    db = app[app_keys.db_key]
    box = app[app_keys.secret_box_key]
    agents = app[app_keys.agent_cache_key]
    app[app_keys.agents_key] = AgentsService(db, agents, box, settings, app[app_keys.evals_key])
    app[app_keys.tools_key] = ToolsService(db, box, app[app_keys.mcp_client_key], settings)
    app[app_keys.secrets_key] = SecretsService(db, box)
    app[app_keys.knowledge_key] = KnowledgeService(
        KnowledgeDeps(
            db, app[app_keys.indexer_key], app[app_keys.outbound_key], app[app_keys.files_key]
        ),
        settings.knowledge,
        _sources(app),
    )
    app[app_keys.triggers_key] = TriggersService(
        db, app[app_keys.event_writer_key], settings.ratelimit.trigger_events_per_minute
    )
    configs = app[app_keys.widget_config_cache_key]
    app[app_keys.widget_key] = WidgetService(db, agents, configs, settings.server.public_url)
    app[app_keys.analytics_key] = AnalyticsService(db)
    app[app_keys.audit_key] = AuditService(db)
    app[app_keys.exports_key] = ExportsService(
        db, app[app_keys.limiter_key], settings.exports, app[app_keys.usage_key].currency
    )
    app[app_keys.privacy_key] = PrivacyService(
        db, app[app_keys.mailer_key], app[app_keys.index_scrubber_key], app[app_keys.files_key]
    )
